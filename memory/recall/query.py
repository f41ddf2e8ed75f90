"""What a recall asks and what it answers (`RecallQuery`, `RecallResult`), and the query's shape:
one short question, or a dialogue / long paragraph that ends in one.

A long query (an agent sending the whole conversation before the turn that needs a memory) is
mostly context: embedded as one text, its small talk pulls the vector away from what the last
turn asks, and its keyword terms match every memory that shares a word with the small talk. So a
long query is read as two texts: the whole, and its focus (the last turn(s) of whoever speaks
last, or the last sentences when there are no speaker labels). Short queries are left as they
are: no extra encoder call, no change in ranking.

A conversation is read the same way whatever its length: a query of several turns ("用户：…\n
助手：…\n用户：…", or plain newline-separated lines) is an agent sending the dialogue so far, whose
latest user turn is what needs a memory and whose earlier turns are context. From
RECALL_CONFIDENCE["conversation_turns"] turns on, a query is a conversation; its focus is the last
speaker's last turn(s), as for a long query.
"""
import re
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings

from memory.models import Memory
from tenancy.models import Org


@dataclass
class RecallQuery:
    org: Org
    user_id: str
    query: str
    k: int = 5
    kinds: list[str] | None = None
    entity_ids: list[int] = field(default_factory=list)  # filter: only memories linked to these
    boost_entity_ids: list[int] = field(default_factory=list)  # rank memories linked to these higher
    at: datetime | None = None
    conversation_id: int | None = None
    include_episodes: bool = True
    exclude_message_ids: set[int] = field(default_factory=set)  # already in the recent window
    include_ids: set[int] = field(default_factory=set)  # always candidates (e.g. standing preferences)
    explain: bool = False
    # The query's encodes, when the caller started them itself (start_query_vectors): context starts
    # them first and assembles the window while they run.
    pending_vectors: object = None


@dataclass
class RecallItem:
    memory: Memory
    score: float
    parts: dict[str, float]
    sources: list[dict]
    entity_ids: list[int]
    # Current and history (memory/recall/current_state.py): "history" when a newer item on the same
    # subject answers the query too; current_by is that item's id.
    presented_as: str = "current"
    current_by: int | None = None


@dataclass
class RecallResult:
    items: list[RecallItem]
    degraded: bool = False
    degraded_reason: str | None = None
    stages: list[dict] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)


# "用户：…", "User: …", "Caroline: …", "[user] …": a short label at the start of a line.
_SPEAKER = re.compile(r"^\s*(?:\[([^\]\n]{1,24})\]|([^\s:：]{1,24}))\s*[:：\]]\s*")
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;.])\s*")


@dataclass(frozen=True)
class QueryShape:
    whole: str
    focus: str | None  # None: a short query, used as it is

    @property
    def long(self) -> bool:
        return self.focus is not None


def _turns(text: str) -> list[tuple[str | None, str]]:
    turns: list[tuple[str | None, str]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        match = _SPEAKER.match(line)
        if match:
            turns.append(((match.group(1) or match.group(2)).casefold(), line[match.end():].strip()))
        elif turns:
            turns[-1] = (turns[-1][0], f"{turns[-1][1]} {line.strip()}")
        else:
            turns.append((None, line.strip()))
    return turns


def focus_of(text: str, min_chars: int, max_turns: int = 2) -> str:
    """The last turn(s) of the last speaker (up to `max_turns` of their turns while shorter than
    `min_chars`); without speaker labels, the last sentences up to `min_chars`."""
    turns = _turns(text)
    labelled = [t for t in turns if t[0] is not None]
    if len(labelled) >= 2:
        speaker = turns[-1][0]
        picked: list[str] = []
        for who, said in reversed(turns):
            if who == speaker and said:
                picked.insert(0, said)
                if len(picked) >= max_turns or sum(map(len, picked)) >= min_chars:
                    break
        if picked:
            return " ".join(picked)
    sentences = [s for s in _SENTENCE_END.split(text.strip()) if s.strip()]
    picked = []
    for sentence in reversed(sentences):
        picked.insert(0, sentence.strip())
        if sum(map(len, picked)) >= min_chars:
            break
    return " ".join(picked)


def is_conversation(text: str) -> bool:
    """Several turns: at least `conversation_turns` non-empty lines (with or without speaker labels)."""
    needed = settings.RECALL_CONFIDENCE.get("conversation_turns", 0)
    return bool(needed) and sum(1 for line in text.splitlines() if line.strip()) >= needed


def shape(query: str) -> QueryShape:
    if len(query) < settings.RECALL_LONG_QUERY_CHARS and not is_conversation(query):
        return QueryShape(query, None)
    focus = focus_of(query, settings.RECALL_FOCUS_MIN_CHARS, settings.RECALL_CONFIDENCE.get("focus_turns", 2))
    if not focus or len(focus) >= len(query) * 0.8:
        return QueryShape(query, None)  # nothing to separate: one long question
    return QueryShape(query, focus)


def keyword_text(query: str) -> str:
    """The text keyword search reads: a long query's focus only (small talk shares words with
    every memory), unless RECALL_LONG_QUERY["keyword_whole"] keeps the whole."""
    query_shape = shape(query)
    if not query_shape.long or settings.RECALL_LONG_QUERY["keyword_whole"]:
        return query
    return query_shape.focus
