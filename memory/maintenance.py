"""Projection maintenance (DESIGN §5): reconcile MySQL against the vector index, rebuild the live
collection from MySQL, re-embed into a new collection and switch to it, resume lost queued work.

MySQL is the truth; everything here makes the index match it and can be rerun at any time. Work
goes in batches (index scroll pages, keyset-paginated ``values_list`` chunks, bulk upserts), so a
run over 1M memories issues a few thousand queries, never one per row; per-row ``memory_sync``
is kept for the drift a run finds.

Topology: the embedded shard is owned by one process, and only that process may call these
functions (the reconcile beat task must be routed to it; a management command run beside a server
that holds the shard fails with "vector index unavailable"). See docs/architecture.md, Topologies.
"""
from __future__ import annotations

import logging
import time
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from memory import projections
from memory.cache import memory_cache
from memory.embeddings import Embedder, collection_name_for, get_embedder
from memory.enqueue import FORGET_REQUEST_EXECUTE, MESSAGES_EXTRACT, enqueue, tasks_eager
from memory.models import LIVE_CACHE_SECONDS, EntityLink, ForgetRequest, Memory, MemoryEmbedding, VectorCollection
from memory.vector_index import VectorIndex, VectorPoint, get_vector_index
from memory.vectors import active_collection, from_bytes, to_bytes

__all__ = [
    "BatchResult",
    "DimensionMismatch",
    "extraction_resume",
    "memories_sync_batch",
    "projections_rebuild",
    "projections_reconcile",
    "reembed",
    "resume_age_seconds",
    "single_flight",
]

logger = logging.getLogger(__name__)

Progress = Callable[[int, int], None]

SCROLL_PAGE = 1000
LARGE_DRIFT = 10_000
ROW_BATCH = 2000
# updated_at is written by the clock of whichever process saved the row; look back this far when
# catching up so a writer whose clock runs a little behind ours is not missed (extra rows are harmless).
CLOCK_SKEW = timedelta(seconds=5)
MAX_CATCH_UP_PASSES = 5
SWITCH_SETTLE_SECONDS = 1.0
RESUME_CHUNK = 50
# While the default queue holds a backlog, a message this old lost its task: younger ones are usually
# still waiting in the queue, and re-queueing them only lengthens it (the broker also redelivers
# unacknowledged tasks after its visibility timeout). With an empty queue (or eager tasks) nothing
# can be waiting, so EXTRACTION_RESUME_AFTER_SECONDS applies (docs/reliability.md, Pending extraction).
RESUME_AFTER_SECONDS = 600


class DimensionMismatch(ValueError):
    """An embedder's vectors do not fit the collection; raised before anything reaches the index."""


# =============================================================================================
# Batches
# =============================================================================================


def _keyset(qs: QuerySet, fields: Sequence[str], batch: int) -> Iterator[list[tuple]]:
    """(id, *fields) rows in id order, one query per batch: OFFSET would rescan, id > last does not."""
    last = 0
    while True:
        rows = list(qs.filter(id__gt=last).order_by("id").values_list("id", *fields)[:batch])
        if not rows:
            return
        yield rows
        last = rows[-1][0]


def _row_batches(qs: QuerySet, batch: int) -> Iterator[list[Memory]]:
    """Model rows in id order (keyset, as above), for work that needs whole rows."""
    last = 0
    while True:
        rows = list(qs.filter(id__gt=last).order_by("id")[:batch])
        if not rows:
            return
        yield rows
        last = rows[-1].id


def _point_pages(index: VectorIndex, name: str, page: int) -> Iterator[list[tuple[int, dict[str, Any]]]]:
    buffer: list[tuple[int, dict[str, Any]]] = []
    for point in index.scroll(collection=name, batch=page):
        buffer.append(point)
        if len(buffer) >= page:
            yield buffer
            buffer = []
    if buffer:
        yield buffer


def _contains(sorted_ids: np.ndarray, ids: np.ndarray) -> np.ndarray:
    if sorted_ids.size == 0:
        return np.zeros(ids.shape, dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_ids, ids), sorted_ids.size - 1)
    return sorted_ids[pos] == ids


def _check_dim(actual: int, collection: VectorCollection, what: str) -> None:
    if actual != collection.dim:
        raise DimensionMismatch(f"{what} has dimension {actual}, collection {collection.name} expects {collection.dim}")


@dataclass
class BatchResult:
    upserted: int = 0
    encoded: int = 0
    # (id, current version) of rows that changed while the batch ran: the caller re-syncs them,
    # because the point just written may carry the older version.
    changed: list[tuple[int, int]] = field(default_factory=list)
    inactive: list[int] = field(default_factory=list)  # asked for, but not active when loaded
    users: set[tuple[int, str]] = field(default_factory=set)


def _stored_vectors(ids: list[int], model_id: str) -> dict[int, tuple[int, np.ndarray]]:
    rows = (MemoryEmbedding.objects.filter(memory_id__in=ids, model_id=model_id)
            .values_list("memory_id", "version", "vector"))
    return {memory_id: (version, from_bytes(blob)) for memory_id, version, blob in rows}


def _store_vectors(rows: list[Memory], vectors: np.ndarray, model_id: str) -> None:
    objs = [MemoryEmbedding(memory_id=m.id, model_id=model_id, version=m.version, vector=to_bytes(v))
            for m, v in zip(rows, vectors)]
    options: dict[str, Any] = {"update_conflicts": True, "update_fields": ["version", "vector"]}
    if connection.features.supports_update_conflicts_with_target:  # SQLite/PostgreSQL; MySQL infers the key
        options["unique_fields"] = ["memory", "model_id"]
    MemoryEmbedding.objects.bulk_create(objs, **options)


def _entity_ids(ids: list[int]) -> dict[int, list[int]]:
    links: dict[int, list[int]] = defaultdict(list)
    for memory_id, entity_id in EntityLink.objects.filter(memory_id__in=ids).values_list("memory_id", "entity_id"):
        links[memory_id].append(entity_id)
    return links


def _mark_projected(rows: list[Memory]) -> None:
    # Only where the row still has the version we wrote: a newer write keeps its own lag.
    by_version: dict[int, list[int]] = defaultdict(list)
    for m in rows:
        by_version[m.version].append(m.id)
    for version, ids in by_version.items():
        Memory.objects.filter(id__in=ids, version=version, projected_version__lt=version).update(projected_version=version)


def _changed_since_load(rows: list[Memory]) -> list[tuple[int, int]]:
    loaded = {m.id: m.version for m in rows}
    now = Memory.objects.filter(id__in=list(loaded)).order_by().values_list("id", "version", "status")
    return [(memory_id, version) for memory_id, version, status in now
            if version != loaded[memory_id] or status != "active"]


def memories_sync_batch(*, memory_ids: list[int], collection: VectorCollection, mark_projected: bool,
                        embedder: Embedder | None = None, index: VectorIndex | None = None) -> BatchResult:
    """Project a batch of active memories into ``collection``: the bulk counterpart of memory_sync.

    Idempotent (point id = memory id, payload from ``projections.memory_payload``). Vectors come
    from MemoryEmbedding; only missing or outdated ones are encoded (and stored). Rows are not
    locked: instead they are re-read after the upsert and any that changed are returned in
    ``changed``, so a long batch never holds row locks that writers would queue behind.
    """
    rows = list(Memory.objects.filter(id__in=memory_ids, status="active").order_by("id"))
    result = _sync_rows(rows, collection=collection, mark_projected=mark_projected, embedder=embedder,
                        index=index or get_vector_index())
    loaded = {m.id for m in rows}
    result.inactive = [memory_id for memory_id in memory_ids if memory_id not in loaded]
    return result


def _sync_rows(rows: list[Memory], *, collection: VectorCollection, mark_projected: bool, embedder: Embedder | None,
               index: VectorIndex) -> BatchResult:
    result = BatchResult()
    if not rows:
        return result
    ids = [m.id for m in rows]
    stored = _stored_vectors(ids, collection.model_id)
    need = [m for m in rows if m.id not in stored or stored[m.id][0] != m.version]
    if need:
        embedder = embedder or get_embedder(collection.model_name)
        _check_dim(embedder.dim, collection, f"embedder {embedder.model_id}")
        encoded = embedder.encode([m.content for m in need])
        _check_dim(int(encoded.shape[1]), collection, f"vectors of {embedder.model_id}")
        _store_vectors(need, encoded, collection.model_id)
        stored.update({m.id: (m.version, vec) for m, vec in zip(need, encoded)})
        result.encoded = len(need)
    links = _entity_ids(ids)
    points = []
    for m in rows:
        vector = stored[m.id][1]
        _check_dim(int(vector.shape[0]), collection, f"stored vector of memory {m.id}")
        points.append(VectorPoint(point_id=m.id, vector=vector,
                                  payload=projections.memory_payload(m, links.get(m.id, []), collection.model_id)))
        result.users.add((m.org_id, m.user_id))
    index.upsert(points, collection=collection.name)
    result.upserted = len(points)
    if mark_projected:
        _mark_projected(rows)
    result.changed = _changed_since_load(rows)
    return result


def _resync(changed: list[tuple[int, int]], collection_name: str | None) -> None:
    for memory_id, version in changed:
        projections.memory_sync(memory_id=memory_id, version=version, collection_name=collection_name)


def _drop_user_hashes(users: set[tuple[int, str]]) -> None:
    # The per-user hash is filled whole from MySQL on the next read; dropping it is always safe.
    for org_id, user_id in users:
        memory_cache.drop_user(org_id, user_id)


def _settle_inactive(batch: int = ROW_BATCH, *, before: datetime | None = None,
                     uncounted: set[int] | frozenset[int] = frozenset()) -> int:
    """Non-active rows whose point is gone: drop their cache fields and record the projection.
    Returns how many were settled, leaving out ids in ``uncounted`` (already counted elsewhere)."""
    settled = 0
    lagging = Memory.objects.exclude(status="active").filter(projected_version__lt=F("version"))
    if before is not None:
        lagging = lagging.filter(updated_at__lt=before)
    for rows in _keyset(lagging, ("org_id", "user_id"), batch):
        by_user: dict[tuple[int, str], list[int]] = defaultdict(list)
        for memory_id, org_id, user_id in rows:
            by_user[(org_id, user_id)].append(memory_id)
        for (org_id, user_id), ids in by_user.items():
            memory_cache.delete(org_id, user_id, ids)
        # Statuses never return to active, so F("version") cannot mark a newer active version.
        Memory.objects.filter(id__in=[r[0] for r in rows]).exclude(status="active").update(projected_version=F("version"))
        settled += sum(1 for r in rows if r[0] not in uncounted)
    return settled


def _delete_orphans(index: VectorIndex, name: str, page: int = SCROLL_PAGE) -> int:
    """Delete points whose id is not an active memory; one MySQL query per scroll page."""
    deleted = 0
    for points in _point_pages(index, name, page):
        ids = [pid for pid, _ in points]
        active = set(Memory.objects.filter(id__in=ids, status="active").order_by().values_list("id", flat=True))
        orphans = [pid for pid in ids if pid not in active]
        if orphans:
            index.delete(orphans, collection=name)
            deleted += len(orphans)
    return deleted


@contextmanager
def single_flight(name: str, *, timeout: int) -> Iterator[bool]:
    """Yields False when another run holds the lock (shared cache), so beat runs never overlap."""
    key = f"maintenance-lock:{name}"
    acquired = bool(cache.add(key, timezone.now().isoformat(), timeout))
    try:
        yield acquired
    finally:
        if acquired:
            cache.delete(key)


# =============================================================================================
# Reconcile
# =============================================================================================


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
    for points in _point_pages(index, name, page):
        ids = [pid for pid, _ in points]
        rows = {memory_id: (status, version, updated_at) for memory_id, status, version, updated_at in
                Memory.objects.filter(id__in=ids).order_by().values_list("id", "status", "version", "updated_at")}
        orphans = []
        for pid, payload in points:
            status, version, updated_at = rows.get(pid, (None, None, None))
            if updated_at is not None and updated_at >= before:
                continue  # written moments ago: its own memory_sync task is on the way
            if status != "active":
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
    rows_qs = Memory.objects.filter(status="active", updated_at__lt=before)
    for rows in _keyset(rows_qs, ("version", "projected_version"), batch):
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        present = _contains(point_ids, ids)
        for (memory_id, version, projected), has_point in zip(rows, present):
            if not has_point:
                drift.missing[memory_id] = version
            elif is_live and projected < version:
                drift.stale.setdefault(memory_id, version)
        drift.checked += len(rows)


def _count_lagging_inactive(drift: _Drift, before: datetime, batch: int) -> int:
    """Pass 3 (live collection): non-active rows not yet recorded as removed (their point is already
    gone, or counted as an orphan). Returns how many of them are not orphans."""
    lagging = Memory.objects.exclude(status="active").filter(projected_version__lt=F("version"), updated_at__lt=before)
    count = 0
    for rows in _keyset(lagging, (), batch):
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
            counts["fixed"] += _settle_inactive(batch, before=before, uncounted=drift.orphans)
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


# =============================================================================================
# Rebuild
# =============================================================================================


def projections_rebuild(*, progress: Progress | None = None, batch: int = 500, optimize: bool = True) -> dict:
    """Re-project every active memory into the live collection from MySQL, delete orphan points,
    record projected_version, drop the per-user cache hashes (refilled from MySQL on read)."""
    index = get_vector_index()
    collection = VectorCollection.objects.get(name=active_collection())  # also creates the index collection
    total = Memory.objects.filter(status="active").count()
    done = upserted = encoded = resynced = 0
    users: set[tuple[int, str]] = set()
    for rows in _row_batches(Memory.objects.filter(status="active"), batch):
        result = _sync_rows(rows, collection=collection, mark_projected=True, embedder=None, index=index)
        _resync(result.changed, None)
        upserted, encoded, resynced = upserted + result.upserted, encoded + result.encoded, resynced + len(result.changed)
        users |= result.users
        done += len(rows)
        if progress:
            progress(done, max(total, done))
    orphans = _delete_orphans(index, collection.name)
    settled = _settle_inactive()
    _drop_user_hashes(users)
    if optimize:
        index.optimize(collection=collection.name)
    counts = {"collection": collection.name, "total": total, "upserted": upserted, "encoded": encoded,
              "resynced": resynced, "orphans_deleted": orphans, "settled": settled}
    logger.info("rebuild %s", counts)
    return counts


# =============================================================================================
# Re-embed
# =============================================================================================


def _prepare_target(embedder: Embedder, model: str, index: VectorIndex, live_name: str) -> VectorCollection:
    """The building collection for ``embedder``: its row checked against the model before the index
    is touched, then an empty index collection (a leftover of an earlier build or a retired
    collection holds outdated points; stored vectors make refilling it cheap)."""
    name = collection_name_for(embedder)
    if name == live_name:
        raise ValueError(f"{embedder.model_id} is already live in {name}; use rebuild_projections")
    row = VectorCollection.objects.filter(name=name).first()
    if row is not None:
        _check_dim(embedder.dim, row, f"embedder {embedder.model_id}")
        if row.model_id != embedder.model_id:
            raise ValueError(f"collection {name} belongs to model {row.model_id}, not {embedder.model_id}")
    if name in index.collections():
        index.drop_collection(name)
    index.ensure_collection(name, embedder.dim)
    if row is None:
        # model_name is what get_embedder() loads again (memory_sync re-encodes with it after the switch).
        row = VectorCollection.objects.create(name=name, model_name=model, model_id=embedder.model_id,
                                              dim=embedder.dim, state="building")
    else:
        VectorCollection.objects.filter(id=row.id).update(state="building", switched_at=None, model_name=model)
        row.state, row.model_name = "building", model
    return row


def _catch_up(target: VectorCollection, embedder: Embedder, index: VectorIndex, since: datetime, batch: int) -> int:
    """Bring ``target`` up to date with rows changed since ``since`` (status changes by forget set
    invalidated_at, not updated_at, so both are looked at)."""
    changed = Memory.objects.filter(Q(updated_at__gte=since) | Q(invalidated_at__gte=since))
    touched = 0
    for rows in _keyset(changed, ("status",), batch):
        active = [memory_id for memory_id, status in rows if status == "active"]
        gone = [memory_id for memory_id, status in rows if status != "active"]
        if active:
            result = memories_sync_batch(memory_ids=active, collection=target, mark_projected=False, embedder=embedder,
                                         index=index)
            _resync(result.changed, target.name)
            gone += result.inactive  # changed again between the two reads
        if gone:
            index.delete(gone, collection=target.name)
        touched += len(rows)
    return touched


def _switch(target: VectorCollection, index: VectorIndex) -> None:
    """DB states and the index pointer in one step: if the pointer cannot be written the DB change
    rolls back; if the commit fails after it, reconcile points the index back at the DB's choice."""
    with transaction.atomic():
        list(VectorCollection.objects.select_for_update().filter(Q(state="live") | Q(id=target.id)))
        VectorCollection.objects.filter(state="live").exclude(id=target.id).update(state="retired")
        VectorCollection.objects.filter(id=target.id).update(state="live", switched_at=timezone.now())
        index.set_live(target.name)
    VectorCollection.forget_cached_live()  # this process follows at once; others within LIVE_CACHE_SECONDS


def reembed(*, model: str, progress: Progress | None = None, batch: int = 256, optimize: bool = False) -> dict:
    """Build a collection for ``model`` beside the live one, fill it from MySQL, catch up with
    writes made meanwhile, then switch. Recall and writes keep using the old collection until the
    switch; the old one is kept (retired) for rollback.

    ``optimize`` is off by default: the embedded shard's optimize holds the index lock of every
    collection (1-3 minutes at 100k points on 2 busy cores), which would stall recall on the live
    one, while recall's user-filtered search is already fast without it (payload index)."""
    embedder = get_embedder(model)
    index = get_vector_index()
    old = active_collection()
    target = _prepare_target(embedder, model, index, old)
    started = timezone.now() - CLOCK_SKEW
    total = Memory.objects.filter(status="active").count()
    done = encoded = 0
    for rows in _row_batches(Memory.objects.filter(status="active"), batch):
        result = _sync_rows(rows, collection=target, mark_projected=False, embedder=embedder, index=index)
        _resync(result.changed, target.name)
        encoded += result.encoded
        done += len(rows)
        if progress:
            progress(done, max(total, done))
    since, caught_up = started, 0
    for _ in range(MAX_CATCH_UP_PASSES):
        mark = timezone.now() - CLOCK_SKEW
        touched = _catch_up(target, embedder, index, since, batch)
        caught_up, since = caught_up + touched, mark
        if touched == 0:
            break
    if optimize:
        index.optimize(collection=target.name)  # before the switch, so the first queries use the HNSW index
    _switch(target, index)
    # Writes since the last pass were projected into the old collection: those before the switch,
    # and those of processes that still had the old live row cached. Wait those caches out first.
    time.sleep(LIVE_CACHE_SECONDS + SWITCH_SETTLE_SECONDS)
    caught_up += _catch_up(target, embedder, index, since, batch)
    counts = {"collection": target.name, "previous": old, "dim": target.dim, "total": total, "encoded": encoded,
              "caught_up": caught_up, "points": index.count(collection=target.name)}
    logger.info("reembed %s", counts)
    return counts


# =============================================================================================
# Resume lost work
# =============================================================================================


def resume_age_seconds() -> int:
    """How old pending work must be before it is queued again (see RESUME_AFTER_SECONDS)."""
    from django.conf import settings

    from memory.selectors import queue_depths

    short = settings.EXTRACTION_RESUME_AFTER_SECONDS
    if tasks_eager():
        return short
    try:
        backlog = queue_depths().get(settings.CELERY_TASK_DEFAULT_QUEUE, 0)
    except Exception:  # broker unreachable: nothing can be queued anyway; the enqueue reports it
        backlog = 0
    return max(short, RESUME_AFTER_SECONDS) if backlog else short


def extraction_resume(*, older_than_seconds: int | None = None, skip: set[int] | None = None) -> int:
    """Queue again what a lost task left undone: extraction of messages never extracted, and forget
    requests approved but never executed. Both tasks are idempotent, so a duplicate is harmless.

    Default age: ``resume_age_seconds()``. ``skip``: message ids the caller queued moments ago. With
    eager tasks the extraction runs here: a chunk that fails is logged and left pending, and the
    next chunks still run (one bad message must not stall everyone's recovery)."""
    from memory.selectors.maintenance import pending_extraction

    if older_than_seconds is None:
        older_than_seconds = resume_age_seconds()
    messages = requests = 0
    message_ids = [i for i in pending_extraction(older_than_seconds=older_than_seconds) if i not in (skip or ())]
    for start in range(0, len(message_ids), RESUME_CHUNK):
        chunk = message_ids[start : start + RESUME_CHUNK]
        try:
            messages += len(chunk) if enqueue(MESSAGES_EXTRACT, chunk) else 0
        except Exception:
            logger.exception("extraction resume: chunk of %d failed, left pending (first id %s)", len(chunk), chunk[0])
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    approved = (ForgetRequest.objects.filter(status="approved")
                .filter(Q(decided_at__lt=cutoff) | Q(decided_at__isnull=True))
                .order_by("id").values_list("id", flat=True)[:1000])
    for request_id in approved:
        try:
            requests += enqueue(FORGET_REQUEST_EXECUTE, request_id)
        except Exception:
            logger.exception("extraction resume: forget request %s failed, left approved", request_id)
    if messages or requests:
        logger.info("extraction resume: queued messages=%d forget_requests=%d", messages, requests)
    return messages + requests
