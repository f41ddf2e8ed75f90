"""Where a served request's time goes, as a `Server-Timing` response header (W3C Server Timing).

Off by default (`SERVER_TIMING`): durations tell a caller how much work its request caused, which an
operator may not want to publish. When on, `ServerTimingMiddleware` (outermost, so `app` covers every
middleware) opens a per-request record, views add to it, and the header lists what they added plus
`app`, the whole time inside Django:

    Server-Timing: pre_view;dur=1.68, view;dur=9.10, recall_embed;dur=4.58, ..., recall_total;dur=7.15, app;dur=11.09

A served request's time minus `app` is the server's own (HTTP parsing, the thread hand-off, writing)
and the network's. `bench.recall --server-timing` reports these per language.

Views call `since_start`/`add` unconditionally: with the setting off no record is open and each call
is one context-variable read. The record holds names and milliseconds only, never request content.
"""
import time
from contextvars import ContextVar

_record: ContextVar[tuple[float, dict[str, float]] | None] = ContextVar("server_timing", default=None)


def since_start(name: str) -> None:
    """Record the time from the start of the request to now under `name` (e.g. `pre_view`: the
    middleware, authentication and throttling before a view runs)."""
    record = _record.get()
    if record is not None:
        record[1][name] = (time.perf_counter() - record[0]) * 1000


def add(name: str, milliseconds: float) -> None:
    """Record a duration measured by the caller (a view's stage, a pipeline's own timings)."""
    record = _record.get()
    if record is not None:
        record[1][name] = milliseconds


def header_value(entries: dict[str, float], app_ms: float) -> str:
    parts = [f"{name};dur={ms:.2f}" for name, ms in entries.items()]
    parts.append(f"app;dur={app_ms:.2f}")
    return ", ".join(parts)


def parse(value: str | None) -> dict[str, float]:
    """A header `header_value` wrote, as {name: ms} in its order (for clients: `bench.recall`)."""
    out = {}
    for entry in (value or "").split(","):
        name, _, duration = entry.strip().partition(";dur=")
        if name and duration:
            out[name] = float(duration)
    return out


class ServerTimingMiddleware:
    """Installed only when `SERVER_TIMING` is on (config/settings.py): otherwise not in the stack at all."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        token = _record.set((started, {}))
        try:
            response = self.get_response(request)
            entries = _record.get()[1]
            response["Server-Timing"] = header_value(entries, (time.perf_counter() - started) * 1000)
            return response
        finally:
            _record.reset(token)
