"""Access statistics of recalled memories, off the read path.

With a broker the touch is a Celery task. When tasks run eagerly (embedded profile) a task would be
a write inside every read, so touches are buffered in process and flushed in one UPDATE per count
at most every ACCESS_STATS_FLUSH_SECONDS, on a thread of its own (an UPDATE of a few hundred rows
took ~100 ms on SQLite at load, which the recall that happened to be due would have waited for); 0
flushes at once, in the recall that recorded them. Counts are statistics: losing a few seconds of them
in a crash is acceptable; losing read latency is not.
"""
import atexit
import logging
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError
from django.db.models import F
from django.utils import timezone

from memory.enqueue import MEMORY_TOUCH, enqueue, tasks_eager

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_pending: Counter = Counter()
_last: dict[int, datetime] = {}
_flushed_at = [time.monotonic()]
_flusher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="access-stats")


def record_access(memory_ids: list[int]) -> None:
    if not memory_ids:
        return
    now = timezone.now()
    if not settings.CELERY_TASK_ALWAYS_EAGER and not tasks_eager():
        enqueue(MEMORY_TOUCH, list(memory_ids), now.isoformat())
        return
    with _lock:
        _pending.update(memory_ids)
        for memory_id in memory_ids:
            _last[memory_id] = now
        due = time.monotonic() - _flushed_at[0] >= settings.ACCESS_STATS_FLUSH_SECONDS
        if due and settings.ACCESS_STATS_FLUSH_SECONDS > 0:
            _flushed_at[0] = time.monotonic()  # one background flush per period, not one per due recall
    if not due:
        return
    if settings.ACCESS_STATS_FLUSH_SECONDS <= 0:
        flush()
    else:
        _flusher.submit(_flush_in_thread)


def _flush_in_thread() -> None:
    from django.db import connection

    try:
        flush()
    finally:
        connection.close()  # this thread's own connection; the next flush opens a fresh one


def flush_pending() -> int:
    """Write what is buffered now, after any background flush already queued: for a caller about to
    drop or switch the database these counts belong to (memory_eval's throwaway database), whose ids
    the exit-time flush would otherwise apply to the database the process returns to."""
    _flusher.submit(lambda: None).result()  # one worker: returns once the flushes queued before it ran
    return flush() if _pending else 0


def flush() -> int:
    from memory.models import Memory

    with _lock:
        pending, last = dict(_pending), dict(_last)
        _pending.clear()
        _last.clear()
        _flushed_at[0] = time.monotonic()
    by_count: dict[int, list[int]] = {}
    for memory_id, count in pending.items():
        by_count.setdefault(count, []).append(memory_id)
    at = max(last.values(), default=timezone.now())
    try:
        for count, ids in by_count.items():  # atomic increments: no read-modify-write race
            Memory.objects.filter(id__in=ids).update(access_count=F("access_count") + count, last_accessed_at=at)
    except DatabaseError as exc:
        # Statistics must never fail the read that recorded them (a flush runs inside a recall): keep
        # the counts for the next flush. A count applied just before the failure may be applied twice.
        logger.warning("access stats flush failed (%s); kept for the next flush", type(exc).__name__)
        with _lock:
            _pending.update(pending)
            for memory_id, when in last.items():
                _last[memory_id] = max(when, _last.get(memory_id, when))
        return 0
    return len(pending)


atexit.register(lambda: flush() if _pending else None)
