"""What the reviewer reads: open possible conflicts and memories in the gate's uncertain band that it
has not settled yet, grouped into batches of one (org, user) each: a batch never shows the model two
users' memories, so an answer can only ever act on the user it was asked about."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from memory.choices import MemoryKind, MemoryStatus
from memory.models import Memory, MemoryConflict

__all__ = ["Batch", "GateItem", "PairItem", "REVIEW_KEY", "batches", "pending_conflicts", "pending_gate", "settled"]

REVIEW_KEY = "llm_review"  # MemoryConflict.signals[REVIEW_KEY] and Memory.metadata["gate"][REVIEW_KEY]


class _Item:
    """An item is about one row, the conflict or the memory; it belongs to that row's org and user,
    and batches group by that owner."""

    @property
    def row(self) -> MemoryConflict | Memory:
        raise NotImplementedError

    @property
    def owner(self) -> tuple[int, str]:
        return self.row.org_id, self.row.user_id


@dataclass
class PairItem(_Item):
    conflict: MemoryConflict
    older: Memory
    newer: Memory

    @property
    def row(self) -> MemoryConflict:
        return self.conflict


@dataclass
class GateItem(_Item):
    memory: Memory

    @property
    def row(self) -> Memory:
        return self.memory


@dataclass
class Batch:
    org_id: int
    user_id: str
    items: list[PairItem | GateItem] = field(default_factory=list)


def settled(review: dict | None) -> bool:
    """The reviewer said something (whatever it was), or gave up after LLM_REVIEW_MAX_ATTEMPTS answers
    it could not use (verdict "no_answer"): either way the item is the operator's now."""
    return bool(review and review.get("verdict"))


def pending_conflicts(limit: int) -> list[PairItem]:
    """Open conflicts whose two memories are both still active and that the reviewer has not settled,
    oldest first."""
    if limit <= 0:
        return []
    qs = (MemoryConflict.objects.filter(status="open", older__status=MemoryStatus.ACTIVE,
                                        newer__status=MemoryStatus.ACTIVE)
          .exclude(**{f"signals__{REVIEW_KEY}__has_key": "verdict"})
          .select_related("older", "newer").order_by("id"))
    return [PairItem(conflict=c, older=c.older, newer=c.newer) for c in qs[:limit]]


def gate_of(memory: Memory) -> dict:
    gate = (memory.metadata or {}).get("gate")
    return gate if isinstance(gate, dict) else {}


def pending_gate(limit: int, *, now=None) -> list[GateItem]:
    """Active memories the gate kept with a keep probability inside the uncertain band, written in the
    last LLM_REVIEW_LOOKBACK_DAYS (the window keeps the scan on the updated_at index), not yet
    reviewed (`gate.reviewed` is set once the reviewer settled one)."""
    if limit <= 0:
        return []
    since = (now or timezone.now()) - timedelta(days=settings.LLM_REVIEW_LOOKBACK_DAYS)
    qs = (Memory.objects.filter(status=MemoryStatus.ACTIVE, updated_at__gte=since,
                                metadata__gate__p__gte=settings.GATE_UNCERTAIN_LOW,
                                metadata__gate__p__lte=settings.GATE_UNCERTAIN_HIGH)
          .exclude(kind=MemoryKind.EPISODE).exclude(metadata__gate__has_key="reviewed").order_by("id"))
    return [GateItem(memory=m) for m in qs[:limit]]


def batches(items: list[PairItem | GateItem], size: int) -> list[Batch]:
    """Items grouped by owner (first seen first), each group cut into batches of at most `size`."""
    groups: dict[tuple[int, str], list] = defaultdict(list)
    for item in items:
        groups[item.owner].append(item)
    out = []
    for (org_id, user_id), group in groups.items():
        for start in range(0, len(group), max(1, size)):
            out.append(Batch(org_id=org_id, user_id=user_id, items=group[start:start + max(1, size)]))
    return out
