"""Rendering a placed context: the sections, the chat messages in their order (system → evidence →
task state → memories → episodes → summary → recent messages → new message), and their tokens."""
from conversations.tokens import REPLY_PRIMING_TOKENS, count_message_tokens
from memory.context.evidence import evidence_tokens, render_evidence
from memory.context.placement import Candidates, Placement
from memory.context.request import Inputs
from memory.context.sections import EPISODE_HEADER, MEMORY_HEADER, TASK_HEADER, Section, lines_section


def render(c: Candidates, p: Placement, inputs: Inputs) -> tuple[list[Section], list[dict], int]:
    """The sections, the messages, and their total tokens (reply priming included)."""
    parts = p.parts
    evidence = Section("evidence", text=render_evidence(c.evidence, parts["evidence"].taken),
                       included=[c.evidence.items[i].id for i in sorted(parts["evidence"].taken)],
                       dropped=[e.id for i, e in enumerate(c.evidence.items) if i not in set(parts["evidence"].taken)])
    evidence.truncated = [i for i in c.evidence.truncated if i in evidence.included]
    task = lines_section("task_state", TASK_HEADER, [c.tasks], [parts["task_state"]])
    memories = lines_section("memories", MEMORY_HEADER, [c.preferences, c.memories], [parts["preferences"], parts["memories"]])
    episodes = lines_section("episodes", EPISODE_HEADER, [c.episodes], [parts["episodes"]])
    summary = p.summary or Section("summary")
    window = p.plan.result(p.stream.cursor)
    recent = Section("recent", tokens=window.tokens, included=[m.id for m in window.included],
                     # Tool results whose call is not in the window's input are never sent: dropped too.
                     dropped=sorted({m.id for m in p.summarised + window.dropped} | set(window.orphaned_ids)),
                     truncated=window.truncated_ids)
    message = Section("message", text=inputs.message["content"], tokens=inputs.message_tokens,
                      truncated=["message"] if inputs.truncated else [])
    system = Section("system", text=inputs.system["content"] if inputs.system else "", tokens=inputs.system_tokens)
    out = [inputs.system] if inputs.system else []
    for section in (evidence, task, memories, episodes, summary):
        if section.text:
            out.append({"role": "system", "content": section.text})
            # The evidence message is priced from its passages' counts: its text is new on every call.
            section.tokens = (evidence_tokens(c.evidence, parts["evidence"].taken) if section is evidence
                              else count_message_tokens(out[-1]))
    out += [m.to_openai() for m in window.included] + [inputs.message]
    # Every message is counted once: the window's units were priced as these very messages.
    total = (REPLY_PRIMING_TOKENS + system.tokens + window.tokens + message.tokens
             + sum(s.tokens for s in (evidence, task, memories, episodes, summary) if s.text))
    return [system, evidence, task, memories, episodes, summary, recent, message], out, total
