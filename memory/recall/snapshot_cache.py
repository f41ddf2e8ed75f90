"""The users' recall snapshots kept in process: one per (org, user), used while the user's memory
generation is unchanged (memory/recall/snapshot.py), an LRU of `RECALL_CORPUS["users"]`. A write in
this process rebuilds a kept user's snapshot on a thread of its own (`refresh_soon`); the web process
builds the most recently changed users' at start (`warm`)."""
import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

from cachetools import LRUCache
from django.conf import settings
from django.db import DatabaseError
from django.db.models import Max

from memory.cache import user_generation
from memory.choices import MemoryStatus
from memory.models import Memory
from memory.recall.snapshot import UserSnapshot
from memory.recall.snapshot_build import build

logger = logging.getLogger(__name__)

_snapshots: LRUCache | None = None
_lock = threading.Lock()
_inflight: dict[tuple[int, str], Future] = {}  # background rebuilds (refresh_soon)
_refresher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="recall-snapshot")
_REBUILD_ATTEMPTS = 3


def _cache() -> LRUCache:
    global _snapshots
    if _snapshots is None:
        _snapshots = LRUCache(maxsize=settings.RECALL_CORPUS["users"])
    return _snapshots


def user_snapshot(org_id: int, user_id: str) -> UserSnapshot:
    key = (org_id, user_id)
    generation = user_generation(org_id, user_id)
    with _lock:
        cached = _cache().get(key)  # a read counts as a use
        if cached is not None and cached.generation == generation:
            return cached
        running = _inflight.get(key)
    if running is not None:  # a rebuild after this user's last write is under way: its result, not a second build
        try:
            built = running.result(timeout=settings.RECALL_CORPUS["wait_seconds"])
            if built is not None and built.generation == generation:
                return built
        except Exception:  # its own error is logged there; build here
            pass
    snapshot = build(org_id, user_id, generation, rows=False)  # on the request path: rows as recall asks
    with _lock:
        _cache()[key] = snapshot
    return snapshot


def _rebuild(key: tuple[int, str]) -> UserSnapshot | None:
    from django.db import connection as thread_connection

    try:
        for attempt in range(_REBUILD_ATTEMPTS):
            try:
                snapshot = build(*key, user_generation(*key))
                snapshot.prefetch(*key)
                break
            except DatabaseError:
                # SQLite answers "locked" while the write that triggered this still projects; retry.
                if attempt == _REBUILD_ATTEMPTS - 1:
                    raise
                thread_connection.close()
                time.sleep(0.05 * (attempt + 1))
        with _lock:
            _cache()[key] = snapshot
        return snapshot
    except Exception:
        logger.exception("recall snapshot rebuild failed org=%s", key[0])
        return None
    finally:
        with _lock:
            _inflight.pop(key, None)
        thread_connection.close()  # this thread's own connection


def refresh_soon(org_id: int, user_id: str) -> None:
    """After a write to this user's memories in this process: rebuild the user's snapshot on a thread of
    its own if one is kept (a user in use), so the next recall finds it built instead of building it
    while it waits. Users without a snapshot are built when first asked for."""
    key = (org_id, user_id)
    with _lock:
        if key not in _cache() or key in _inflight:
            return
        _inflight[key] = _refresher.submit(_rebuild, key)


def warm(limit: int | None = None) -> int:
    """Build the snapshots of the users whose memories changed last (up to the cache's capacity), as
    the web process starts: their first recall then finds them. Returns how many were built."""
    limit = settings.RECALL_CORPUS["users"] if limit is None else limit
    users = (Memory.objects.filter(status=MemoryStatus.ACTIVE).values("org_id", "user_id")
             .annotate(last=Max("updated_at")).order_by("-last")[:limit])
    built = 0
    for row in users:
        key = (row["org_id"], row["user_id"])
        snapshot = build(*key, user_generation(*key))
        snapshot.prefetch(*key)
        with _lock:
            _cache()[key] = snapshot
        built += 1
    return built


def keyword_scores(*, org_id: int, user_id: str, query: str) -> dict[int, float]:
    """Raw BM25 score of every active memory of the user that shares a term with the query."""
    return user_snapshot(org_id, user_id).keyword_scores(query)


def clear() -> None:
    with _lock:
        _cache().clear()
