"""Rebuild the live collection from MySQL (every active row, in batches)."""
from __future__ import annotations

import logging

from memory.choices import MemoryStatus
from memory.models import PAYLOAD_VERSION, Memory, VectorCollection
from memory.projections.batch import (
    Progress,
    delete_orphans,
    drop_user_hashes,
    resync,
    row_batches,
    settle_inactive,
    sync_rows,
)
from memory.vector_index import get_vector_index
from memory.vectors import active_collection

logger = logging.getLogger(__name__)




def projections_rebuild(*, progress: Progress | None = None, batch: int = 500, optimize: bool = True) -> dict:
    """Re-project every active memory into the live collection from MySQL, delete orphan points,
    record projected_version and the collection's payload version, drop the per-user cache hashes
    (refilled from MySQL on read)."""
    index = get_vector_index()
    collection = VectorCollection.objects.get(name=active_collection())  # also creates the index collection
    total = Memory.objects.filter(status=MemoryStatus.ACTIVE).count()
    done = upserted = encoded = resynced = 0
    users: set[tuple[int, str]] = set()
    for rows in row_batches(Memory.objects.filter(status=MemoryStatus.ACTIVE), batch):
        result = sync_rows(rows, collection=collection, mark_projected=True, embedder=None, index=index)
        resync(result.changed, None)
        upserted, encoded, resynced = upserted + result.upserted, encoded + result.encoded, resynced + len(result.changed)
        users |= result.users
        done += len(rows)
        if progress:
            progress(done, max(total, done))
    # Every active memory's point now carries this code's payload: searches may rely on all of it.
    VectorCollection.objects.filter(id=collection.id).update(payload_version=PAYLOAD_VERSION)
    VectorCollection.forget_cached_live()
    orphans = delete_orphans(index, collection.name)
    settled = settle_inactive()
    drop_user_hashes(users)
    if optimize:
        index.optimize(collection=collection.name)
    counts = {"collection": collection.name, "total": total, "upserted": upserted, "encoded": encoded,
              "resynced": resynced, "orphans_deleted": orphans, "settled": settled}
    logger.info("rebuild %s", counts)
    return counts
