"""The vector-queue consumer that runs inside the web process (single-node topology).

An embedded Qdrant shard can be opened by one process only, and the web process needs it for
recall. So that process is also the one that applies projections: a Celery worker with the solo pool
runs on a background thread and consumes CELERY_VECTOR_QUEUE only (memory_sync, point deletions,
reconcile, rebuild, reembed). Celery worker processes consume the default queue and never open the
shard (config/celery.py). One task at a time, in the order queued, on its own database connection.

It must not die silently (issue 42). Two things keep it alive:

- Its broker connection suits a consumer, not a request: a socket timeout of
  VECTOR_CONSUMER_SOCKET_TIMEOUT (a request thread's publish gives up after BROKER_SOCKET_TIMEOUT,
  0.5 s; an ack that times out leaves the consumer's channel closed while the event loop keeps
  running, idle, for good), plain redis-py connections (the request path's breaker,
  common/redis_guard.py, would refuse an ack just as a timeout does), and kombu's BRPOP health check
  every VECTOR_CONSUMER_HEALTH_CHECK_SECONDS, which drops a connection that stopped answering.
- A watchdog thread (config/consumer_watchdog.py) compares the last delivery with the queue's depth:
  a consumer that holds work (messages waiting) but has consumed nothing for
  VECTOR_CONSUMER_STALL_SECONDS is reported degraded by `/readyz` and restarted with a fresh
  connection. A dead consumer thread is restarted the same way.

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
import time

logger = logging.getLogger(__name__)

STOP_TIMEOUT_SECONDS = 20.0

_lock = threading.Lock()
_worker = None
_thread: threading.Thread | None = None
_pid: int | None = None
# What the watchdog and /readyz read: the last time the consumer thread started or finished a task (or
# was started), and the task it runs now, if any. Written by Celery's task signals on that thread.
progress: dict = {"at": 0.0, "running_since": None, "task": None, "restarts": 0, "last_restart": None}


def vector_consumer_enabled() -> bool:
    from django.conf import settings

    from config.celery import app

    return bool(settings.VECTOR_CONSUMER_IN_WEB and settings.CELERY_VECTOR_QUEUE and not settings.QDRANT_URL
                and not app.conf.task_always_eager)


# --------------------------------------------------------------------------- the consumer's connection

def _consumer_transport():
    """kombu's Redis transport with plain redis-py connections (config/celery.py points the shared one
    at the breaker-guarded class). None for other brokers: their defaults already suit a consumer."""
    from django.conf import settings

    if not settings.CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
        return None
    import redis
    from kombu.transport import redis as kombu_redis

    class ConsumerChannel(kombu_redis.Channel):
        connection_class = redis.Connection

    class ConsumerTransport(kombu_redis.Transport):
        Channel = ConsumerChannel

    return ConsumerTransport


def consumer_transport_options() -> dict:
    from django.conf import settings

    timeout = settings.VECTOR_CONSUMER_SOCKET_TIMEOUT
    return {"socket_timeout": timeout or None,
            "health_check_interval": settings.VECTOR_CONSUMER_HEALTH_CHECK_SECONDS}


def _consumer_class(app):
    """Celery's consumer, reading from a connection of its own kind (transport and options above)."""
    from celery.worker.consumer import Consumer

    transport = _consumer_transport()
    options = consumer_transport_options()

    class VectorQueueConsumer(Consumer):
        def connection_for_read(self, heartbeat=None):
            return self.ensure_connected(self.app.connection_for_read(
                heartbeat=heartbeat, transport=transport, transport_options=options))

    return VectorQueueConsumer


# --------------------------------------------------------------------------- progress (Celery signals)

def _on_task_start(sender=None, **kwargs) -> None:
    if threading.current_thread() is _thread:
        progress.update(at=time.monotonic(), running_since=time.monotonic(), task=getattr(sender, "name", None))


def _on_task_end(sender=None, **kwargs) -> None:
    if threading.current_thread() is _thread:
        progress.update(at=time.monotonic(), running_since=None, task=None)


def _connect_signals() -> None:
    from celery.signals import task_postrun, task_prerun

    task_prerun.connect(_on_task_start, weak=False, dispatch_uid="vector-consumer-progress-start")
    task_postrun.connect(_on_task_end, weak=False, dispatch_uid="vector-consumer-progress-end")


# --------------------------------------------------------------------------- start, stop, restart

def start_vector_consumer() -> bool:
    """Start the consumer thread once per process. Returns True if it runs (or already ran)."""
    global _worker, _thread, _pid
    from django.conf import settings

    from config.celery import app

    _connect_signals()
    with _lock:
        if _thread is not None and _pid == os.getpid() and _thread.is_alive():
            return True
        queue = settings.CELERY_VECTOR_QUEUE
        worker = app.WorkController(
            hostname=f"{queue}@{socket.gethostname()}-{os.getpid()}",
            queues=[queue], pool="solo", concurrency=1, consumer_cls=_consumer_class(app),
            # Nothing to exchange with other workers; events are not needed to consume.
            without_heartbeat=True, without_mingle=True, without_gossip=True,
            loglevel=logging.getLevelName(logging.getLogger().getEffectiveLevel()))
        thread = threading.Thread(target=worker.start, name="vector-consumer", daemon=True)
        progress.update(at=time.monotonic(), running_since=None, task=None)
        _worker, _thread, _pid = worker, thread, os.getpid()
        thread.start()
    logger.info("vector consumer started on queue %s (pid %s)", queue, os.getpid())
    return True


def stop_vector_consumer(timeout: float = STOP_TIMEOUT_SECONDS) -> bool:
    """Warm stop: the running task finishes, unstarted messages stay in the broker. False if the
    thread was still running after `timeout`."""
    global _worker, _thread, _pid
    with _lock:
        worker, thread, pid = _worker, _thread, _pid
        _worker, _thread, _pid = None, None, None
    if worker is None or thread is None or pid != os.getpid():
        return True
    from celery.worker import state

    # The worker's event loop checks this flag between messages and shuts down warm.
    state.should_stop = 0
    thread.join(timeout)
    state.should_stop = None
    if thread.is_alive():  # acks_late: a message still running is redelivered to the next consumer
        logger.warning("vector consumer did not stop within %.0f s", timeout)
        return False
    return True


def restart_vector_consumer(reason: str, stop_timeout: float = STOP_TIMEOUT_SECONDS) -> None:
    """Replace the consumer by a fresh one (new connection, new channel). A thread that does not stop
    in time is left behind (a daemon); whatever message it holds unacknowledged is redelivered by the
    broker after its visibility timeout, and the projection sweep re-queues lagging rows meanwhile."""
    stopped = stop_vector_consumer(timeout=stop_timeout)
    progress.update(restarts=progress["restarts"] + 1,
                    last_restart={"reason": reason, "at": time.time(), "old_thread_stopped": stopped})
    logger.warning("vector consumer restarted (%s; old thread stopped: %s)", reason, stopped)
    start_vector_consumer()


def consumer_alive() -> bool:
    return _thread is not None and _pid == os.getpid() and _thread.is_alive()


def start_if_enabled() -> bool:
    if not vector_consumer_enabled():
        return False
    started = start_vector_consumer()
    atexit.register(stop_vector_consumer)
    return started
