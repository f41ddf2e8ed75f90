"""The memory vocabulary: kinds, statuses (of memories, forget requests, conflicts and vector
collections), assertions and scopes. Pure (no app registry), so the
extraction and subject modules can use it without importing the models.

Each label equals its value: the console and the API have always shown the raw value, and equal
labels keep the model fields' `choices` unchanged (no migration)."""
from django.db import models


def _choices(name: str, values: str) -> type[models.TextChoices]:
    """A TextChoices whose members are the values in capitals (``MemoryKind.FACT == "fact"``), each
    labelled with its value. The vocabulary is a list of words, so it is written as one."""
    return models.TextChoices(name, [(value.upper(), (value, value)) for value in values.split()], module=__name__)


MemoryKind = _choices("MemoryKind", "preference fact event context suggestion episode")
MemoryStatus = _choices("MemoryStatus", "active superseded invalidated forgotten expired")
MemoryAssertion = _choices("MemoryAssertion", "user_stated confirmed_event model_suggestion")
MemoryScope = _choices("MemoryScope", "user task")
ForgetRequestStatus = _choices("ForgetRequestStatus", "pending approved rejected executed")
ConflictStatus = _choices("ConflictStatus", "open superseded kept_both closed")
CollectionState = _choices("CollectionState", "building live retired")

# The kinds that say something standing about a subject (a preference, a fact): subject matching,
# supersede by subject, possible conflicts and current-vs-history compare only these. Not the kinds
# recall serves by default (`RECALLED_KINDS`, memory/recall/candidates.py).
SUBJECT_KINDS = frozenset({MemoryKind.PREFERENCE, MemoryKind.FACT})
# The kinds one subject holds one value of at a time: a slot key's newer value replaces the older.
SINGLE_VALUED_KINDS = frozenset({MemoryKind.PREFERENCE, MemoryKind.FACT, MemoryKind.CONTEXT})

# What extraction proposes: every kind but the episode (a dated quote the write path makes itself).
EXTRACTED_KINDS = [kind.value for kind in MemoryKind if kind != MemoryKind.EPISODE]

# Memory.metadata key of the write path's far readings ({older id: P(replaces)}): pairs the learned judge
# read as a change though worded too far apart to act on; recall reads them (memory/recall/current_state.py).
FAR_READS = "far_reads"
