"""Enqueue follow-up work by task name, without failing the write that caused it.

This is the only module that knows task names, and it imports no task: services, receivers, access
statistics and maintenance sit below ``memory/tasks.py`` (which is a thin layer over them), so they
enqueue by name and the task is looked up in the Celery app's registry at call time.

The write has committed; if the broker (or, when tasks run eagerly, the vector index) is down, the
row stays with projected_version < version (or the message unextracted, extracted_at NULL) and
reconcile (or the extraction sweep, memory/scheduler.py) drives it again later. Anything else is a
bug and propagates - to the caller's robust on_commit hook, which logs it and keeps the write's
success (conversations/services.py).
"""
import importlib
import logging

from celery import current_app
from celery.exceptions import Retry
from kombu.exceptions import OperationalError as BrokerError

from memory.vector_index import VectorIndexUnavailable

logger = logging.getLogger(__name__)

MEMORY_SYNC = "memory.tasks.memory_sync"
MEMORY_POINTS_DELETE = "memory.tasks.memory_points_delete"
MESSAGES_EXTRACT = "memory.tasks.messages_extract"
MEMORY_TOUCH = "memory.tasks.memory_touch"
FORGET_REQUEST_EXECUTE = "memory.tasks.forget_request_execute"

TASK_NAMES = (MEMORY_SYNC, MEMORY_POINTS_DELETE, MESSAGES_EXTRACT, MEMORY_TOUCH, FORGET_REQUEST_EXECUTE)


def task_named(name: str):
    """The registered task; its module is imported on first use (autodiscovery is lazy)."""
    tasks = current_app.tasks
    if name not in tasks:
        importlib.import_module(name.rsplit(".", 1)[0])
    return tasks[name]


def tasks_eager() -> bool:
    return bool(current_app.conf.task_always_eager)


def enqueue(name: str, *args) -> bool:
    task = task_named(name)
    try:
        task.delay(*args)
        return True
    except (BrokerError, ConnectionError, VectorIndexUnavailable, Retry) as exc:
        # Retry: an eager task that asked to be retried (its backend is down) surfaces here.
        logger.warning("enqueue %s failed (%s); reconcile will repair args=%s", name, type(exc).__name__, args)
        return False


def sync_after_commit(memory_ids_versions: list[tuple[int, int]], org_id: int, user_id: str) -> None:
    """Once the write commits: bump the user's cache generation and project each (memory, version)."""
    from django.db import transaction

    from memory.cache import user_generation_bump

    def fire():
        user_generation_bump(org_id, user_id)
        for memory_id, version in memory_ids_versions:
            enqueue(MEMORY_SYNC, memory_id, version)

    transaction.on_commit(fire, robust=True)
