"""Enqueue follow-up work by task name, without failing the write that caused it.

This is the only module that knows task names, and it imports no task: services, receivers, access
statistics and maintenance sit below ``memory/tasks.py`` (which is a thin layer over them), so they
enqueue by name and the task is looked up in the Celery app's registry at call time.

The write has committed; if the broker (or, when tasks run eagerly, the vector index) is down, the
row stays with projected_version < version (or the message unextracted, extracted_at NULL) and
reconcile (or the extraction sweep, memory/jobs/scheduler_thread.py) drives it again later. Anything else is a
bug and propagates - to the caller's robust on_commit hook, which logs it and keeps the write's
success (conversations/services.py).
"""
import importlib
import logging
import threading
from contextlib import contextmanager

from celery import current_app
from celery.exceptions import Retry
from kombu.exceptions import OperationalError as BrokerError

from memory.vector_index import VectorIndexUnavailable

logger = logging.getLogger(__name__)

MEMORY_SYNC = "memory.tasks.memory_sync"
MEMORIES_SYNC = "memory.tasks.memories_sync"
MEMORY_POINTS_DELETE = "memory.tasks.memory_points_delete"
MESSAGES_EXTRACT = "memory.tasks.messages_extract"
MEMORY_TOUCH = "memory.tasks.memory_touch"
FORGET_REQUEST_EXECUTE = "memory.tasks.forget_request_execute"
LLM_REVIEW = "memory.tasks.llm_review_task"

TASK_NAMES = (MEMORY_SYNC, MEMORIES_SYNC, MEMORY_POINTS_DELETE, MESSAGES_EXTRACT, MEMORY_TOUCH, FORGET_REQUEST_EXECUTE,
              LLM_REVIEW)


_app = None


def bind_app(app) -> None:
    """The project's Celery app (config/celery.py binds it when it creates it). Without it the
    "current" app is used, which any other Celery() instance in the process would replace."""
    global _app
    _app = app


def _celery():
    return _app if _app is not None else current_app


def task_named(name: str):
    """The registered task; its module is imported on first use (autodiscovery is lazy)."""
    tasks = _celery().tasks
    if name not in tasks:
        importlib.import_module(name.rsplit(".", 1)[0])
    return tasks[name]


def tasks_eager() -> bool:
    return bool(_celery().conf.task_always_eager)


def enqueue(name: str, *args) -> bool:
    task = task_named(name)
    try:
        task.delay(*args)
        return True
    except (BrokerError, ConnectionError, VectorIndexUnavailable, Retry) as exc:
        # Retry: an eager task that asked to be retried (its backend is down) surfaces here.
        logger.warning("enqueue %s failed (%s); reconcile will repair args=%s", name, type(exc).__name__, args)
        return False


def llm_review_configured() -> bool:
    """An LLM endpoint is set and its review of conflicts and the gate's band is not switched off (D28)."""
    from django.conf import settings

    return bool(settings.LLM_BASE_URL) and bool(settings.LLM_REVIEW_ENABLED)


def llm_review_enqueue() -> bool:
    """Queue a run of the LLM reviewer, only when an LLM is configured: without one nothing is queued
    at all (the task would be a no-op)."""
    return llm_review_configured() and enqueue(LLM_REVIEW)


_deferred = threading.local()


@contextmanager
def projections_deferred():
    """Writes inside collect their projection work (generation bump, memory_sync) instead of queueing
    it at each commit; on exit it is queued once, after the enclosing commit: one task for all. Only
    reads of the vector index and the recall caches see the difference (later), never a write
    decision (dedup reads the stored vectors in the database)."""
    from django.db import transaction

    if getattr(_deferred, "pending", None) is not None:
        yield  # nested: the outermost flushes
        return
    _deferred.pending = {}
    try:
        yield
    finally:
        pending, _deferred.pending = _deferred.pending, None
        # Registered last, so it runs after every collecting callback (which may still be waiting
        # for an enclosing commit, so `pending` can look empty here).
        transaction.on_commit(lambda: _fire_many(pending), robust=True)


def _fire_many(pending: dict[tuple[int, str], list[tuple[int, int]]]) -> None:
    from memory.cache import user_generation_bump

    if not pending:
        return
    for org_id, user_id in pending:
        user_generation_bump(org_id, user_id)
    enqueue(MEMORIES_SYNC, [list(pair) for pairs in pending.values() for pair in pairs])


def sync_after_commit(memory_ids_versions: list[tuple[int, int]], org_id: int, user_id: str) -> None:
    """Once the write commits: bump the user's cache generation and project each (memory, version);
    inside ``projections_deferred()`` the pairs are collected for one task instead."""
    from django.db import transaction

    from memory.cache import user_generation_bump

    pending = getattr(_deferred, "pending", None)
    if pending is not None:
        # Collected when this write commits (a rolled-back write's pairs are dropped with it).
        transaction.on_commit(lambda: pending.setdefault((org_id, user_id), []).extend(memory_ids_versions),
                              robust=True)
        return

    def fire():
        user_generation_bump(org_id, user_id)
        for memory_id, version in memory_ids_versions:
            enqueue(MEMORY_SYNC, memory_id, version)

    transaction.on_commit(fire, robust=True)


def generation_bump_after_commit(org_id: int, user_id: str) -> None:
    """Once the write commits, what any process cached of this user's memories is stale (a source or
    an entity link was added to a memory without a new version)."""
    from django.db import transaction

    from memory.cache import user_generation_bump

    transaction.on_commit(lambda: user_generation_bump(org_id, user_id), robust=True)
