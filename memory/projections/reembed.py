"""Re-embed into a new collection with another model, catch up what changed meanwhile, switch to it."""
from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memory.choices import CollectionState, MemoryStatus
from memory.embeddings import Embedder, collection_name_for, get_embedder
from memory.models import LIVE_CACHE_SECONDS, PAYLOAD_VERSION, Memory, VectorCollection
from memory.projections.batch import (
    Progress,
    check_dim,
    keyset,
    memories_sync_batch,
    resync,
    row_batches,
    sync_rows,
)
from memory.vector_index import VectorIndex, get_vector_index
from memory.vectors import active_collection

logger = logging.getLogger(__name__)

# updated_at is written by the clock of whichever process saved the row; look back this far when
# catching up so a writer whose clock runs a little behind ours is not missed (extra rows are harmless).
CLOCK_SKEW = timedelta(seconds=5)
MAX_CATCH_UP_PASSES = 5
SWITCH_SETTLE_SECONDS = 1.0




def _prepare_target(embedder: Embedder, model: str, index: VectorIndex, live_name: str) -> VectorCollection:
    """The building collection for ``embedder``: its row checked against the model before the index
    is touched, then an empty index collection (a leftover of an earlier build or a retired
    collection holds outdated points; stored vectors make refilling it cheap)."""
    name = collection_name_for(embedder)
    if name == live_name:
        raise ValueError(f"{embedder.model_id} is already live in {name}; use rebuild_projections")
    row = VectorCollection.objects.filter(name=name).first()
    if row is not None:
        check_dim(embedder.dim, row, f"embedder {embedder.model_id}")
        if row.model_id != embedder.model_id:
            raise ValueError(f"collection {name} belongs to model {row.model_id}, not {embedder.model_id}")
    if name in index.collections():
        index.drop_collection(name)
    index.ensure_collection(name, embedder.dim)
    if row is None:
        # model_name is what get_embedder() loads again (memory_sync re-encodes with it after the switch).
        row = VectorCollection.objects.create(name=name, model_name=model, model_id=embedder.model_id,
                                              dim=embedder.dim, state=CollectionState.BUILDING)
    else:
        # Emptied above and refilled by this code: its points will carry this payload version.
        VectorCollection.objects.filter(id=row.id).update(state=CollectionState.BUILDING, switched_at=None, model_name=model,
                                                           payload_version=PAYLOAD_VERSION)
        row.state, row.model_name, row.payload_version = CollectionState.BUILDING, model, PAYLOAD_VERSION
    return row


def _catch_up(target: VectorCollection, embedder: Embedder, index: VectorIndex, since: datetime, batch: int) -> int:
    """Bring ``target`` up to date with rows changed since ``since`` (status changes by forget set
    invalidated_at, not updated_at, so both are looked at)."""
    changed = Memory.objects.filter(Q(updated_at__gte=since) | Q(invalidated_at__gte=since))
    touched = 0
    for rows in keyset(changed, ("status",), batch):
        active = [memory_id for memory_id, status in rows if status == MemoryStatus.ACTIVE]
        gone = [memory_id for memory_id, status in rows if status != MemoryStatus.ACTIVE]
        if active:
            result = memories_sync_batch(memory_ids=active, collection=target, mark_projected=False, embedder=embedder,
                                         index=index)
            resync(result.changed, target.name)
            gone += result.inactive  # changed again between the two reads
        if gone:
            index.delete(gone, collection=target.name)
        touched += len(rows)
    return touched


def _switch(target: VectorCollection, index: VectorIndex) -> None:
    """DB states and the index pointer in one step: if the pointer cannot be written the DB change
    rolls back; if the commit fails after it, reconcile points the index back at the DB's choice."""
    with transaction.atomic():
        list(VectorCollection.objects.select_for_update().filter(Q(state=CollectionState.LIVE) | Q(id=target.id)))
        VectorCollection.objects.filter(state=CollectionState.LIVE).exclude(id=target.id).update(state=CollectionState.RETIRED)
        VectorCollection.objects.filter(id=target.id).update(state=CollectionState.LIVE, switched_at=timezone.now())
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
    total = Memory.objects.filter(status=MemoryStatus.ACTIVE).count()
    done = encoded = 0
    for rows in row_batches(Memory.objects.filter(status=MemoryStatus.ACTIVE), batch):
        result = sync_rows(rows, collection=target, mark_projected=False, embedder=embedder, index=index)
        resync(result.changed, target.name)
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
