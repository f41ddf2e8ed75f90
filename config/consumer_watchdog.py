"""The watchdog of the in-web vector consumer (config/vector_consumer.py), and what `/readyz` says of it.

A consumer can stop without dying: after a broker error its channel may be closed while its thread
sits in Celery's event loop, alive and idle, and the vector queue fills (issue 42: 21 tasks and 274
memories waited until the web process was restarted, while readiness said "ok"). A live thread proves
nothing, so the watchdog looks at what the consumer does:

- every few seconds it reads the vector queue's depth (the broker's timeouts and breaker apply: a
  stalled broker costs one short timeout, then fails at once);
- the consumer holds work when messages wait in its queue; it is *stalled* when it has held work
  for VECTOR_CONSUMER_STALL_SECONDS without starting or finishing a task (a task that runs long, a
  rebuild say, is busy, not stalled);
- a stalled consumer, or a dead consumer thread, is replaced by a fresh one (new connection).

`/readyz` and the console's health page report the consumer as ``degraded`` while it is stalled or
while the broker cannot be read (then nothing can be consumed either), with the reason, the depth,
the seconds since the last delivery and the restarts so far. Degraded is not "not ready": writes and
recall still work (recall finds new memories by keyword until their vectors land).
"""
from __future__ import annotations

import logging
import threading
import time

from config import vector_consumer

logger = logging.getLogger(__name__)

__all__ = ["start_watchdog", "stop_watchdog", "vector_consumer_health", "watchdog_tick"]

_stop = threading.Event()
_thread: threading.Thread | None = None
# The last sample: queue depth (None when the broker could not be read), when it was taken, since when
# messages have been waiting without a delivery, and the error of a failed read.
sample: dict = {"depth": None, "at": None, "waiting_since": None, "error": None}


def _stall_seconds() -> float:
    from django.conf import settings

    return float(settings.VECTOR_CONSUMER_STALL_SECONDS)


def _interval() -> float:
    return max(1.0, min(5.0, _stall_seconds() / 4))


def _read_depth() -> int:
    from django.conf import settings

    from memory.selectors import queue_depths

    return int(queue_depths().get(settings.CELERY_VECTOR_QUEUE, 0))


def stalled_for(now: float) -> float:
    """Seconds the consumer has held work without a delivery (0 when it holds none or is busy)."""
    progress = vector_consumer.progress
    if not sample["depth"] or progress["running_since"] is not None or sample["waiting_since"] is None:
        return 0.0
    return max(0.0, now - max(sample["waiting_since"], progress["at"]))


def watchdog_tick(now: float | None = None) -> str | None:
    """One look at the consumer; restarts it when it is dead or stalled. Returns the restart reason."""
    now = time.monotonic() if now is None else now
    if not vector_consumer.consumer_alive():
        reason = "consumer thread not running"
    else:
        try:
            depth, error = _read_depth(), None
        except Exception as exc:  # broker unreachable: nothing to judge, nothing a restart would fix
            depth, error = None, type(exc).__name__
        if depth:
            sample["waiting_since"] = sample["waiting_since"] or now
        else:
            sample["waiting_since"] = None
        sample.update(depth=depth, at=now, error=error)
        held = stalled_for(now)
        if held <= _stall_seconds():
            return None
        reason = f"no delivery for {held:.0f} s while {depth} message(s) wait"
    vector_consumer.restart_vector_consumer(reason)
    sample["waiting_since"] = time.monotonic() if sample["depth"] else None
    return reason


def _loop() -> None:
    while not _stop.is_set():
        try:
            watchdog_tick()
        except Exception:  # the watchdog must outlive whatever it watches
            logger.exception("vector consumer watchdog tick failed")
        _stop.wait(_interval())


def start_watchdog() -> bool:
    global _thread
    if _thread is not None and _thread.is_alive():
        return False
    _stop.clear()
    _thread = threading.Thread(target=_loop, name="vector-consumer-watchdog", daemon=True)
    _thread.start()
    return True


def stop_watchdog() -> None:
    global _thread
    _stop.set()
    if _thread is not None:
        _thread.join(timeout=10)
    _thread = None


def vector_consumer_health() -> dict:
    """For `/readyz` and the console: is this process consuming the vector queue, and keeping up?

    Raises when the consumer thread is not running. ``status: degraded`` with a ``reason`` when it
    has held work for VECTOR_CONSUMER_STALL_SECONDS without a delivery, when the broker cannot be
    read, or when the watchdog has stopped sampling. Reads no backend: the watchdog's last sample."""
    from django.conf import settings

    if not vector_consumer.vector_consumer_enabled():
        return {"in_web": False}
    if not vector_consumer.consumer_alive():
        raise RuntimeError("vector consumer not running")
    now = time.monotonic()
    progress = vector_consumer.progress
    report = {"in_web": True, "queue": settings.CELERY_VECTOR_QUEUE, "depth": sample["depth"],
              "seconds_since_delivery": round(now - progress["at"], 1), "stall_after_seconds": _stall_seconds(),
              "restarts": progress["restarts"]}
    if progress["running_since"] is not None:
        report.update(running=progress["task"], running_seconds=round(now - progress["running_since"], 1))
    if progress["last_restart"]:
        report["last_restart"] = progress["last_restart"]["reason"]
    reason = None
    if _thread is None or not _thread.is_alive() or sample["at"] is None or now - sample["at"] > 3 * _interval() + 2:
        reason = "watchdog not sampling"
    elif sample["error"] is not None:
        reason = f"broker unreachable ({sample['error']})"
    elif stalled_for(now) > _stall_seconds():
        reason = f"holds {sample['depth']} message(s), no delivery for {stalled_for(now):.0f} s"
    if reason:
        report.update(status="degraded", reason=reason)
    return report
