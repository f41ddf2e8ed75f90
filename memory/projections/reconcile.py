"""Reconcile MySQL against the vector index (DESIGN §5): find missing, stale and orphan points and fix
them in batches. MySQL is the truth; a run can be repeated at any time."""
from __future__ import annotations

import logging
from array import array
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np
from django.db.models import F
from django.utils import timezone

from memory.choices import MemoryStatus
from memory.models import Memory, VectorCollection
from memory.projections import rows as projections
from memory.projections.batch import (
    ROW_BATCH,
    SCROLL_PAGE,
    contains_sorted,
    keyset,
    point_pages,
    settle_inactive,
    single_flight,
)
from memory.vector_index import VectorIndex, get_vector_index
from memory.vectors import active_collection

logger = logging.getLogger(__name__)

LARGE_DRIFT = 10_000




@dataclass
class _Drift:
    missing: dict[int, int] = field(default_factory=dict)  # id -> row version
    stale: dict[int, int] = field(default_factory=dict)
    orphans: set[int] = field(default_factory=set)
    points: int = 0
    checked: int = 0


def _scan_points(index: VectorIndex, name: str, drift: _Drift, *, fix: bool, before: datetime,
                 page: int) -> np.ndarray:
    """Pass 1: every point against MySQL. Returns the sorted point ids (8 bytes per point)."""
    seen = array("q")
    for points in point_pages(index, name, page):
        ids = [pid for pid, _ in points]
        rows = {memory_id: (status, version, updated_at) for memory_id, status, version, updated_at in
                Memory.objects.filter(id__in=ids).order_by().values_list("id", "status", "version", "updated_at")}
        orphans = []
        for pid, payload in points:
            status, version, updated_at = rows.get(pid, (None, None, None))
            if updated_at is not None and updated_at >= before:
                continue  # written moments ago: its own memory_sync task is on the way
            if status != MemoryStatus.ACTIVE:
                orphans.append(pid)
            elif payload.get("version") != version:
                drift.stale[pid] = version
        if orphans and fix:
            index.delete(orphans, collection=name)
        drift.orphans.update(orphans)
        drift.points += len(ids)
        seen.extend(ids)
    return np.sort(np.frombuffer(seen, dtype=np.int64)) if seen else np.zeros(0, dtype=np.int64)


def _scan_rows(point_ids: np.ndarray, drift: _Drift, *, is_live: bool, before: datetime, batch: int) -> None:
    """Pass 2: every active row against the point ids, in id order."""
    # Rows written after `before` have their projection in flight; the next run judges them.
    rows_qs = Memory.objects.filter(status=MemoryStatus.ACTIVE, updated_at__lt=before)
    for rows in keyset(rows_qs, ("version", "projected_version"), batch):
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        present = contains_sorted(point_ids, ids)
        for (memory_id, version, projected), has_point in zip(rows, present):
            if not has_point:
                drift.missing[memory_id] = version
            elif is_live and projected < version:
                drift.stale.setdefault(memory_id, version)
        drift.checked += len(rows)


def _count_lagging_inactive(drift: _Drift, before: datetime, batch: int) -> int:
    """Pass 3 (live collection): non-active rows not yet recorded as removed (their point is already
    gone, or counted as an orphan). Returns how many of them are not orphans."""
    lagging = Memory.objects.exclude(status=MemoryStatus.ACTIVE).filter(projected_version__lt=F("version"), updated_at__lt=before)
    count = 0
    for rows in keyset(lagging, (), batch):
        count += sum(1 for (memory_id,) in rows if memory_id not in drift.orphans)
    return count


def projections_reconcile(*, collection: str | None = None, fix: bool = True, grace_seconds: int = 0,
                          batch: int = ROW_BATCH) -> dict:
    """Compare MySQL with a collection (default: the live one) and report, or fix, the drift.

    missing: an active memory without a point; stale: a point whose payload version differs from
    the row, or (live collection) a row whose projected_version lags its version; orphan: a point
    whose id is not an active memory. Fixing upserts missing/stale through ``memory_sync`` and
    deletes orphans. ``grace_seconds`` leaves rows written that recently to their own tasks.
    """
    index = get_vector_index()
    live = active_collection()
    name = collection or live
    is_live = name == live
    target = VectorCollection.objects.get(name=name)
    index.ensure_collection(name, target.dim)  # a dropped collection reads as "everything missing"
    before = timezone.now() - timedelta(seconds=grace_seconds)
    drift = _Drift()
    point_ids = _scan_points(index, name, drift, fix=fix, before=before, page=SCROLL_PAGE)
    _scan_rows(point_ids, drift, is_live=is_live, before=before, batch=batch)
    lagging_inactive = _count_lagging_inactive(drift, before, batch) if is_live else 0
    counts = {"collection": name, "checked": drift.checked, "points": drift.points, "missing": len(drift.missing),
              "stale": len(drift.stale) + lagging_inactive, "orphan": len(drift.orphans), "fixed": 0}
    if fix:
        counts["fixed"] = _fix(drift, name if not is_live else None) + len(drift.orphans)
        if is_live:
            counts["fixed"] += settle_inactive(batch, before=before, uncounted=drift.orphans)
            if index.live_collection() != name:
                index.set_live(name)  # the DB row is the truth for which collection is live
    logger.info("reconcile collection=%s %s", name, {k: v for k, v in counts.items() if k != "collection"})
    return counts


RECONCILE_GRACE_SECONDS = 30  # rows written this recently are left to their own memory_sync tasks
RECONCILE_LOCK_SECONDS = 15 * 60


def projections_reconcile_once(*, collection: str | None = None, fix: bool = True) -> dict:
    """The scheduled reconcile (beat's task, the embedded scheduler): one run at a time across processes."""
    with single_flight("projections_reconcile", timeout=RECONCILE_LOCK_SECONDS) as acquired:
        if not acquired:
            return {"skipped": "already running"}
        return projections_reconcile(collection=collection, fix=fix, grace_seconds=RECONCILE_GRACE_SECONDS)


def _fix(drift: _Drift, collection_name: str | None) -> int:
    if len(drift.missing) + len(drift.stale) > LARGE_DRIFT:
        # Per-row repair costs a few ms a row; the bulk path does the same work far faster.
        logger.warning("reconcile: %d rows to repair one by one; rebuild_projections is faster for this",
                       len(drift.missing) + len(drift.stale))
    fixed = 0
    for memory_id, version in {**drift.missing, **drift.stale}.items():
        outcome = projections.memory_sync(memory_id=memory_id, version=version, collection_name=collection_name)
        fixed += outcome in ("upserted", "deleted")
    return fixed
