import os

from celery import Celery
from celery.signals import celeryd_init, worker_init

from memory.enqueue import bind_app

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

# kombu's Redis transport builds its connections from Channel.connection_class; pointing it at the
# guarded class gives the broker the same timeouts-then-fail-fast behaviour as the cache
# (common/redis_guard.py). Transport options cannot carry a class, hence the attribute.
try:
    from kombu.transport import redis as _kombu_redis

    from common.redis_guard import GuardedConnection

    _kombu_redis.Channel.connection_class = GuardedConnection
except ImportError:  # redis-py not installed: no Redis broker either
    pass

app = Celery("memory_service")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
bind_app(app)  # memory/ enqueues by task name through this app, whatever other app is current


@celeryd_init.connect
def _workers_wait_for_the_broker(sender=None, conf=None, **kwargs) -> None:
    """A `celery worker` process serves no request: its broker connections wait for a stalled Redis
    instead of timing out. A timed-out ack makes the consumer close its channel while it still holds
    unacked deliveries, and kombu's restore on that closed channel raises AttributeError, which
    Celery treats as unrecoverable: the worker exits. (celeryd_init is sent by the worker command
    only, not by the vector consumer inside the web process.) The cache keeps its timeouts."""
    try:
        import redis
        from kombu.transport import redis as kombu_redis
    except ImportError:
        return
    kombu_redis.Channel.connection_class = redis.Connection
    if conf is not None:
        options = dict(conf.broker_transport_options or {})
        options.pop("socket_timeout", None)
        conf.broker_transport_options = options


# --------------------------------------------------------------------------- topology
# An embedded Qdrant shard opens in one process only. On a single node that is the web process: it
# consumes CELERY_VECTOR_QUEUE (config/vector_consumer.py), every task that touches vectors is routed
# there, and `celery worker -Q celery` processes refuse to open the shard. With a Qdrant server
# (QDRANT_URL) CELERY_VECTOR_QUEUE is empty and nothing is routed. docs/architecture.md, Topologies.


def route_task(name, args, kwargs, options, task=None, **kw):
    """CELERY_TASK_ROUTES entry: tasks that touch the vector index go to the vector queue."""
    from django.conf import settings

    queue = getattr(settings, "CELERY_VECTOR_QUEUE", "")
    if queue and getattr(task, "touches_vectors", False):
        return {"queue": queue}
    return None


def consumed_queues(worker) -> set[str]:
    return set(worker.app.amqp.queues.consume_from)


@worker_init.connect
def _leave_the_shard_to_its_owner(sender=None, **kwargs) -> None:
    """A worker that does not consume the vector queue must never open the embedded shard: it would
    take the shard's lock from the web process (and hold it for as long as it lives)."""
    from django.conf import settings

    from memory.vector_index import refuse_embedded_index

    queue = getattr(settings, "CELERY_VECTOR_QUEUE", "")
    if sender is None or not queue or settings.QDRANT_URL:
        return
    if queue not in consumed_queues(sender):
        refuse_embedded_index(f"worker {sender.hostname} does not consume the {queue!r} queue")
