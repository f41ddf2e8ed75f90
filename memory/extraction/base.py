"""Extraction contract: what the write path hands to an extractor and what it gets back.

Pure Python on purpose (no models, no ORM): extraction runs inside Celery workers and in the
eval runner, and must be testable without a database. Django settings are read lazily, inside
functions, so importing this package never requires configured settings.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memory.choices import EXTRACTED_KINDS, MemoryAssertion, MemoryScope

__all__ = [
    "ASSERTIONS", "CHANGES", "KINDS", "OPERATIONS", "SCOPES",
    "Candidate", "ExistingMemory", "ExtractionInput", "ExtractionResult", "Extractor",
]

KINDS = frozenset(EXTRACTED_KINDS)
ASSERTIONS = frozenset(MemoryAssertion.values)
OPERATIONS = frozenset({"ADD", "UPDATE", "NOOP"})
SCOPES = frozenset(MemoryScope.values)
CHANGES = frozenset({"correction", "migration", "update"})


@dataclass
class ExistingMemory:
    """A related memory shown to the extractor; short_id is a small int, never the DB id."""

    short_id: int
    kind: str
    content: str
    slot_key: str | None = None


@dataclass
class ExtractionInput:
    role: str  # "user" | "assistant"
    content: str
    occurred_at: datetime  # message time (aware)
    existing: list[ExistingMemory] = field(default_factory=list)
    recent: list[tuple[str, str]] = field(default_factory=list)  # (role, content), oldest first
    # The write path's vectors for texts the gate reads (memory/learn/gate.py): the vectors it computes
    # anyway for the message and its memories, in the gate's form, or None when the live model is not
    # the gate's (the gate then encodes them itself). Not part of the input's identity.
    vectors: Callable[[list[str]], Any] | None = field(default=None, compare=False, repr=False)


@dataclass
class Candidate:
    """One memory the extractor proposes.

    operation: ADD (new), UPDATE (replaces the existing memories in `supersedes`), NOOP (the
    message only repeats something already stored: the write path stores nothing; `supersedes`
    is always empty for NOOP so nothing can be replaced by mistake).
    """

    kind: str  # preference | fact | event | context | suggestion
    content: str  # self-contained statement in the user's language
    assertion: str  # user_stated | confirmed_event | model_suggestion
    slot_key: str | None  # same subject -> same key across paraphrases and updates
    scope: str = "user"  # "user" (long-term) | "task" (current task/conversation only)
    occurred_at: datetime | None = None  # the event's time for events, else None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    importance: float = 0.5
    operation: str = "ADD"  # ADD | UPDATE | NOOP
    supersedes: list[int] = field(default_factory=list)  # short ids of existing memories replaced
    change: str | None = None  # None | "correction" | "migration" | "update"
    # The attribute a standing statement is about ("维修师傅", "reminder channel"), when the extractor
    # names it; the write path's subject matcher uses it instead of parsing the content's subject.
    subject: str | None = None
    # A sentence that says a state changed but that nothing else classifies ("最近改喝拿铁了", "these
    # days I take it with oat milk"): the write path keeps it only when it replaces, or may conflict
    # with, a standing memory on its subject; on its own it is chatter, and its episode keeps the words.
    replaces_only: bool = False
    # What the learned gate said of the sentence: {"p": keep probability, "model": model version};
    # stored on the memory as metadata["gate"] (the uncertain band is reviewed later, D25).
    gate: dict | None = None
    # The statement in the user's words when its content rewrote them (relative times made dates): what
    # the learned judge reads, since it learned from what people say ("下周起发货全换极兔" replaces "发货用的
    # 中通" at 0.84; rewritten to "2026年3月23日那一周起…", 0.25). Not stored: the content is the memory.
    said: str | None = None


@dataclass
class ExtractionResult:
    candidates: list[Candidate]
    # The message asked not to be remembered: nothing is stored AND the message must be
    # excluded from episodic recall.
    do_not_remember: bool = False
    produced_by: str = "rules"  # "rules" | "llm:<model>:<prompt>" | "rules-fallback"


class Extractor(ABC):
    name: str
    # A remote extractor (a model behind HTTP) costs a call per extraction: a batch must not run it
    # ahead of time to learn which texts it will embed (memory/services/extraction_batch.py).
    remote: bool = False

    @abstractmethod
    def extract(self, inp: ExtractionInput) -> ExtractionResult: ...
