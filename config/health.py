"""Liveness and readiness probes. Readiness reports each dependency separately.

`/readyz` answers within READYZ_TIMEOUT_SECONDS whatever Redis does (issue 42): the checks that talk
to Redis (cache, broker, queue depths, the maintenance records kept in the cache) run on a small pool
of probe threads, side by side and beside the database checks; one that has not answered by the
deadline is reported ``status: timeout``, and while it is still running a later call waits for that
same probe instead of starting another (a stalled Redis never ties up more than one thread per check).
"""
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import JsonResponse


def healthz(request):
    return JsonResponse({"status": "ok"})


def run_check(fn) -> dict:
    started = time.perf_counter()
    try:
        detail = fn() or {}
        return {"status": "ok", "ms": round((time.perf_counter() - started) * 1000, 2), **detail}
    except Exception as exc:  # a probe must report, never raise
        return {"status": "down", "error": type(exc).__name__}


def check_database():
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return {"vendor": connection.vendor}


_CACHE_BACKENDS = {
    "django_redis.cache.RedisCache": ("redis", "Redis"),
    "django.core.cache.backends.redis.RedisCache": ("redis", "Redis"),
    "django.core.cache.backends.locmem.LocMemCache": ("locmem", "local memory"),
}


def cache_backend() -> tuple[str, str]:
    """(short name, label) of the cache this process really uses, read from its settings."""
    backend = settings.CACHES["default"]["BACKEND"]
    return _CACHE_BACKENDS.get(backend, (backend.rsplit(".", 1)[-1], backend))


def check_cache():
    name = cache_backend()[0]
    if name == "redis" and settings.CACHES["default"]["BACKEND"].startswith("django_redis"):
        from django_redis import get_redis_connection

        get_redis_connection("default").ping()
        return {"backend": name}
    cache.set("readyz", 1, 5)
    if name == "redis" and cache.get("readyz") != 1:
        raise ConnectionError("cache write not readable")
    return {"backend": name}


def check_vectors():
    from memory.vector_index import get_vector_index

    index = get_vector_index()
    live = index.live_collection()
    return {"backend": type(index).__name__, "collection": live, "points": index.count() if live else 0}


def check_broker():
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return {"mode": "eager"}
    from config.celery import app

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=1)
    return {"mode": "worker"}


def check_vector_consumer():
    # Single node with the embedded shard: this process must be consuming the vector queue, or
    # projections wait (reported, not fatal: writes and recall still work). "degraded" when it holds
    # work and has consumed nothing for VECTOR_CONSUMER_STALL_SECONDS (config/consumer_watchdog.py).
    from config.consumer_watchdog import vector_consumer_health

    return vector_consumer_health()


def check_projection_lag():
    from memory.selectors import projection_lag

    return projection_lag()


def check_lagging_rows():
    from django.db.models import F

    from memory.models import Memory

    return {"lagging_memories": Memory.objects.filter(projected_version__lt=F("version")).count()}


def check_queues():
    from memory.selectors import queue_depths

    return {"queues": queue_depths()}


def check_warmup() -> dict:
    from memory.jobs.startup_warmup import warmup_status

    state = warmup_status()
    if state["status"] in ("loading", "failed"):
        raise RuntimeError(f"warm-up {state['status']}")
    return {"state": state["status"], **({"seconds": state["seconds"]} if "seconds" in state else {}),
            "settled": bool(state.get("settled"))}


def check_extraction():
    from memory.selectors import extraction_pending

    return extraction_pending()


def check_maintenance():
    from memory.jobs.scheduler_thread import maintenance_status

    return maintenance_status()


_probe_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="readyz-probe")
_probes: dict[str, Future] = {}
_probes_lock = threading.Lock()


def _probe(fn) -> dict:
    from django.db import close_old_connections

    try:
        return run_check(fn)
    finally:
        close_old_connections()  # a probe thread lives on; don't keep a connection it may never reuse


def run_checks_bounded(checks: dict, deadline: float) -> dict[str, Future]:
    """Start each check on a probe thread (or join the one still running) and return the futures;
    the caller waits for them until ``deadline`` (a time.monotonic() value)."""
    futures = {}
    with _probes_lock:
        for name, fn in checks.items():
            running = _probes.get(name)
            if running is None or running.done():
                running = _probes[name] = _probe_pool.submit(_probe, fn)
            futures[name] = running
    return futures


def collect_bounded(futures: dict[str, Future], deadline: float, timeout: float) -> dict[str, dict]:
    wait_futures(list(futures.values()), timeout=max(0.0, deadline - time.monotonic()))
    return {name: future.result() if future.done() else {"status": "timeout", "error": f"no answer within {timeout} s"}
            for name, future in futures.items()}


def readyz(request):
    from memory.jobs.startup_warmup import warmup_status

    timeout = float(settings.READYZ_TIMEOUT_SECONDS)
    deadline = time.monotonic() + timeout
    # Redis (cache and broker) first, on the probe threads; the database checks run meanwhile, here.
    futures = run_checks_bounded({"cache": check_cache, "broker": check_broker, "queues": check_queues,
                                  "maintenance": check_maintenance}, deadline)
    warmup = run_check(check_warmup)
    warm = warmup["status"] == "ok"
    if not warm:
        state = warmup_status()
        warmup.update(state=state["status"], **{k: v for k, v in state.items() if k != "status"})
    checks = {"warmup": warmup, "database": run_check(check_database),
              # Opening the index is part of the warm-up: don't race it from here.
              "vector_index": run_check(check_vectors) if warm else {"status": "loading"},
              "vector_consumer": run_check(check_vector_consumer)}
    lag = run_check(check_lagging_rows) if checks["database"]["status"] == "ok" else None
    if checks["database"]["status"] == "ok":
        checks["extraction"] = run_check(check_extraction)
    probed = collect_bounded(futures, deadline, timeout)
    checks.update(cache=probed["cache"], broker=probed["broker"], maintenance=probed["maintenance"])
    if lag is not None:
        queues = probed["queues"].get("queues") if probed["queues"]["status"] == "ok" else None
        lag.update(queue_depth=sum(queues.values()) if queues else None, queues=queues or {})
        checks["projection_lag"] = lag
    # Not ready while the models and the index load (the port answers meanwhile: /healthz is 200).
    # Once warm, the database is the only hard dependency: without it we answer 503; the rest degrade.
    ready = warm and checks["database"]["status"] == "ok"
    status = "ready" if ready else ("starting" if warmup.get("state") == "loading" else "unavailable")
    return JsonResponse({"status": status, "checks": checks}, status=200 if ready else 503)
