"""The sections of a context (DESIGN §7): each candidate line of the task state, the memories and the
past episodes, best first, priced one by one (`Lines`), and a section as placed (`Section`)."""
import json
from dataclasses import dataclass, field

from conversations.tokens import MESSAGE_OVERHEAD_TOKENS, count_tokens
from memory.choices import EXTRACTED_KINDS, MemoryKind
from memory.context.budget import Part
from memory.recall.query import RecallItem

KIND_TITLES = {MemoryKind.PREFERENCE: "Preferences", MemoryKind.FACT: "Facts", MemoryKind.EVENT: "Events",
               MemoryKind.CONTEXT: "Context", MemoryKind.SUGGESTION: "Assistant suggestions (not confirmed)"}
KIND_ORDER = EXTRACTED_KINDS
TASK_HEADER = "Task state (authoritative, structured):"
MEMORY_HEADER = "Long-term memory about the user:"
EPISODE_HEADER = "Relevant past messages (what was said then; may be outdated):"


@dataclass
class Section:
    name: str
    text: str = ""
    tokens: int = 0
    included: list = field(default_factory=list)
    dropped: list = field(default_factory=list)
    truncated: list = field(default_factory=list)


@dataclass
class Lines:
    """A rendered section's candidate lines (best first) and what one line costs."""
    keys: list = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    costs: list[int] = field(default_factory=list)

    def add(self, key, line: str) -> None:
        self.keys.append(key)
        self.lines.append(line)
        self.costs.append(count_tokens(line) + 1)  # +1: the newline before it


def frame(header: str) -> int:
    return MESSAGE_OVERHEAD_TOKENS + count_tokens(header)


def _date(value) -> str:
    return value.strftime("%Y-%m-%d") if value else "?"


def _source_label(item: RecallItem) -> str:
    refs = [s["ref"] or f"msg {s['message_id']}" for s in item.sources if s["ref"] or s["message_id"]]
    return ", ".join(refs[:3]) if refs else f"memory {item.memory.id}"


def task_lines(states: list) -> Lines:
    """The task state's lines, in the order the conversation gives them (newest first, then by key)."""
    lines = Lines()
    for t in states:
        lines.add(t.key, f"- {t.key} [{t.kind}] state={t.state} data={json.dumps(t.data, ensure_ascii=False, sort_keys=True)}"
                         f" (v{t.version})")
    return lines


def memory_sections(items: list[RecallItem]) -> tuple[Lines, Lines, Lines]:
    """(standing preferences, other standing memories, episodes): one memories message holds the
    first two, preferences first; they differ in priority only. A history item (a newer recalled item
    on its subject replaces it) stands with the dated past messages, never in the memory sections."""
    standing = [i for i in items if i.memory.kind != MemoryKind.EPISODE and i.presented_as != "history"]
    episodes = [i for i in items if i.memory.kind == MemoryKind.EPISODE or i.presented_as == "history"]
    preferences, others = Lines(), Lines()
    for kind in KIND_ORDER:
        for item in (i for i in standing if i.memory.kind == kind):
            when = _date(item.memory.occurred_at or item.memory.created_at)
            (preferences if kind == MemoryKind.PREFERENCE else others).add(
                item.memory.id, f"- [{KIND_TITLES[kind]}] {item.memory.content} "
                                f"({when}; source: {_source_label(item)}; id {item.memory.id})")
    epi = Lines()
    for i in episodes:
        if i.presented_as == "history":  # dated when it became known; the newer item is what holds now
            epi.add(i.memory.id, f"- {_date(i.memory.created_at)} (earlier, since changed) {i.memory.content} "
                                 f"(source: {_source_label(i)})")
            continue
        epi.add(i.memory.id, f"- {_date(i.memory.occurred_at)} {'user' if i.memory.assertion == 'user_stated' else 'assistant'}: "
                             f"{i.memory.content} (source: {_source_label(i)})")
    return preferences, others, epi


def lines_section(name: str, header: str, lines: list[Lines], parts: list[Part]) -> Section:
    section = Section(name)
    chosen = [(source, i) for source, part in zip(lines, parts) for i in sorted(part.taken)]
    section.included = [source.keys[i] for source, i in chosen]
    section.dropped = [source.keys[i] for source, part in zip(lines, parts)
                       for i in range(len(source.keys)) if i not in set(part.taken)]
    if chosen:
        section.text = "\n".join([header, *(source.lines[i] for source, i in chosen)])
    return section
