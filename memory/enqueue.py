"""Enqueue follow-up work without failing the write that caused it.

The write has committed; if the broker (or, when tasks run eagerly, the vector index) is down, the
row stays with projected_version < version (or the message unextracted, extracted_at NULL) and
reconcile (or the extraction sweep, memory/scheduler.py) drives it again later. Anything else is a
bug and propagates - to the caller's robust on_commit hook, which logs it and keeps the write's
success (conversations/services.py).
"""
import logging

from celery.exceptions import Retry
from kombu.exceptions import OperationalError as BrokerError

from memory.vector_index import VectorIndexUnavailable

logger = logging.getLogger(__name__)


def enqueue(task, *args) -> bool:
    try:
        task.delay(*args)
        return True
    except (BrokerError, ConnectionError, VectorIndexUnavailable, Retry) as exc:
        # Retry: an eager task that asked to be retried (its backend is down) surfaces here.
        logger.warning("enqueue %s failed (%s); reconcile will repair args=%s", task.name, type(exc).__name__, args)
        return False
