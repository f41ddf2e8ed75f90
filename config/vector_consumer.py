"""The vector-queue consumer that runs inside the web process (single-node topology).

An embedded Qdrant shard can be opened by one process only, and the web process needs it for
recall. So that process is also the one that applies projections: a Celery worker with the solo pool
runs on a background thread and consumes CELERY_VECTOR_QUEUE only (memory_sync, point deletions,
reconcile, rebuild, reembed). Celery worker processes consume the default queue and never open the
shard (config/celery.py). One task at a time, in the order queued, on its own database connection.

Started by config/wsgi.py when VECTOR_CONSUMER_IN_WEB is set (the default with the embedded shard
and a real broker); serve with ONE gunicorn worker (threads for concurrency) and without --preload,
as `make run` does. Stopped warm (the running task finishes) at interpreter exit.
"""
from __future__ import annotations

import atexit
import logging
import os
import socket
import threading

logger = logging.getLogger(__name__)

STOP_TIMEOUT_SECONDS = 20.0

_lock = threading.Lock()
_worker = None
_thread: threading.Thread | None = None
_pid: int | None = None


def vector_consumer_enabled() -> bool:
    from django.conf import settings

    from config.celery import app

    return bool(settings.VECTOR_CONSUMER_IN_WEB and settings.CELERY_VECTOR_QUEUE and not settings.QDRANT_URL
                and not app.conf.task_always_eager)


def start_vector_consumer() -> bool:
    """Start the consumer thread once per process. Returns True if it runs (or already ran)."""
    global _worker, _thread, _pid
    from django.conf import settings

    from config.celery import app

    with _lock:
        if _thread is not None and _pid == os.getpid() and _thread.is_alive():
            return True
        queue = settings.CELERY_VECTOR_QUEUE
        worker = app.WorkController(
            hostname=f"{queue}@{socket.gethostname()}-{os.getpid()}",
            queues=[queue], pool="solo", concurrency=1,
            # Nothing to exchange with other workers; events are not needed to consume.
            without_heartbeat=True, without_mingle=True, without_gossip=True,
            loglevel=logging.getLevelName(logging.getLogger().getEffectiveLevel()))
        thread = threading.Thread(target=worker.start, name="vector-consumer", daemon=True)
        thread.start()
        _worker, _thread, _pid = worker, thread, os.getpid()
    logger.info("vector consumer started on queue %s (pid %s)", queue, os.getpid())
    return True


def stop_vector_consumer(timeout: float = STOP_TIMEOUT_SECONDS) -> None:
    """Warm stop: the running task finishes, unstarted messages stay in the broker."""
    global _worker, _thread, _pid
    with _lock:
        worker, thread, pid = _worker, _thread, _pid
        _worker, _thread, _pid = None, None, None
    if worker is None or thread is None or pid != os.getpid():
        return
    from celery.worker import state

    # The worker's event loop checks this flag between messages and shuts down warm.
    state.should_stop = 0
    thread.join(timeout)
    state.should_stop = None
    if thread.is_alive():  # acks_late: a message still running is redelivered to the next consumer
        logger.warning("vector consumer did not stop within %.0f s", timeout)


def vector_consumer_status() -> dict:
    """For the readiness probe: is anything in this process consuming the vector queue?"""
    if not vector_consumer_enabled():
        return {"in_web": False}
    alive = _thread is not None and _pid == os.getpid() and _thread.is_alive()
    if not alive:
        raise RuntimeError("vector consumer not running")
    from django.conf import settings

    return {"in_web": True, "queue": settings.CELERY_VECTOR_QUEUE}


def start_if_enabled() -> bool:
    if not vector_consumer_enabled():
        return False
    started = start_vector_consumer()
    atexit.register(stop_vector_consumer)
    return started
