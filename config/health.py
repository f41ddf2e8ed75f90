"""Liveness and readiness probes. Readiness reports each dependency separately."""
import time

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


def check_warmup() -> dict:
    from memory.warmup import warmup_status

    state = warmup_status()
    if state["status"] in ("loading", "failed"):
        raise RuntimeError(f"warm-up {state['status']}")
    return {"state": state["status"], **({"seconds": state["seconds"]} if "seconds" in state else {}),
            "settled": bool(state.get("settled"))}


def check_extraction():
    from memory.selectors import extraction_pending

    return extraction_pending()


def check_maintenance():
    from memory.scheduler import maintenance_status

    return maintenance_status()


def readyz(request):
    from memory.warmup import warmup_status

    warmup = run_check(check_warmup)
    warm = warmup["status"] == "ok"
    if not warm:
        state = warmup_status()
        warmup.update(state=state["status"], **{k: v for k, v in state.items() if k != "status"})
    checks = {"warmup": warmup, "database": run_check(check_database), "cache": run_check(check_cache),
              # Opening the index is part of the warm-up: don't race it from here.
              "vector_index": run_check(check_vectors) if warm else {"status": "loading"},
              "broker": run_check(check_broker), "vector_consumer": run_check(check_vector_consumer)}
    if checks["database"]["status"] == "ok":
        checks["projection_lag"] = run_check(check_projection_lag)
        checks["extraction"] = run_check(check_extraction)
    checks["maintenance"] = run_check(check_maintenance)
    # Not ready while the models and the index load (the port answers meanwhile: /healthz is 200).
    # Once warm, the database is the only hard dependency: without it we answer 503; the rest degrade.
    ready = warm and checks["database"]["status"] == "ok"
    status = "ready" if ready else ("starting" if warmup.get("state") == "loading" else "unavailable")
    return JsonResponse({"status": status, "checks": checks}, status=200 if ready else 503)
