"""Batch projection: keyset row batches, bulk vector upserts, inactive rows settled, orphans deleted,
one run at a time across processes (single_flight). Shared by reconcile, rebuild and re-embed."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from django.core.cache import cache
from django.db import connection
from django.db.models import F, QuerySet
from django.utils import timezone

from memory.cache import memory_cache
from memory.choices import MemoryStatus
from memory.embeddings import Embedder, get_embedder
from memory.models import EntityLink, Memory, MemoryEmbedding, VectorCollection
from memory.projections import rows as projections
from memory.projections.terms import terms_sync
from memory.vector_index import VectorIndex, VectorPoint, get_vector_index
from memory.vectors import from_bytes, to_bytes

Progress = Callable[[int, int], None]

SCROLL_PAGE = 1000
ROW_BATCH = 2000


class DimensionMismatch(ValueError):
    """An embedder's vectors do not fit the collection; raised before anything reaches the index."""




def keyset(qs: QuerySet, fields: Sequence[str], batch: int) -> Iterator[list[tuple]]:
    """(id, *fields) rows in id order, one query per batch: OFFSET would rescan, id > last does not."""
    last = 0
    while True:
        rows = list(qs.filter(id__gt=last).order_by("id").values_list("id", *fields)[:batch])
        if not rows:
            return
        yield rows
        last = rows[-1][0]


def row_batches(qs: QuerySet, batch: int) -> Iterator[list[Memory]]:
    """Model rows in id order (keyset, as above), for work that needs whole rows."""
    last = 0
    while True:
        rows = list(qs.filter(id__gt=last).order_by("id")[:batch])
        if not rows:
            return
        yield rows
        last = rows[-1].id


def point_pages(index: VectorIndex, name: str, page: int) -> Iterator[list[tuple[int, dict[str, Any]]]]:
    buffer: list[tuple[int, dict[str, Any]]] = []
    for point in index.scroll(collection=name, batch=page):
        buffer.append(point)
        if len(buffer) >= page:
            yield buffer
            buffer = []
    if buffer:
        yield buffer


def contains_sorted(sorted_ids: np.ndarray, ids: np.ndarray) -> np.ndarray:
    if sorted_ids.size == 0:
        return np.zeros(ids.shape, dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_ids, ids), sorted_ids.size - 1)
    return sorted_ids[pos] == ids


def check_dim(actual: int, collection: VectorCollection, what: str) -> None:
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
            if version != loaded[memory_id] or status != MemoryStatus.ACTIVE]


def memories_sync_batch(*, memory_ids: list[int], collection: VectorCollection, mark_projected: bool,
                        embedder: Embedder | None = None, index: VectorIndex | None = None) -> BatchResult:
    """Project a batch of active memories into ``collection``: the bulk counterpart of memory_sync.

    Idempotent (point id = memory id, payload from ``projections.memory_payload``). Vectors come
    from MemoryEmbedding; only missing or outdated ones are encoded (and stored). Rows are not
    locked: instead they are re-read after the upsert and any that changed are returned in
    ``changed``, so a long batch never holds row locks that writers would queue behind.
    """
    rows = list(Memory.objects.filter(id__in=memory_ids, status=MemoryStatus.ACTIVE).order_by("id"))
    result = sync_rows(rows, collection=collection, mark_projected=mark_projected, embedder=embedder,
                        index=index or get_vector_index())
    loaded = {m.id for m in rows}
    result.inactive = [memory_id for memory_id in memory_ids if memory_id not in loaded]
    return result


def sync_rows(rows: list[Memory], *, collection: VectorCollection, mark_projected: bool, embedder: Embedder | None,
               index: VectorIndex) -> BatchResult:
    result = BatchResult()
    if not rows:
        return result
    ids = [m.id for m in rows]
    stored = _stored_vectors(ids, collection.model_id)
    need = [m for m in rows if m.id not in stored or stored[m.id][0] != m.version]
    if need:
        embedder = embedder or get_embedder(collection.model_name)
        check_dim(embedder.dim, collection, f"embedder {embedder.model_id}")
        encoded = embedder.encode([m.content for m in need])
        check_dim(int(encoded.shape[1]), collection, f"vectors of {embedder.model_id}")
        _store_vectors(need, encoded, collection.model_id)
        stored.update({m.id: (m.version, vec) for m, vec in zip(need, encoded)})
        result.encoded = len(need)
    links = _entity_ids(ids)
    points = []
    for m in rows:
        vector = stored[m.id][1]
        check_dim(int(vector.shape[0]), collection, f"stored vector of memory {m.id}")
        points.append(VectorPoint(point_id=m.id, vector=vector,
                                  payload=projections.memory_payload(m, links.get(m.id, []), collection.model_id)))
        result.users.add((m.org_id, m.user_id))
    index.upsert(points, collection=collection.name)
    terms_sync(rows)
    result.upserted = len(points)
    if mark_projected:
        _mark_projected(rows)
    result.changed = _changed_since_load(rows)
    return result


def resync(changed: list[tuple[int, int]], collection_name: str | None) -> None:
    for memory_id, version in changed:
        projections.memory_sync(memory_id=memory_id, version=version, collection_name=collection_name)


def drop_user_hashes(users: set[tuple[int, str]]) -> None:
    # The per-user hash is filled whole from MySQL on the next read; dropping it is always safe.
    for org_id, user_id in users:
        memory_cache.drop_user(org_id, user_id)


def settle_inactive(batch: int = ROW_BATCH, *, before: datetime | None = None,
                     uncounted: set[int] | frozenset[int] = frozenset()) -> int:
    """Non-active rows whose point is gone: drop their cache fields and record the projection.
    Returns how many were settled, leaving out ids in ``uncounted`` (already counted elsewhere)."""
    settled = 0
    lagging = Memory.objects.exclude(status=MemoryStatus.ACTIVE).filter(projected_version__lt=F("version"))
    if before is not None:
        lagging = lagging.filter(updated_at__lt=before)
    for rows in keyset(lagging, ("org_id", "user_id"), batch):
        by_user: dict[tuple[int, str], list[int]] = defaultdict(list)
        for memory_id, org_id, user_id in rows:
            by_user[(org_id, user_id)].append(memory_id)
        for (org_id, user_id), ids in by_user.items():
            memory_cache.delete(org_id, user_id, ids)
        # Statuses never return to active, so F("version") cannot mark a newer active version.
        Memory.objects.filter(id__in=[r[0] for r in rows]).exclude(status=MemoryStatus.ACTIVE).update(projected_version=F("version"))
        settled += sum(1 for r in rows if r[0] not in uncounted)
    return settled


def delete_orphans(index: VectorIndex, name: str, page: int = SCROLL_PAGE) -> int:
    """Delete points whose id is not an active memory; one MySQL query per scroll page."""
    deleted = 0
    for points in point_pages(index, name, page):
        ids = [pid for pid, _ in points]
        active = set(Memory.objects.filter(id__in=ids, status=MemoryStatus.ACTIVE).order_by().values_list("id", flat=True))
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
