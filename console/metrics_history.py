"""The small time series behind the dashboard's charts: samples of the data behind /metrics
(config/metrics.py), stored as console.MetricSample rows.

`metrics_sample()` is the one entry point. It is called by the beat job (memory/jobs/beat_schedule.py,
`console.tasks.metrics_sample_task`), by the web process's sampler thread (config/wsgi.py), by
any embedded scheduler, and by the dashboard on request. It takes at most one sample per process per
METRICS_SAMPLE_SECONDS (later calls return None), so several callers never double the data.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
import time
from datetime import timedelta

from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

from config.metrics import LATENCY, REQUESTS
from console.models import MetricSample
from memory.selectors import backlog_counts as backlog
from memory.selectors.memories import conflicts_open_count

logger = logging.getLogger(__name__)

__all__ = ["metrics_sample", "start_sampler_thread", "BUCKETS"]

BUCKETS: tuple[float, ...] = tuple(LATENCY._upper_bounds)  # includes +Inf last
_lock = threading.Lock()
_state: dict = {"last": None, "totals": {}, "pid": None}


def _process_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"[:100]


def _http_totals() -> dict[str, list[float]]:
    """Cumulative figures of this process per "METHOD route": requests, 4xx, 5xx, latency sum, buckets."""
    totals: dict[str, list[float]] = {}

    def row(key: str) -> list[float]:
        return totals.setdefault(key, [0.0] * (4 + len(BUCKETS)))

    for family in REQUESTS.collect():
        for sample in family.samples:
            if not sample.name.endswith("_total"):
                continue
            labels = sample.labels
            values = row(f"{labels['method']} {labels['route']}")
            values[0] += sample.value
            status = labels["status"]
            if status.startswith("4"):
                values[1] += sample.value
            elif status.startswith("5"):
                values[2] += sample.value
    for family in LATENCY.collect():
        for sample in family.samples:
            labels = sample.labels
            key = f"{labels['method']} {labels['route']}"
            if sample.name.endswith("_sum"):
                row(key)[3] += sample.value
            elif sample.name.endswith("_bucket"):
                bound = float(labels["le"])
                row(key)[4 + BUCKETS.index(bound)] += sample.value
    return totals


def _deltas(current: dict, previous: dict) -> dict[str, list[float]]:
    out = {}
    for key, values in current.items():
        before = previous.get(key) or [0.0] * len(values)
        delta = [round(a - b, 6) for a, b in zip(values, before)]
        if delta[0] > 0:
            out[key] = delta
    return out


def _check(name: str, fn) -> int:
    try:
        fn()
        return 1
    except Exception as exc:  # a sample reports a dependency as down, it never fails on it
        logger.info("metrics sample: %s down (%s)", name, type(exc).__name__)
        return 0


def _gauges() -> dict:
    from config import health
    from memory.selectors import queue_depths
    from memory.vector_index import may_open_vector_index

    gauges: dict = {}
    deps = {"database": _check("database", health.check_database), "cache": _check("cache", health.check_cache),
            "broker": _check("broker", health.check_broker)}
    if may_open_vector_index():  # a worker that must leave the embedded shard to its owner cannot tell
        deps["vector_index"] = _check("vector index", health.check_vectors)
    gauges["up"] = deps
    if deps["database"]:
        figures = backlog()
        gauges.update({
            "projection_lag": figures["lagging"],
            "extraction_backlog": figures["unextracted"],
            "forget_pending": figures["forget_pending"],
            "forget_approved": figures["forget_approved"],
            "conflicts_open": conflicts_open_count(),
        })
    try:
        gauges["queues"] = queue_depths()
    except Exception as exc:
        logger.info("metrics sample: queue depths unreadable (%s)", type(exc).__name__)
    return gauges


def metrics_sample(*, force: bool = False, gauges: bool = True) -> MetricSample | None:
    """Store one sample of this process (HTTP deltas since its previous sample, and the gauges), and
    prune rows older than METRICS_HISTORY_HOURS. None when this process sampled less than
    METRICS_SAMPLE_SECONDS ago (unless `force`)."""
    with _lock:
        if _state["pid"] != os.getpid():  # a forked child starts its own series
            _state.update(last=None, totals={}, pid=os.getpid())
        now = time.monotonic()
        if not force and _state["last"] is not None and now - _state["last"] < settings.METRICS_SAMPLE_SECONDS:
            return None
        _state["last"] = now
        previous, current = _state["totals"], _http_totals()
        _state["totals"] = current
    try:
        sample = MetricSample.objects.create(at=timezone.now(), process=_process_name(),
                                             gauges=_gauges() if gauges else {}, routes=_deltas(current, previous))
        MetricSample.objects.filter(at__lt=timezone.now() - timedelta(hours=settings.METRICS_HISTORY_HOURS)).delete()
    except Exception:
        with _lock:  # not stored: the next sample carries these requests
            _state["totals"] = previous
        raise
    logger.debug("metrics sample id=%s routes=%s", sample.id, len(sample.routes))
    return sample


_thread: threading.Thread | None = None


def _sampler_loop(stop: threading.Event) -> None:
    while not stop.wait(settings.METRICS_SAMPLE_SECONDS):
        try:
            metrics_sample()
        except Exception as exc:
            logger.warning("metrics sampler: sample failed (%s)", type(exc).__name__)
        finally:
            close_old_connections()


def start_sampler_thread() -> bool:
    """In a web process: sample its HTTP counters every METRICS_SAMPLE_SECONDS (they exist only in this
    process; a beat job in a worker sees the worker's). Off with METRICS_SAMPLE_SECONDS = 0."""
    global _thread
    if settings.METRICS_SAMPLE_SECONDS <= 0 or (_thread is not None and _thread.is_alive()):
        return False
    _thread = threading.Thread(target=_sampler_loop, args=(threading.Event(),), name="metrics-sampler", daemon=True)
    _thread.start()
    return True
