"""The memory vocabulary: kinds, statuses, assertions and scopes. Pure (no app registry), so the
extraction and subject modules can use it without importing the models.

Each label equals its value: the console and the API have always shown the raw value, and equal
labels keep the model fields' `choices` unchanged (no migration)."""
from django.db import models


class MemoryKind(models.TextChoices):
    PREFERENCE = "preference", "preference"
    FACT = "fact", "fact"
    EVENT = "event", "event"
    CONTEXT = "context", "context"
    SUGGESTION = "suggestion", "suggestion"
    EPISODE = "episode", "episode"


class MemoryStatus(models.TextChoices):
    ACTIVE = "active", "active"
    SUPERSEDED = "superseded", "superseded"
    INVALIDATED = "invalidated", "invalidated"
    FORGOTTEN = "forgotten", "forgotten"
    EXPIRED = "expired", "expired"


class MemoryAssertion(models.TextChoices):
    USER_STATED = "user_stated", "user_stated"
    CONFIRMED_EVENT = "confirmed_event", "confirmed_event"
    MODEL_SUGGESTION = "model_suggestion", "model_suggestion"


class MemoryScope(models.TextChoices):
    USER = "user", "user"
    TASK = "task", "task"


# The kinds that state something standing about a subject: subject matching and conflicts compare these.
STANDING_KINDS = frozenset({MemoryKind.PREFERENCE, MemoryKind.FACT})

# What extraction proposes: every kind but the episode (a dated quote the write path makes itself).
EXTRACTED_KINDS = [kind.value for kind in MemoryKind if kind != MemoryKind.EPISODE]
