from datetime import datetime

from django.db.models import Exists, F, Max, OuterRef, Q, QuerySet
from django.http import Http404

from memory.choices import ConflictStatus, MemoryKind, MemoryStatus
from memory.models import ForgetRule, Memory, MemoryConflict, MemoryVersion
from tenancy.models import Org


def _visible(qs: QuerySet[Memory], *, org: Org, user_id: str) -> QuerySet[Memory]:
    """What recall's back-check hides stays hidden here: memories with any source conversation the
    user cannot read now (a derived memory is never more readable than its sources, D5), and
    memories linked to an entity the policy denies now."""
    from conversations.selectors import conversation_list
    from entities.policy import allowed_entity_ids
    from memory.models import EntityLink, MemorySource

    # One NOT EXISTS per row: a merged memory keeps the text of every conversation it came from, so
    # one unreadable source is enough to hide it. Memories without a conversation source pass.
    readable = conversation_list(org=org, user_id=user_id).values("id")
    unreadable_source = (MemorySource.objects.filter(memory=OuterRef("pk"), conversation_id__isnull=False)
                         .exclude(conversation_id__in=readable))
    qs = qs.filter(~Exists(unreadable_source))
    linked = set(EntityLink.objects.filter(memory__org=org, memory__user_id=user_id)
                 .values_list("entity_id", flat=True).distinct())
    denied = linked - allowed_entity_ids(org_id=org.id, user_id=user_id, entity_ids=linked)
    return qs.exclude(entity_links__entity_id__in=denied) if denied else qs


def memory_get(*, org: Org, user_id: str, memory_id: int) -> Memory:
    """404 for unknown ids, other orgs, other users and memories hidden by revocation alike."""
    memory = _visible(Memory.objects.filter(id=memory_id, org=org, user_id=user_id), org=org, user_id=user_id).first()
    if memory is None:
        raise Http404
    return memory


def memory_list(*, org: Org, user_id: str, kinds: list[str] | None = None, statuses: list[str] | None = None,
                entity_id: int | None = None, created_after: datetime | None = None,
                created_before: datetime | None = None, include_episodes: bool = False) -> QuerySet[Memory]:
    qs = _visible(Memory.objects.filter(org=org, user_id=user_id), org=org, user_id=user_id)
    qs = qs.filter(status__in=statuses or ["active"])
    if kinds:
        qs = qs.filter(kind__in=kinds)
    elif not include_episodes:
        qs = qs.exclude(kind=MemoryKind.EPISODE)
    if entity_id is not None:
        qs = qs.filter(entity_links__entity_id=entity_id)
    if created_after:
        qs = qs.filter(created_at__gte=created_after)
    if created_before:
        qs = qs.filter(created_at__lt=created_before)
    return qs


def memory_history(*, memory: Memory) -> QuerySet[MemoryVersion]:
    return MemoryVersion.objects.filter(memory=memory).prefetch_related("sources").order_by("n")


def queue_depths() -> dict[str, int]:
    """Tasks waiting per broker queue: the default queue (extraction, forgetting, maintenance) and, on
    a single node with the embedded shard, the vector queue the web process consumes. Empty when
    Celery runs eagerly or the broker is not Redis; raises when the broker cannot be read."""
    from django.conf import settings

    if settings.CELERY_TASK_ALWAYS_EAGER or not settings.CELERY_BROKER_URL.startswith("redis"):
        return {}
    import redis

    from common.redis_guard import GuardedConnection

    # A fresh client per call (a probe, not the request path), with the broker's timeouts and breaker.
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=settings.BROKER_SOCKET_TIMEOUT,
                                  socket_connect_timeout=settings.BROKER_CONNECT_TIMEOUT,
                                  connection_class=GuardedConnection)
    names = {settings.CELERY_TASK_DEFAULT_QUEUE, settings.CELERY_VECTOR_QUEUE} - {""}
    return {name: int(client.llen(name)) for name in sorted(names)}


def projection_lag() -> dict:
    lagging = Memory.objects.filter(projected_version__lt=F("version")).count()
    try:
        queues = queue_depths()
        queue_depth = sum(queues.values()) if queues else None
    except Exception:
        queue_depth, queues = None, {}
    return {"lagging_memories": lagging, "queue_depth": queue_depth, "queues": queues}


def conflict_list(*, org: Org, user_id: str | None = None, status: str = ConflictStatus.OPEN) -> QuerySet[MemoryConflict]:
    """Open conflicts are those whose two memories are both still active."""
    qs = MemoryConflict.objects.filter(org=org, status=status).select_related("older", "newer")
    if user_id is not None:
        qs = qs.filter(user_id=user_id)
    if status == ConflictStatus.OPEN:
        qs = qs.filter(older__status=MemoryStatus.ACTIVE, newer__status=MemoryStatus.ACTIVE)
    return qs


def forget_rules_latest(*, org: Org, user_id: str) -> datetime | None:
    """When the newest forget rule that applies to this user (its own, or the org's) was made."""
    return (ForgetRule.objects.filter(org=org).filter(Q(user_id=user_id) | Q(user_id__isnull=True))
            .aggregate(latest=Max("created_at"))["latest"])


def conflicts_open_count() -> int:
    """Open possible conflicts whose two memories are both still active (the dashboard's figure and
    its time series)."""
    return MemoryConflict.objects.filter(status=ConflictStatus.OPEN, older__status=MemoryStatus.ACTIVE,
                                         newer__status=MemoryStatus.ACTIVE).count()
