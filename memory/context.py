"""Context assembly (DESIGN §7): the token-budgeted input for the agent's next turn.

Sections, in this order ("lost in the middle" puts the rules first and the live turn last):
system → task state → long-term memories → past episodes → summary → recent messages → new message.
Every section is counted with tiktoken; the total budget is a hard cap.
"""
import json
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings

from conversations.models import Conversation, TaskState
from conversations.tokens import REPLY_PRIMING_TOKENS, count_message_tokens, count_tokens, truncate_to_tokens
from conversations.window import select_window
from conversations.window_cache import window_messages
from memory.cache import standing_memories
from memory.selectors.recall_pipeline import RecallItem, RecallQuery, recall
from memory.summaries import summary_covering
from tenancy.models import Org

logger = logging.getLogger(__name__)

KIND_TITLES = {"preference": "Preferences", "fact": "Facts", "event": "Events", "context": "Context",
               "suggestion": "Assistant suggestions (not confirmed)"}
KIND_ORDER = ["preference", "fact", "event", "context", "suggestion"]


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
    section_budgets: dict[str, float] = field(default_factory=dict)  # fractions of the total


@dataclass
class Section:
    name: str
    text: str = ""
    tokens: int = 0
    included: list = field(default_factory=list)
    dropped: list = field(default_factory=list)


@dataclass
class ContextResult:
    sections: list[Section]
    messages: list[dict]
    total_tokens: int
    budget: int
    recall_degraded: bool = False
    timings_ms: dict[str, float] = field(default_factory=dict)


def _date(value) -> str:
    return value.strftime("%Y-%m-%d") if value else "?"


def _source_label(item: RecallItem) -> str:
    refs = [s["ref"] or f"msg {s['message_id']}" for s in item.sources if s["ref"] or s["message_id"]]
    return ", ".join(refs[:3]) if refs else f"memory {item.memory.id}"


def _render_lines(lines: list[tuple[object, str]], header: str, cap: int) -> tuple[str, list, list]:
    """Add lines while they fit the cap; returns (text, included keys, dropped keys)."""
    text, included, dropped = "", [], []
    for key, line in lines:
        candidate = (text or header) + "\n" + line
        if count_tokens(candidate) <= cap:
            text = candidate
            included.append(key)
        else:
            dropped.append(key)
    return text, included, dropped


def _task_section(conversation: Conversation, cap: int) -> Section:
    section = Section("task_state")
    tasks = list(TaskState.objects.filter(conversation=conversation).order_by("-updated_at", "key"))
    lines = [(t.key, f"- {t.key} [{t.kind}] state={t.state} data={json.dumps(t.data, ensure_ascii=False, sort_keys=True)}"
              f" (v{t.version})") for t in tasks]
    section.text, section.included, section.dropped = _render_lines(lines, "Task state (authoritative, structured):", cap)
    return section


def _memory_sections(items: list[RecallItem], cap_memories: int, cap_episodes: int) -> tuple[Section, Section]:
    standing = [i for i in items if i.memory.kind != "episode"]
    episodes = [i for i in items if i.memory.kind == "episode"]
    mem = Section("memories")
    lines = []
    for kind in KIND_ORDER:
        for item in (i for i in standing if i.memory.kind == kind):
            when = _date(item.memory.occurred_at or item.memory.created_at)
            lines.append((item.memory.id, f"- [{KIND_TITLES[kind]}] {item.memory.content} "
                                          f"({when}; source: {_source_label(item)}; id {item.memory.id})"))
    mem.text, mem.included, mem.dropped = _render_lines(lines, "Long-term memory about the user:", cap_memories)
    epi = Section("episodes")
    lines = [(i.memory.id, f"- {_date(i.memory.occurred_at)} {'user' if i.memory.assertion == 'user_stated' else 'assistant'}: "
                           f"{i.memory.content} (source: {_source_label(i)})") for i in episodes]
    epi.text, epi.included, epi.dropped = _render_lines(
        lines, "Relevant past messages (what was said then; may be outdated):", cap_episodes)
    return mem, epi


def _fraction(req: ContextRequest, name: str) -> float:
    return float(req.section_budgets.get(name, settings.CONTEXT_SECTION_BUDGETS[name]))


def assemble_context(req: ContextRequest) -> ContextResult:
    started = time.perf_counter()
    budget = min(req.budget or settings.CONTEXT_DEFAULT_BUDGET, settings.MAX_CONTEXT_BUDGET)
    timings: dict[str, float] = {}
    system_text = req.system or ""
    if req.tools:
        system_text += "\nTools:\n" + json.dumps(req.tools, ensure_ascii=False, separators=(",", ":"))
    new_message = {"role": "user", "content": req.message}
    fixed = REPLY_PRIMING_TOKENS + count_message_tokens(new_message)
    if system_text:
        fixed += count_message_tokens({"role": "system", "content": system_text})
    if fixed > budget:  # even the live turn does not fit: cut it, never exceed the cap
        system_text = ""
        new_message["content"] = truncate_to_tokens(req.message, max(0, budget - REPLY_PRIMING_TOKENS - 8))
        fixed = REPLY_PRIMING_TOKENS + count_message_tokens(new_message)
    avail = max(0, budget - fixed)
    overhead = 4  # each section becomes its own system message

    task = _task_section(req.conversation, max(0, min(int(budget * _fraction(req, "task_state")), avail) - overhead))
    task.tokens = count_tokens(task.text) + overhead if task.text else 0
    avail -= task.tokens

    messages = window_messages(req.conversation, req.at)
    cap_mem = 0 if req.recent_only else min(int(budget * _fraction(req, "memories")), avail)
    cap_epi = 0 if req.recent_only else min(int(budget * _fraction(req, "episodes")), avail - cap_mem)
    cap_sum = min(int(budget * _fraction(req, "summary")), avail - cap_mem - cap_epi)
    first = select_window(messages, max(0, avail - cap_mem - cap_epi - cap_sum), query=req.message,
                          tool_result_max_tokens=settings.CONTEXT_TOOL_RESULT_MAX_TOKENS)

    memories, episodes, degraded = Section("memories"), Section("episodes"), False
    if not req.recent_only and req.message.strip():
        t0 = time.perf_counter()
        # Standing preferences apply to every turn, relevant-looking or not: they are always
        # candidates (the Redis hash says which exist), and still pass the same back-check.
        preferences = {i for i, m in standing_memories(req.org.id, req.user_id).items()
                       if m["kind"] == "preference" and m["scope"] == "user"}
        k = (req.k or settings.CONTEXT_RECALL_K) + min(len(preferences), settings.CONTEXT_MAX_PREFERENCES)
        result = recall(RecallQuery(org=req.org, user_id=req.user_id, query=req.message, k=k, at=req.at,
                                    conversation_id=req.conversation.id, exclude_message_ids={m.id for m in first.included},
                                    include_ids=set(sorted(preferences)[-settings.CONTEXT_MAX_PREFERENCES:])))
        timings["recall"] = (time.perf_counter() - t0) * 1000
        degraded = result.degraded
        memories, episodes = _memory_sections(result.items, max(0, cap_mem - overhead), max(0, cap_epi - overhead))
        memories.tokens = count_tokens(memories.text) + overhead if memories.text else 0
        episodes.tokens = count_tokens(episodes.text) + overhead if episodes.text else 0
    avail -= memories.tokens + episodes.tokens

    summary = Section("summary")
    window = select_window(messages, max(0, avail - cap_sum), query=req.message,
                           tool_result_max_tokens=settings.CONTEXT_TOOL_RESULT_MAX_TOKENS)
    if window.dropped:
        last_dropped = max(m.seq for m in window.dropped)
        row, reused = summary_covering(conversation=req.conversation, last_dropped_seq=last_dropped,
                                       budget=max(0, cap_sum - overhead - 8))
        if row is not None and row.text:
            summary.text = f"Summary of the earlier conversation (messages 1-{row.covers_until_seq}):\n{row.text}"
            summary.tokens = count_tokens(summary.text) + overhead
            summary.included = [{"summary_id": row.id, "covers_until_seq": row.covers_until_seq, "reused": reused}]
            later = [m for m in messages if m.seq > row.covers_until_seq]
            window = select_window(later, max(0, avail - summary.tokens), query=req.message,
                                   tool_result_max_tokens=settings.CONTEXT_TOOL_RESULT_MAX_TOKENS)
            window.dropped = [m for m in messages if m.seq <= row.covers_until_seq] + window.dropped
        else:
            window = select_window(messages, max(0, avail), query=req.message,
                                   tool_result_max_tokens=settings.CONTEXT_TOOL_RESULT_MAX_TOKENS)

    out: list[dict] = []
    if system_text:
        out.append({"role": "system", "content": system_text})
    for section in (task, memories, episodes, summary):
        if section.text:
            out.append({"role": "system", "content": section.text})
    out += [m.to_openai() for m in window.included]
    out.append(new_message)
    total = REPLY_PRIMING_TOKENS + sum(count_message_tokens(m) for m in out)
    # Hard cap: should the estimates above be off, drop the oldest recent messages (whole tool groups).
    while total > budget and window.included:
        window = select_window(window.included, window.tokens - 1 - (total - budget), query=req.message,
                               tool_result_max_tokens=settings.CONTEXT_TOOL_RESULT_MAX_TOKENS)
        out = [m for m in out if m["role"] == "system"] + [m.to_openai() for m in window.included] + [new_message]
        total = REPLY_PRIMING_TOKENS + sum(count_message_tokens(m) for m in out)
    while total > budget and len(out) > 1 + bool(system_text):
        # Still over (tiny budgets): drop whole sections, least important first.
        removable = [m for m in out if m["role"] == "system" and m["content"] != system_text]
        if not removable:
            break
        out.remove(removable[-1])
        total = REPLY_PRIMING_TOKENS + sum(count_message_tokens(m) for m in out)
        for section in (episodes, memories, summary, task):
            if section.text == removable[-1]["content"]:
                section.dropped, section.included, section.text, section.tokens = section.included, [], "", 0
                break
    recent = Section("recent", tokens=window.tokens, included=[m.id for m in window.included],
                     dropped=[m.id for m in window.dropped])
    recent.truncated = window.truncated_ids
    sections = [Section("system", text=system_text, tokens=count_message_tokens({"role": "system", "content": system_text}) if system_text else 0),
                task, memories, episodes, summary, recent,
                Section("message", text=new_message["content"], tokens=count_message_tokens(new_message))]
    timings["total"] = (time.perf_counter() - started) * 1000
    return ContextResult(sections=sections, messages=out, total_tokens=total, budget=budget, recall_degraded=degraded,
                         timings_ms=timings)
