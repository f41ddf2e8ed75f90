"""Redis projection of a user's active memories, plus generation counters for derived caches.

Layout (service profile): a hash per user, `mem:active:{org}:{user}`, one field per memory id, so a
change rewrites one field, never a whole blob. The embedded profile keeps the same shape in the
local-memory cache. Redis being down only makes reads slower: every miss reads MySQL.

A write to the hash can fail while Redis itself stays up (a partition): the hash keeps what it had
and would be served again once Redis is reachable. So a failed write bumps the user's epoch in
MySQL (MemoryCacheEpoch), the key carries the epoch (`mem:active:{org}:{user}#{epoch}`, no suffix
for 0; user ids never hold '#'), and every process reads the epoch before the hash: the hash that
missed a write is never read again, and the next read fills a fresh one from MySQL. The old key
expires with CACHE_TTL_SECONDS. Only Redis is checked this way: the local-memory cache cannot fail.
"""
import json
import logging
import time

from django.conf import settings
from django.core.cache import cache
from django.dispatch import Signal

from memory.choices import MemoryKind, MemoryStatus

logger = logging.getLogger(__name__)


def _redis():
    if not settings.CACHES["default"]["BACKEND"].endswith("RedisCache"):
        return None
    from django_redis import get_redis_connection

    return get_redis_connection("default")


def _active_key(org_id: int, user_id: str, epoch: int = 0) -> str:
    return f"mem:active:{org_id}:{user_id}" + (f"#{epoch}" if epoch else "")


def _epoch(org_id: int, user_id: str) -> int:
    from memory.models import MemoryCacheEpoch

    return MemoryCacheEpoch.objects.filter(org_id=org_id, user_id=user_id).values_list("epoch", flat=True).first() or 0


def _epoch_bump(org_id: int, user_id: str) -> None:
    """The hash could not be changed: retire it for every process. Not caught: if MySQL is down too,
    the write that needed the cache change has failed as well."""
    from django.db.models import F

    from memory.models import MemoryCacheEpoch

    MemoryCacheEpoch.objects.bulk_create([MemoryCacheEpoch(org_id=org_id, user_id=user_id)], ignore_conflicts=True)
    MemoryCacheEpoch.objects.filter(org_id=org_id, user_id=user_id).update(epoch=F("epoch") + 1)
    logger.warning("memory cache hash retired after a failed write org=%s", org_id)


# HSET only into a hash that exists: a missing hash is filled whole on the next read, and a hash that
# expired between an EXISTS and an HSET would come back holding one field, served as the full set.
_HSET_IF_EXISTS = "if redis.call('exists', KEYS[1]) == 1 then return redis.call('hset', KEYS[1], ARGV[1], ARGV[2]) end return 0"


def _generation(key: str) -> int:
    # A lost counter (eviction, Redis restart) must not read as an old value: start from the clock.
    value = cache.get(key)
    if value is None:
        cache.add(key, time.time_ns(), None)
        value = cache.get(key)
    return int(value) if value is not None else time.time_ns()


# Sent in the process that bumped a user's generation, after the bump: a process that keeps something
# of that user's memories may refresh it now instead of on the next read (memory/receivers.py).
generation_bumped = Signal()


def user_generation(org_id: int, user_id: str):
    """Compared for equality only. With Redis it is (counter, epoch): a bump lost in a partition
    bumps the MySQL epoch instead, so the pair moves either way."""
    counter = _generation(f"mem-gen:{org_id}:{user_id}")
    if _redis() is None:
        return counter
    return counter, _epoch(org_id, user_id)


def user_generation_bump(org_id: int, user_id: str) -> None:
    """Anything cached from this user's memories (keyword index, recall results) is now stale."""
    key = f"mem-gen:{org_id}:{user_id}"
    try:
        bumped = cache.incr(key)
    except ValueError:
        bumped = cache.set(key, time.time_ns(), None)
    # django-redis swallows connection errors (IGNORE_EXCEPTIONS) and answers None: the counter did
    # not move, and processes that cached under it would keep serving the old keyword index.
    if bumped is None and _redis() is not None:
        _epoch_bump(org_id, user_id)
    generation_bumped.send(sender=None, org_id=org_id, user_id=user_id)


def memory_cache_payload(memory) -> dict:
    return {"id": memory.id, "kind": memory.kind, "scope": memory.scope, "assertion": memory.assertion,
            "content": memory.content, "version": memory.version, "slot_key": memory.slot_key,
            "created_at": memory.created_at.isoformat() if memory.created_at else None}


class MemoryCache:
    """get/set/delete of the per-user active-memory hash."""

    def set(self, memory) -> None:
        """Update one field of an existing hash. A missing hash stays missing: it is filled whole
        on the next read (fill), so a partial hash is never mistaken for the full set."""
        if memory.kind == MemoryKind.EPISODE:
            return  # the hash holds standing memories; episodes are every message, recall finds them
        payload = json.dumps(memory_cache_payload(memory), ensure_ascii=False)
        key = _active_key(memory.org_id, memory.user_id)
        client = _redis()
        if client is None:
            current = cache.get(key)
            if current is not None:
                current[str(memory.id)] = payload
                cache.set(key, current, settings.CACHE_TTL_SECONDS)
            return
        key = _active_key(memory.org_id, memory.user_id, _epoch(memory.org_id, memory.user_id))
        try:
            client.eval(_HSET_IF_EXISTS, 1, key, str(memory.id), payload)
        except Exception as exc:  # Redis unreachable: this hash missed a change, so it must not be read again
            logger.warning("memory cache set failed memory=%s: %s", memory.id, type(exc).__name__)
            _epoch_bump(memory.org_id, memory.user_id)

    def fill(self, org_id: int, user_id: str, memories) -> None:
        mapping = {str(m.id): json.dumps(memory_cache_payload(m), ensure_ascii=False) for m in memories}
        client = _redis()
        if client is None:
            cache.set(_active_key(org_id, user_id), mapping, settings.CACHE_TTL_SECONDS)
            return
        if not mapping:
            return
        # A failed fill changes nothing (MULTI/EXEC): no epoch bump, the next read simply misses again.
        key = _active_key(org_id, user_id, _epoch(org_id, user_id))
        try:
            pipe = client.pipeline()
            pipe.delete(key)
            pipe.hset(key, mapping=mapping)
            pipe.expire(key, settings.CACHE_TTL_SECONDS)
            pipe.execute()
        except Exception as exc:
            logger.warning("memory cache fill failed: %s", type(exc).__name__)

    def delete(self, org_id: int, user_id: str, memory_ids: list[int]) -> None:
        client = _redis()
        if client is None:
            key = _active_key(org_id, user_id)
            current = cache.get(key)
            if current:
                for memory_id in memory_ids:
                    current.pop(str(memory_id), None)
                cache.set(key, current, settings.CACHE_TTL_SECONDS)
            return
        key = _active_key(org_id, user_id, _epoch(org_id, user_id))
        try:
            client.hdel(key, *[str(i) for i in memory_ids])
        except Exception as exc:  # the hash may still list a forgotten or invalidated memory: retire it
            logger.warning("memory cache delete failed: %s", type(exc).__name__)
            _epoch_bump(org_id, user_id)

    def get_all(self, org_id: int, user_id: str) -> dict[int, dict] | None:
        """None means a miss (or Redis down): the caller reads MySQL."""
        client = _redis()
        if client is None:
            raw = cache.get(_active_key(org_id, user_id))
        else:
            key = _active_key(org_id, user_id, _epoch(org_id, user_id))  # outside the try: MySQL errors raise
            try:
                raw = client.hgetall(key)
            except Exception:
                return None
        if raw is None or (client is not None and not raw):
            return None
        return {int(k): json.loads(v) for k, v in raw.items()}

    def drop_user(self, org_id: int, user_id: str) -> None:
        client = _redis()
        if client is None:
            cache.delete(_active_key(org_id, user_id))
            return
        key = _active_key(org_id, user_id, _epoch(org_id, user_id))
        try:
            client.delete(key)
        except Exception as exc:
            logger.warning("memory cache drop failed: %s", type(exc).__name__)
            _epoch_bump(org_id, user_id)


memory_cache = MemoryCache()


def standing_memories(org_id: int, user_id: str) -> dict[int, dict]:
    """The user's active standing memories (no episodes): the Redis hash, filled from MySQL on a miss."""
    from memory.models import Memory

    cached = memory_cache.get_all(org_id, user_id)
    if cached is not None:
        return cached
    rows = list(Memory.objects.filter(org_id=org_id, user_id=user_id, status=MemoryStatus.ACTIVE).exclude(kind=MemoryKind.EPISODE)
                .order_by("-id")[: settings.CACHE_MAX_STANDING_MEMORIES])
    memory_cache.fill(org_id, user_id, rows)
    return {m.id: memory_cache_payload(m) for m in rows}
