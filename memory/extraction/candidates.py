"""From the rule extractor's classified sentences to candidates: a retraction merged with the
replacement that follows it, a transcript line attributed to its speaker, a subjectless
correction rebuilt from what it corrects, and each statement resolved against the user's
existing memories (same slot or a named old value -> UPDATE, a paraphrase -> NOOP)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from common.text import clean, detect_lang, split_speaker
from memory.extraction.base import Candidate, ExistingMemory, ExtractionInput
from memory.extraction.importance import importance_for
from memory.extraction.lexicon import Lexicon
from memory.extraction.rules_en import EN
from memory.extraction.rules_zh import ZH
from memory.extraction.slots import SlotParts
from memory.extraction.text import strip_end

__all__ = ["MAX_SENTENCE_CHARS", "Statement", "attribute_to", "complete_subjectless", "lexicon_for",
           "merge_retractions", "norm", "resolve", "retracts", "slot_of"]

# A memory is one short statement; a sentence longer than this is a paste or a report, and
# cutting it into a "fact" would store noise.
MAX_SENTENCE_CHARS = 240


@dataclass
class Statement:
    """One classified sentence before it is checked against the existing memories."""

    kind: str
    content: str
    assertion: str = "user_stated"
    scope: str = "user"
    slot: SlotParts | None = None
    slot_key: str | None = None
    change: str | None = None
    old_values: list[str] = field(default_factory=list)
    occurred_at: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    explicit: bool = False
    new_value: str | None = None  # a subjectless correction ("是齐齐哈尔"): filled from what it corrects
    replaces_only: bool = False  # kept only as the new value of a standing memory on its subject (rules.py)
    gate: dict | None = None  # the learned gate's keep probability and model (memory/learn/gate.py)
    said: str | None = None  # the user's words when the content rewrote them (Candidate.said)


def lexicon_for(text: str) -> Lexicon:
    return ZH if detect_lang(text) == "zh" else EN


def norm(text: str) -> str:
    return re.sub(r"[\s，,。.！!？?；;：:、]+", "", text).casefold()


def complete_subjectless(st: Statement, inp: ExtractionInput) -> bool:
    """"不对，是齐齐哈尔，不是佳木斯" names no subject: rebuild the statement from the memory
    (or, failing that, the recent user turn) that holds the old value."""
    assert st.new_value is not None
    olds = [o for o in st.old_values if len(norm(o)) >= 2]
    sources = [m.content for m in inp.existing if m.kind in ("fact", "preference")]
    sources += [c for role, c in reversed(inp.recent) if role == "user"]
    sources = [strip_end(clean(c)) for c in sources if len(c) <= MAX_SENTENCE_CHARS]
    for old in olds:
        for source in sources:
            idx = source.casefold().find(old.casefold())
            if idx < 0:
                continue
            rebuilt = source[:idx] + st.new_value + source[idx + len(old):]
            lex = lexicon_for(rebuilt)
            kind = "preference" if lex.long_term.search(rebuilt) or lex.habit.search(rebuilt) else "fact"
            rebuilt = lex.finish(rebuilt)
            slot = lex.slot(rebuilt, kind)
            st.kind, st.content, st.slot = kind, rebuilt, slot
            st.slot_key = slot.key(kind) if slot else None
            st.new_value = None
            return True
    return False

def resolve(st: Statement, existing: list[ExistingMemory]) -> Candidate:
    candidate = Candidate(
        kind=st.kind, content=st.content, assertion=st.assertion, slot_key=st.slot_key, scope=st.scope,
        occurred_at=st.occurred_at, valid_from=st.valid_from, valid_to=st.valid_to,
        importance=importance_for(kind=st.kind, scope=st.scope, change=st.change, explicit=st.explicit),
        change=st.change, replaces_only=st.replaces_only, gate=st.gate,
        said=st.said if st.said != st.content else None,
    )
    # Task instructions never touch long-term memories, suggestions are not knowledge, and
    # events only ever accumulate.
    if st.scope == "task" or st.kind in ("suggestion", "event") or not existing:
        return candidate
    # One person's statement never replaces another's ("Caroline: ..." vs "Melanie: ...").
    speaker = split_speaker(st.content)[0]
    existing = [m for m in existing if split_speaker(m.content)[0] == speaker]
    same_slot = [m for m in existing if m.kind == st.kind and st.slot_key and slot_of(m) == st.slot_key]
    named_old = [
        m for m in existing
        if m.kind == st.kind and m not in same_slot
        and any(len(norm(o)) >= 2 and norm(o) in norm(m.content) for o in st.old_values)
    ]
    if not same_slot and not named_old:
        return candidate
    value = norm(st.slot.value) if st.slot and st.slot.value else None
    repeats = all((value in norm(m.content)) if value else norm(m.content) == norm(st.content) for m in same_slot)
    if same_slot and not named_old and repeats:
        candidate.operation = "NOOP"  # a paraphrase of what is stored: nothing to write
        return candidate
    candidate.operation = "UPDATE"
    candidate.supersedes = [m.short_id for m in same_slot + named_old]
    candidate.change = st.change or "update"
    candidate.importance = importance_for(kind=st.kind, change=candidate.change, explicit=st.explicit)
    return candidate

def slot_of(memory: ExistingMemory) -> str | None:
    # Memories written through the API may carry no key; derive one the same way, so a
    # sentence can still be matched against them.
    if memory.slot_key:
        return memory.slot_key
    if memory.kind not in ("fact", "preference") or len(memory.content) > MAX_SENTENCE_CHARS:
        return None
    text = clean(memory.content)
    slot = lexicon_for(text).slot(strip_end(text), memory.kind)
    return slot.key(memory.kind) if slot else None


def attribute_to(st: Statement, speaker: str) -> None:
    """A transcript line "Caroline: I moved to Boston" is about Caroline, not about whoever owns
    the conversation: say so in the content, and key first-person slots by the speaker so two
    speakers' "address" never supersede each other."""
    st.content = f"{speaker}: {st.content}"
    if st.said:
        st.said = f"{speaker}: {st.said}"
    if st.slot_key:
        st.slot_key = re.sub(r"^(\w+):(?:user|org|用户|组织)\b", lambda m: f"{m.group(1)}:{speaker.lower()}", st.slot_key)


_RETRACTION = re.compile(r"\b(?:don'?t|do not|no longer|not\b.*\bany ?more)\b|不再|不用|停用|不.{0,6}了$", re.I)


def retracts(st: Statement) -> bool:
    """A standing statement that only takes an old value back ("We don't use the Excel spreadsheet
    anymore"): what follows it in the message says what replaced it."""
    return st.change == "update" and st.kind in ("fact", "preference") and bool(_RETRACTION.search(st.content))


def merge_retractions(statements: list[Statement]) -> list[Statement]:
    """"We don't use the Excel spreadsheet anymore; logs now live in FarmLogs": the first sentence
    only retracts an old value, the next says what replaced it. Stored apart, the retraction
    would be the current memory of the subject; kept as one change, the replacement is."""
    out: list[Statement] = []
    for st in statements:
        prev = out[-1] if out else None
        # The retraction alone may read as either standing kind; the replacement's kind is the pair's.
        if (prev is not None and retracts(prev)
                and {prev.kind, st.kind} <= {"fact", "preference"} and not st.old_values and st.scope == prev.scope == "user"):
            # One change of one subject: the retraction names the subject (its slot), the
            # replacement the value; the pair is stored as one statement under the old subject.
            st.said = f"{prev.said or prev.content}; {st.said or st.content}"
            st.content = f"{prev.content}; {st.content}"
            st.old_values = list(prev.old_values)
            # The key is the retraction's, the value the replacement's: the old value must not
            # make the change look like a repetition of what is stored.
            st.slot_key = (prev.slot.key(st.kind) if prev.slot else prev.slot_key) or st.slot_key
            st.change = st.change or "update"
            out[-1] = st
            continue
        out.append(st)
    return out
