"""Context assembly (DESIGN §7): the token-budgeted input for the agent's next turn.

Messages, in this order ("lost in the middle" puts rules and evidence first and the live turn last):
system → evidence [n] → task state → long-term memories → past episodes → summary → recent messages
→ new message. Who gets room when the budget is short is a separate order, highest first:
system prompt and new message (never cut silently) → evidence → task state → standing preferences →
recent messages → other memories → episodes → summary → older history (memory/context_budget.py).
Every section is counted with tiktoken; the total budget is a hard cap.
"""
import json
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings

from config.plain_reads import plain_instances
from conversations.models import Conversation, TaskState
from conversations.summaries import summary_covering
from conversations.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    REPLY_PRIMING_TOKENS,
    count_message_tokens,
    count_tokens,
    truncate_to_tokens,
)
from conversations.window import WindowMessage, WindowPlan
from conversations.window_cache import window_messages
from memory.cache import standing_memories
from memory.choices import EXTRACTED_KINDS, MemoryKind, MemoryScope
from memory.context_budget import Part, Stream, allocate
from memory.context_evidence import (
    EVIDENCE_HEADER,
    Evidence,
    EvidenceUnits,
    evidence_tokens,
    evidence_units,
    render_evidence,
)
from memory.selectors.query_vectors import start_query_vectors
from memory.selectors.recall_pipeline import RecallItem, RecallQuery, recall
from memory.vectors import active_embedder
from tenancy.models import Org

logger = logging.getLogger(__name__)

KIND_TITLES = {MemoryKind.PREFERENCE: "Preferences", MemoryKind.FACT: "Facts", MemoryKind.EVENT: "Events",
               MemoryKind.CONTEXT: "Context", MemoryKind.SUGGESTION: "Assistant suggestions (not confirmed)"}
KIND_ORDER = EXTRACTED_KINDS
TASK_HEADER = "Task state (authoritative, structured):"
MEMORY_HEADER = "Long-term memory about the user:"
EPISODE_HEADER = "Relevant past messages (what was said then; may be outdated):"
# Priority order of the shared parts, highest first. "history" is the window's older part: it has
# no share of its own (only what is left), and recent + history are one contiguous run of messages.
PRIORITY = ["evidence", "task_state", "preferences", "recent", "memories", "episodes", "summary", "history"]


class ContextBudgetError(Exception):
    """The request cannot be served within its budget (the view answers 400 naming `field`)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass
class ContextRequest:
    org: Org
    user_id: str
    conversation: Conversation
    message: str
    budget: int | None = None
    system: str = ""
    tools: list[dict] = field(default_factory=list)
    at: datetime | None = None
    k: int | None = None
    recent_only: bool = False
    section_budgets: dict[str, float] = field(default_factory=dict)  # fractions of the room after system + message
    evidence: list[Evidence] = field(default_factory=list)


@dataclass
class Section:
    name: str
    text: str = ""
    tokens: int = 0
    included: list = field(default_factory=list)
    dropped: list = field(default_factory=list)
    truncated: list = field(default_factory=list)


@dataclass
class ContextResult:
    sections: list[Section]
    messages: list[dict]
    total_tokens: int
    budget: int
    recall_degraded: bool = False
    message_truncated: bool = False
    timings_ms: dict[str, float] = field(default_factory=dict)


@dataclass
class _Lines:
    """A rendered section's candidate lines (best first) and what one line costs."""
    keys: list = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    costs: list[int] = field(default_factory=list)

    def add(self, key, line: str) -> None:
        self.keys.append(key)
        self.lines.append(line)
        self.costs.append(count_tokens(line) + 1)  # +1: the newline before it


def _frame(header: str) -> int:
    return MESSAGE_OVERHEAD_TOKENS + count_tokens(header)


def _date(value) -> str:
    return value.strftime("%Y-%m-%d") if value else "?"


def _source_label(item: RecallItem) -> str:
    refs = [s["ref"] or f"msg {s['message_id']}" for s in item.sources if s["ref"] or s["message_id"]]
    return ", ".join(refs[:3]) if refs else f"memory {item.memory.id}"


# --------------------------------------------------------------------------- candidate lines

def _task_lines(conversation: Conversation) -> _Lines:
    lines = _Lines()
    # A plain statement (config/plain_reads.py): every context call reads these few rows, and compiling
    # the ORM query cost more than the read.
    states = plain_instances(TaskState, None, conversation=conversation.id)
    for t in sorted(states, key=lambda t: (-t.updated_at.timestamp(), t.key)):  # newest first, then by key
        lines.add(t.key, f"- {t.key} [{t.kind}] state={t.state} data={json.dumps(t.data, ensure_ascii=False, sort_keys=True)}"
                         f" (v{t.version})")
    return lines


def _memory_sections(items: list[RecallItem]) -> tuple[_Lines, _Lines, _Lines]:
    """(standing preferences, other standing memories, episodes): one memories message holds the
    first two, preferences first; they differ in priority only. A history item (a newer recalled item
    on its subject replaces it) stands with the dated past messages, never in the memory sections."""
    standing = [i for i in items if i.memory.kind != MemoryKind.EPISODE and i.presented_as != "history"]
    episodes = [i for i in items if i.memory.kind == MemoryKind.EPISODE or i.presented_as == "history"]
    preferences, others = _Lines(), _Lines()
    for kind in KIND_ORDER:
        for item in (i for i in standing if i.memory.kind == kind):
            when = _date(item.memory.occurred_at or item.memory.created_at)
            (preferences if kind == MemoryKind.PREFERENCE else others).add(
                item.memory.id, f"- [{KIND_TITLES[kind]}] {item.memory.content} "
                                f"({when}; source: {_source_label(item)}; id {item.memory.id})")
    epi = _Lines()
    for i in episodes:
        if i.presented_as == "history":  # dated when it became known; the newer item is what holds now
            epi.add(i.memory.id, f"- {_date(i.memory.created_at)} (earlier, since changed) {i.memory.content} "
                                 f"(source: {_source_label(i)})")
            continue
        epi.add(i.memory.id, f"- {_date(i.memory.occurred_at)} {'user' if i.memory.assertion == 'user_stated' else 'assistant'}: "
                             f"{i.memory.content} (source: {_source_label(i)})")
    return preferences, others, epi


def _recall_items(req: ContextRequest, exclude_message_ids: set[int],
                  pending_vectors=None) -> tuple[list[RecallItem], bool]:
    if pending_vectors is None:
        return [], False
    # Standing preferences apply to every turn, relevant-looking or not: they are always
    # candidates (the Redis hash says which exist), and still pass the same back-check.
    preferences = {i for i, m in standing_memories(req.org.id, req.user_id).items()
                   if m["kind"] == MemoryKind.PREFERENCE and m["scope"] == MemoryScope.USER}
    k = (req.k or settings.CONTEXT_RECALL_K) + min(len(preferences), settings.CONTEXT_MAX_PREFERENCES)
    result = recall(RecallQuery(org=req.org, user_id=req.user_id, query=req.message, k=k, at=req.at,
                                conversation_id=req.conversation.id, exclude_message_ids=exclude_message_ids,
                                include_ids=set(sorted(preferences)[-settings.CONTEXT_MAX_PREFERENCES:]),
                                pending_vectors=pending_vectors))
    return result.items, result.degraded


# --------------------------------------------------------------------------- fixed cost

@dataclass
class _Fixed:
    system: dict | None
    message: dict
    truncated: bool
    tokens: int  # both messages and the reply priming


def _fixed(req: ContextRequest, budget: int) -> _Fixed:
    """System prompt and new message: never cut silently. A system prompt that leaves no room for
    the message frame is refused; a message that does not fit beside it is cut and flagged."""
    text = req.system or ""
    if req.tools:
        text += "\nTools:\n" + json.dumps(req.tools, ensure_ascii=False, separators=(",", ":"))
    system = {"role": "system", "content": text} if text else None
    system_tokens = count_message_tokens(system) if system else 0
    room = budget - REPLY_PRIMING_TOKENS - system_tokens - MESSAGE_OVERHEAD_TOKENS
    if room < 0:
        what = "The system prompt and tool schemas take" if req.tools else "The system prompt takes"
        raise ContextBudgetError("system", f"{what} {system_tokens} tokens; the budget is {budget}.")
    content = req.message
    truncated = count_tokens(content) > room
    if truncated:
        content = truncate_to_tokens(content, room)
    message = {"role": "user", "content": content}
    tokens = REPLY_PRIMING_TOKENS + system_tokens + count_message_tokens(message)
    if tokens > budget:  # a re-tokenised cut can be a token longer: shrink until it fits
        content = truncate_to_tokens(content, room - (tokens - budget))
        message, truncated = {"role": "user", "content": content}, True
        tokens = REPLY_PRIMING_TOKENS + system_tokens + count_message_tokens(message)
    return _Fixed(system=system, message=message, truncated=truncated, tokens=tokens)


def _shares(req: ContextRequest, room: int) -> dict[str, int]:
    fractions = {**settings.CONTEXT_SECTION_BUDGETS, **req.section_budgets}
    shares = {name: int(room * float(fractions.get(name, 0.0))) for name in PRIORITY if name != "history"}
    shares["history"] = max(0, room - sum(shares.values()))
    return shares


# --------------------------------------------------------------------------- placement

@dataclass
class _Candidates:
    evidence: EvidenceUnits
    tasks: _Lines
    preferences: _Lines
    memories: _Lines
    episodes: _Lines


@dataclass
class _Placement:
    parts: dict[str, Part]
    plan: WindowPlan
    stream: Stream
    summary: Section | None = None
    summarised: list[WindowMessage] = field(default_factory=list)  # messages the summary stands for


def _parts(c: _Candidates, shares: dict[str, int], plan: WindowPlan, summary_cost: int) -> tuple[dict[str, Part], Stream]:
    stream = Stream(len(plan), plan.cost)
    memory_frame = _frame(MEMORY_HEADER)
    parts = [
        Part("evidence", shares["evidence"], costs=c.evidence.costs, frame=_frame(EVIDENCE_HEADER)),
        Part("task_state", shares["task_state"], costs=c.tasks.costs, frame=_frame(TASK_HEADER)),
        Part("preferences", shares["preferences"], costs=c.preferences.costs, frame=memory_frame, frame_group="memories"),
        Part("recent", shares["recent"], stream=stream),
        Part("memories", shares["memories"], costs=c.memories.costs, frame=memory_frame, frame_group="memories"),
        Part("episodes", shares["episodes"], costs=c.episodes.costs, frame=_frame(EPISODE_HEADER)),
        # Made to fit its share, so it never takes more: extra room is better spent on verbatim history.
        Part("summary", shares["summary"], costs=[summary_cost] if summary_cost else [], extendable=False),
        Part("history", shares["history"], stream=stream),
    ]
    return {p.name: p for p in parts}, stream


def _place(req: ContextRequest, c: _Candidates, shares: dict[str, int], room: int, plan: WindowPlan) -> _Placement:
    """Allocate without a summary; when older messages are then dropped, reserve the summary's share,
    summarise what falls out, and allocate again over the messages the summary does not cover."""
    messages = plan.messages
    parts, stream = _parts(c, shares, plan, 0)
    allocate(list(parts.values()), room)
    unsummarised = _Placement(parts, plan, stream)
    if stream.cursor == len(plan) or shares["summary"] <= 0:
        return unsummarised
    trial, trial_stream = _parts(c, shares, plan, shares["summary"])
    allocate(list(trial.values()), room)
    last_dropped = plan.newest_dropped_seq(trial_stream.cursor)
    header_room = shares["summary"] - _frame("Summary of the earlier conversation (messages 1-000000):")
    if not last_dropped or header_room <= 0:
        return unsummarised
    # The summary rolls a few messages ahead so later turns reuse it, but never into the messages
    # recent's own share holds: recent messages outrank the summary.
    protected = plan.newest(trial["recent"].reserved)
    row, reused = summary_covering(conversation=req.conversation, last_dropped_seq=last_dropped, budget=header_room,
                                   before_seq=protected[0].seq if protected else None)
    if row is None or not row.text:
        return unsummarised
    summary = Section("summary", text=f"Summary of the earlier conversation (messages 1-{row.covers_until_seq}):\n{row.text}",
                      included=[{"summary_id": row.id, "covers_until_seq": row.covers_until_seq, "reused": reused}])
    later = plan.after(row.covers_until_seq)
    parts, stream = _parts(c, shares, later, count_message_tokens({"role": "system", "content": summary.text}))
    allocate(list(parts.values()), room)
    if not parts["summary"].taken:  # it was made to fit its share, so this should not happen
        return unsummarised
    return _Placement(parts, later, stream, summary=summary,
                      summarised=[m for m in messages if m.seq <= row.covers_until_seq])


# --------------------------------------------------------------------------- rendering

def _lines_section(name: str, header: str, lines: list[_Lines], parts: list[Part]) -> Section:
    section = Section(name)
    chosen = [(source, i) for source, part in zip(lines, parts) for i in sorted(part.taken)]
    section.included = [source.keys[i] for source, i in chosen]
    section.dropped = [source.keys[i] for source, part in zip(lines, parts)
                       for i in range(len(source.keys)) if i not in set(part.taken)]
    if chosen:
        section.text = "\n".join([header, *(source.lines[i] for source, i in chosen)])
    return section


def _render(c: _Candidates, p: _Placement, fixed: _Fixed) -> tuple[list[Section], list[dict], int]:
    """The sections, the messages, and their total tokens (reply priming included)."""
    parts = p.parts
    evidence = Section("evidence", text=render_evidence(c.evidence, parts["evidence"].taken),
                       included=[c.evidence.items[i].id for i in sorted(parts["evidence"].taken)],
                       dropped=[e.id for i, e in enumerate(c.evidence.items) if i not in set(parts["evidence"].taken)])
    evidence.truncated = [i for i in c.evidence.truncated if i in evidence.included]
    task = _lines_section("task_state", TASK_HEADER, [c.tasks], [parts["task_state"]])
    memories = _lines_section("memories", MEMORY_HEADER, [c.preferences, c.memories], [parts["preferences"], parts["memories"]])
    episodes = _lines_section("episodes", EPISODE_HEADER, [c.episodes], [parts["episodes"]])
    summary = p.summary or Section("summary")
    window = p.plan.result(p.stream.cursor)
    recent = Section("recent", tokens=window.tokens, included=[m.id for m in window.included],
                     # Tool results whose call is not in the window's input are never sent: dropped too.
                     dropped=sorted({m.id for m in p.summarised + window.dropped} | set(window.orphaned_ids)),
                     truncated=window.truncated_ids)
    message = Section("message", text=fixed.message["content"], tokens=count_message_tokens(fixed.message),
                      truncated=["message"] if fixed.truncated else [])
    system = Section("system", text=fixed.system["content"] if fixed.system else "",
                     tokens=count_message_tokens(fixed.system) if fixed.system else 0)
    out = [fixed.system] if fixed.system else []
    for section in (evidence, task, memories, episodes, summary):
        if section.text:
            out.append({"role": "system", "content": section.text})
            # The evidence message is priced from its passages' counts: its text is new on every call.
            section.tokens = (evidence_tokens(c.evidence, parts["evidence"].taken) if section is evidence
                              else count_message_tokens(out[-1]))
    out += [m.to_openai() for m in window.included] + [fixed.message]
    # Every message is counted once: the window's units were priced as these very messages.
    total = (REPLY_PRIMING_TOKENS + system.tokens + window.tokens + message.tokens
             + sum(s.tokens for s in (evidence, task, memories, episodes, summary) if s.text))
    return [system, evidence, task, memories, episodes, summary, recent, message], out, total


def _shrink(p: _Placement) -> bool:
    """Drop the lowest-priority unit still placed (the estimates priced lines one by one; the joined
    text can count a token or two more). Returns False when nothing is left to drop."""
    for name in reversed(PRIORITY):
        part = p.parts[name]
        if name == "summary" and p.summary is not None:
            p.summary = None  # what it stood for stays reported as dropped by the recent section
            return True
        if part.stream is not None:
            if part.taken:
                part.taken.pop()
                p.stream.cursor -= 1  # the oldest unit of the window: contiguity holds
                return True
        elif part.taken:
            part.taken.pop()
            return True
    return False


class _Clock:
    """Wall time per stage into ``timings_ms``: `bench.context` reports where a call's time goes."""

    def __init__(self, timings: dict[str, float]) -> None:
        self.timings = timings
        self.started = self.last = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.timings[stage] = (now - self.last) * 1000
        self.last = now

    def stop(self) -> None:
        self.timings["total"] = (time.perf_counter() - self.started) * 1000


def assemble_context(req: ContextRequest) -> ContextResult:
    timings: dict[str, float] = {}
    clock = _Clock(timings)
    budget = min(req.budget or settings.CONTEXT_DEFAULT_BUDGET, settings.MAX_CONTEXT_BUDGET)
    fixed = _fixed(req, budget)  # raises for a system prompt over the budget, before any encode
    # The message is embedded on the encoder threads while the window and its token counts are
    # assembled below; recall takes the vectors when it needs them.
    pending = None if req.recent_only or not req.message.strip() else start_query_vectors(req.message, active_embedder())
    room = budget - fixed.tokens
    shares = _shares(req, room)
    evidence = evidence_units(req.evidence, max_passage_tokens=settings.CONTEXT_EVIDENCE_MAX_TOKENS)
    clock.lap("prepare")
    tasks = _task_lines(req.conversation)
    clock.lap("task_state")
    plan = WindowPlan(window_messages(req.conversation, req.at), query=req.message,
                      tool_result_max_tokens=settings.CONTEXT_TOOL_RESULT_MAX_TOKENS)
    candidates = _Candidates(evidence, tasks, _Lines(), _Lines(), _Lines())
    in_window = _window_ids_beside_memory(req, candidates, shares, room, plan)
    clock.lap("window")
    items, degraded = _recall_items(req, in_window, pending)
    clock.lap("recall")
    candidates.preferences, candidates.memories, candidates.episodes = _memory_sections(items)
    placement = _place(req, candidates, shares, room, plan)
    clock.lap("placement")
    sections, out, total = _render(candidates, placement, fixed)
    while total > budget and _shrink(placement):  # hard cap
        sections, out, total = _render(candidates, placement, fixed)
    clock.lap("render")
    clock.stop()
    return ContextResult(sections=sections, messages=out, total_tokens=total, budget=budget, recall_degraded=degraded,
                         message_truncated=fixed.truncated, timings_ms=timings)


def _window_ids_beside_memory(req: ContextRequest, c: _Candidates, shares: dict[str, int], room: int,
                              plan: WindowPlan) -> set[int]:
    """Messages that will (about) be in the window, so recall does not repeat them as episodes: the
    window's room once evidence, task state and the memory sections' shares are taken."""
    reserved = sum(c.evidence.costs) + sum(c.tasks.costs)
    if not req.recent_only:
        reserved += shares["preferences"] + shares["memories"] + shares["episodes"]
    reserved += shares["summary"]
    return {m.id for m in plan.newest(plan.fitting(max(shares["recent"], room - reserved)))}
