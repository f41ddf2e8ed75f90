"""The operator dashboard: the console's landing page (admin index).

Current figures come from the sources themselves (dependency checks, backlog counts); the charts
come from console.MetricSample rows (console/metrics_history.py), bucketed over a chosen window.
Opening the page takes a sample of this process when the last one is older than METRICS_SAMPLE_SECONDS.
"""
from __future__ import annotations

import logging
from collections import defaultdict
from datetime import datetime, timedelta

from django.conf import settings
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone

from config import health
from console.charts import line_chart, status_strip
from console.metrics_history import BUCKETS, metrics_sample
from console.models import MetricSample
from memory.selectors import backlog_counts as backlog
from memory.selectors.memories import conflicts_open_count

logger = logging.getLogger(__name__)

WINDOWS_HOURS = (1, 6, 24, 48)
BUCKETS_PER_CHART = 60
TOP_ROUTES = 5
GAUGES = [  # key in MetricSample.gauges, title, list behind it
    ("projection_lag", "Projection lag (memories behind their version)", "projection"),
    ("extraction_backlog", "Extraction backlog (messages older than 60 s, not extracted)", "extraction"),
    ("forget_pending", "Pending forget requests", "forget"),
    ("conflicts_open", "Open conflicts", "conflicts"),
]
DEPENDENCIES = ["database", "cache", "vector_index", "broker"]


def _links() -> dict[str, str]:
    return {
        "projection": reverse("admin:memory_memory_changelist") + "?projection=lagging",
        "extraction": reverse("admin:conversations_message_changelist") + "?extraction=pending",
        "forget": reverse("admin:memory_forgetrequest_changelist") + "?status__exact=pending",
        "conflicts": reverse("console:conflicts"),
    }


def quantile(buckets: list[float], q: float) -> float | None:
    """histogram_quantile over cumulative bucket counts (upper bounds BUCKETS), in seconds."""
    total = buckets[-1] if buckets else 0
    if total <= 0:
        return None
    rank = q * total
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in zip(BUCKETS, buckets):
        if count >= rank:
            if bound == float("inf"):
                return lower_bound
            width = count - lower_count
            return lower_bound + (bound - lower_bound) * ((rank - lower_count) / width if width else 1)
        lower_bound, lower_count = bound, count
    return lower_bound


def metric_series(*, hours: int, now: datetime | None = None) -> dict:
    """Bucketed series of the last `hours`: gauges (last value per bucket), dependencies, and per route
    request rate (per minute), server-error rate (%) and p95 latency (ms), summed over processes."""
    now = now or timezone.now()
    start = now - timedelta(hours=hours)
    step = max(timedelta(seconds=max(settings.METRICS_SAMPLE_SECONDS, 1)), timedelta(hours=hours) / BUCKETS_PER_CHART)
    count = int((now - start) / step) + 1
    times = [start + i * step for i in range(count)]
    gauges: dict[str, list] = {key: [None] * count for key, _, _ in GAUGES}
    deps: dict[str, list] = {name: [None] * count for name in DEPENDENCIES}
    routes: dict[str, list] = defaultdict(lambda: [None] * count)
    width = 4 + len(BUCKETS)
    rows = MetricSample.objects.filter(at__gte=start, at__lte=now).order_by("at", "id").values_list("at", "gauges", "routes")
    for at, sample_gauges, sample_routes in rows.iterator():
        i = min(count - 1, int((at - start) / step))
        for key in gauges:
            if key in sample_gauges:
                gauges[key][i] = sample_gauges[key]
        for name, up in (sample_gauges.get("up") or {}).items():
            if name in deps:
                deps[name][i] = up if deps[name][i] is None else min(deps[name][i], up)
        for route, values in sample_routes.items():
            cell = routes[route][i]
            routes[route][i] = [a + b for a, b in zip(cell, values)] if cell else list(values[:width])
    totals = sorted(((sum(c[0] for c in cells if c), route) for route, cells in routes.items()), reverse=True)
    # Charts show the service's endpoints; the console's own pages (slow first loads) and static files
    # are in the table only.
    charted = [route for _, route in totals
               if not route.split(" ", 1)[-1].startswith("admin/") and route.split(" ", 1)[-1] != "static"]
    top = (charted or [route for _, route in totals])[:TOP_ROUTES]
    minutes = step.total_seconds() / 60
    table = []
    for n, route in totals:
        cells = [c for c in routes[route] if c]
        summed = [sum(col) for col in zip(*cells)]
        p95 = quantile(summed[4:], 0.95)
        table.append({"route": route, "requests": int(n), "client_errors": int(summed[1]), "server_errors": int(summed[2]),
                      "error_pct": round(100 * summed[2] / n, 2) if n else 0.0,
                      "mean_ms": round(1000 * summed[3] / n, 1) if n else None,
                      "p95_ms": round(1000 * p95, 1) if p95 is not None else None})

    def per_route(fn) -> list[tuple[str, list]]:
        return [(route, [fn(c) if c else None for c in routes[route]]) for route in top]

    return {
        "times": times, "step": step, "hours": hours, "samples": rows.count(),
        "gauges": gauges, "deps": deps, "routes": table,
        "rate": per_route(lambda c: round(c[0] / minutes, 2)),
        "errors": per_route(lambda c: round(100 * c[2] / c[0], 2) if c[0] else 0.0),
        "p95": per_route(lambda c: (lambda q: round(1000 * q, 1) if q is not None else None)(quantile(c[4:], 0.95))),
    }


def _current() -> dict:
    checks = {"database": health.run_check(health.check_database), "cache": health.run_check(health.check_cache),
              "vector_index": health.run_check(health.check_vectors), "broker": health.run_check(health.check_broker)}
    figures = {}
    if checks["database"]["status"] == "ok":
        b = backlog()
        figures = {"projection_lag": b["lagging"], "extraction_backlog": b["unextracted"],
                   "forget_pending": b["forget_pending"],
                   "conflicts_open": conflicts_open_count()}
    return {"checks": checks, "figures": figures}


def dashboard_view(request, site, extra_context=None):
    try:
        metrics_sample()  # at most one per METRICS_SAMPLE_SECONDS in this process
    except Exception as exc:  # the page shows what is stored; a failed sample must not hide it
        logger.warning("dashboard: metrics sample failed (%s)", type(exc).__name__)
    hours = int(request.GET["hours"]) if request.GET.get("hours", "").isdigit() and \
        int(request.GET["hours"]) in WINDOWS_HOURS else 6
    data = metric_series(hours=hours)
    current = _current()
    links = _links()
    times = data["times"]
    gauge_cards = [{"key": key, "title": title, "link": links[link], "now": current["figures"].get(key),
                    "chart": line_chart([(key.replace("_", " "), data["gauges"][key])], times=times)}
                   for key, title, link in GAUGES]
    context = {
        **site.each_context(request), "title": "Dashboard", "subtitle": None,
        "checks": current["checks"], "gauge_cards": gauge_cards, "hours": hours, "windows": WINDOWS_HOURS,
        "step_seconds": int(data["step"].total_seconds()), "samples": data["samples"],
        "deps": status_strip([(name.replace("_", " "), data["deps"][name]) for name in DEPENDENCIES]),
        "rate_chart": line_chart(data["rate"], times=times, unit="req/min"),
        "error_chart": line_chart(data["errors"], times=times, unit="% 5xx"),
        "latency_chart": line_chart(data["p95"], times=times, unit="ms p95"),
        "routes": data["routes"], "app_list": site.get_app_list(request),
        **(extra_context or {}),
    }
    request.current_app = site.name
    return TemplateResponse(request, "console/dashboard.html", context)
