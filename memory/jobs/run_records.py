"""Last run of each maintenance job, wherever it ran (the web process's scheduler thread, or a
Celery worker under beat), kept in the shared cache so `/readyz` and the console can show it.

Kept in the cache, not the database: a record is a status line, not data (losing it with a Redis
restart only blanks the display until the next run), and the embedded default should not add a
write to SQLite's single write lock every few seconds for it.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.core.cache import cache
from django.utils import timezone

logger = logging.getLogger(__name__)

__all__ = ["JOB_NAMES", "maintenance_run", "maintenance_runs"]

# Every job that records its runs, in display order.
JOB_NAMES = ("extraction_resume", "projections_resume", "projections_reconcile", "memories_expire", "memories_evict",
             "sqlite_analyze", "reembed", "llm_review")
RECORD_TTL_SECONDS = 7 * 24 * 3600
_local: dict[str, dict] = {}  # this process's own runs, shown even when the cache is unreachable


def _key(name: str) -> str:
    return f"maintenance:last:{name}"


def _summary(result: Any) -> Any:
    if isinstance(result, (int, float, str, bool)) or result is None:
        return result
    if isinstance(result, dict):
        return {str(k): v for k, v in result.items() if isinstance(v, (int, float, str, bool)) or v is None}
    return str(result)[:200]


def maintenance_run(name: str, fn: Callable[[], Any], *, where: str) -> Any:
    """Run one job and record start, duration, result or error. The error is re-raised."""
    started_at, started = timezone.now(), time.perf_counter()
    record: dict[str, Any] = {"last_run_at": started_at.isoformat(), "where": where}
    try:
        result = fn()
        record.update(ok=True, result=_summary(result))
        return result
    except Exception as exc:
        record.update(ok=False, error=type(exc).__name__)
        raise
    finally:
        record["seconds"] = round(time.perf_counter() - started, 3)
        _local[name] = record
        try:
            cache.set(_key(name), record, RECORD_TTL_SECONDS)
        except Exception as exc:  # the cache is a display here; never fail the job for it
            logger.warning("maintenance run record for %s not stored: %s", name, type(exc).__name__)


def maintenance_runs() -> dict[str, dict | None]:
    """Selector: the last recorded run of every job (None: never ran, or its record was lost)."""
    try:
        stored = cache.get_many([_key(name) for name in JOB_NAMES])
    except Exception:
        stored = {}
    runs = {}
    for name in JOB_NAMES:
        candidates = [r for r in (stored.get(_key(name)), _local.get(name)) if r]
        runs[name] = max(candidates, key=lambda r: r["last_run_at"]) if candidates else None
    return runs
