"""Access statistics, expiry and eviction (DESIGN §9): beat jobs that invalidate, never silently drop.

Value score of a standing memory, used for eviction above a user's capacity:

    value = recency × frequency × importance
    recency    = 0.5 ** (days since last access (or creation) / RECALL_RECENCY_HALF_LIFE_DAYS)
    frequency  = 1 + ln(1 + access_count)
    importance = max(importance, 0.05)

The lowest-valued memories beyond the capacity are invalidated with reason "evicted" (status
`invalidated`, audited, still visible in the console and history). Episodes are not counted:
they follow the messages they quote.
"""
import logging
import math
from datetime import datetime

from django.conf import settings
from django.db.models import Count, F
from django.utils import timezone

from memory.choices import MemoryKind, MemoryStatus
from memory.models import Memory
from memory.services.memories import memory_invalidate
from tenancy.models import Org

logger = logging.getLogger(__name__)


def memory_touch(*, memory_ids: list[int], at: datetime | None = None) -> int:
    """Access statistics (what the value score below reads): atomic increments, no read-modify-write
    race between concurrent recalls."""
    if not memory_ids:
        return 0
    return Memory.objects.filter(id__in=memory_ids).update(access_count=F("access_count") + 1,
                                                           last_accessed_at=at or timezone.now())


def value_score(memory: Memory, now: datetime) -> float:
    last = memory.last_accessed_at or memory.created_at or now
    age_days = max(0.0, (now - last).total_seconds() / 86400)
    recency = 0.5 ** (age_days / settings.RECALL_RECENCY_HALF_LIFE_DAYS)
    frequency = 1.0 + math.log1p(memory.access_count)
    return recency * frequency * max(memory.importance, 0.05)


def memories_expire(*, now: datetime | None = None, batch: int = 1000) -> int:
    """Active memories whose validity ended (task-scoped items, dated ones) become `expired`."""
    now = now or timezone.now()
    expired = 0
    while True:
        ids = list(Memory.objects.filter(status=MemoryStatus.ACTIVE, valid_to__isnull=False, valid_to__lte=now)
                   .values_list("id", flat=True)[:batch])
        for memory_id in ids:
            memory_invalidate(memory_id=memory_id, reason="expired", actor="beat:expire", actor_kind="system",
                              status=MemoryStatus.EXPIRED)
        expired += len(ids)
        if len(ids) < batch:
            break
    if expired:
        logger.info("expired memories count=%s", expired)
    return expired


def user_evict(*, org: Org, user_id: str, now: datetime | None = None) -> int:
    now = now or timezone.now()
    capacity = org.memory_capacity or settings.DEFAULT_MEMORY_CAPACITY
    standing = list(Memory.objects.filter(org=org, user_id=user_id, status=MemoryStatus.ACTIVE).exclude(kind=MemoryKind.EPISODE)
                    .only("id", "importance", "access_count", "last_accessed_at", "created_at"))
    excess = len(standing) - capacity
    if excess <= 0:
        return 0
    standing.sort(key=lambda m: (value_score(m, now), m.id))
    for memory in standing[:excess]:
        memory_invalidate(memory_id=memory.id, reason="evicted", actor="beat:evict", actor_kind="system")
    logger.info("evicted org=%s count=%s capacity=%s", org.id, excess, capacity)
    return excess


def memories_evict(*, now: datetime | None = None) -> int:
    """Every user above capacity (org setting, else DEFAULT_MEMORY_CAPACITY) is brought back to it."""
    smallest = min([settings.DEFAULT_MEMORY_CAPACITY] +
                   list(Org.objects.filter(memory_capacity__isnull=False).values_list("memory_capacity", flat=True)))
    crowded = (Memory.objects.filter(status=MemoryStatus.ACTIVE).exclude(kind=MemoryKind.EPISODE).values("org_id", "user_id")
               .annotate(n=Count("id")).filter(n__gt=smallest))
    orgs = {o.id: o for o in Org.objects.filter(id__in={row["org_id"] for row in crowded})}
    return sum(user_evict(org=orgs[row["org_id"]], user_id=row["user_id"], now=now) for row in crowded)
