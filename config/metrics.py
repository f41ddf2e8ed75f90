"""Prometheus metrics at /metrics: request counts and latencies per route, and the backlogs an
operator alerts on (projection lag, queue depth, unextracted messages, pending forgets), read from
MySQL and the broker at scrape time so they can never drift from the truth.

Routes are labelled by their URL pattern, never the path: ids stay out of the labels and the label
set stays bounded. Nothing here reads message or memory text.
"""
import hmac
import logging
import time

from django.conf import settings
from django.http import HttpResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily

logger = logging.getLogger(__name__)

REGISTRY = CollectorRegistry(auto_describe=False)
REQUESTS = Counter("memsvc_http_requests", "HTTP requests answered", ["route", "method", "status"], registry=REGISTRY)
LATENCY = Histogram("memsvc_http_request_seconds", "HTTP request latency", ["route", "method"], registry=REGISTRY,
                    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))


def backlog() -> dict[str, int]:
    from memory.selectors import backlog_counts

    return backlog_counts()


def _vector_index() -> int:
    from memory.vector_index import get_vector_index

    index = get_vector_index()
    return index.count() if index.live_collection() else 0


def _database_families() -> list[GaugeMetricFamily]:
    figures = backlog()
    forget = GaugeMetricFamily("memsvc_forget_requests", "Forget requests not yet executed", labels=["status"])
    forget.add_metric(["pending"], figures["forget_pending"])
    forget.add_metric(["approved"], figures["forget_approved"])
    return [GaugeMetricFamily("memsvc_projection_lagging_memories",
                              "Memories whose projected version is behind their version", value=figures["lagging"]),
            GaugeMetricFamily("memsvc_messages_pending_extraction",
                              "Messages older than 60 s whose extraction has not run", value=figures["unextracted"]),
            forget]


def _broker_families() -> list[GaugeMetricFamily]:
    from memory.selectors import queue_depths

    queue = GaugeMetricFamily("memsvc_queue_depth", "Tasks waiting in a broker queue", labels=["queue"])
    for name, depth in queue_depths().items():
        queue.add_metric([name], depth)
    return [queue]


def _vector_index_families() -> list[GaugeMetricFamily]:
    return [GaugeMetricFamily("memsvc_vector_points", "Points in the live vector collection", value=_vector_index())]


# The `source` label of memsvc_source_up, and how to read that source's families.
_SOURCES = (("database", _database_families), ("broker", _broker_families), ("vector_index", _vector_index_families))


class BacklogCollector:
    """Each source is read on its own: one failing (broker down) leaves the others reported and
    sets its `memsvc_source_up` to 0."""

    def collect(self):
        up = GaugeMetricFamily("memsvc_source_up", "Whether a metrics source could be read", labels=["source"])
        started = time.perf_counter()
        for source, read in _SOURCES:
            try:
                families = read()
            except Exception as exc:
                logger.warning("metrics: %s source failed: %s", source.replace("_", " "), type(exc).__name__)
                up.add_metric([source], 0)
                continue
            up.add_metric([source], 1)
            yield from families
        yield up
        yield GaugeMetricFamily("memsvc_scrape_seconds", "Time spent reading the backlog sources",
                                value=time.perf_counter() - started)


REGISTRY.register(BacklogCollector())


class MetricsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        if match is not None:
            route = match.route
        else:  # WhiteNoise answers static files before URL resolution: keep them apart from real 404s
            route = "static" if request.path.startswith(f"/{settings.STATIC_URL.strip('/')}/") else "unmatched"
        if route != "metrics":
            LATENCY.labels(route, request.method).observe(time.perf_counter() - started)
            REQUESTS.labels(route, request.method, str(response.status_code)).inc()
        return response


def metrics(request):
    token = settings.METRICS_TOKEN
    if token:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(given.encode(), token.encode()):
            return HttpResponse("metrics token required\n", status=401, content_type="text/plain")
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)
