"""Enqueue projection work without ever failing the write that caused it.

The write has committed; if the broker (or, when eager, the vector index) is down, the row simply
stays with projected_version < version and the reconcile beat job drives it again later.
"""
import logging

logger = logging.getLogger(__name__)


def enqueue(task, *args) -> bool:
    try:
        task.delay(*args)
        return True
    except Exception as exc:
        logger.warning("enqueue %s failed (%s); reconcile will repair args=%s", task.name, type(exc).__name__, args)
        return False
