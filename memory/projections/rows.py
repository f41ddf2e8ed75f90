"""Make the vector index and the Redis cache match one MySQL row. Safe to rerun (STYLE §4)."""
import logging

from django.db import IntegrityError, transaction
from django.db.models import F

from memory.cache import memory_cache
from memory.choices import MemoryStatus
from memory.models import EntityLink, Memory, MemoryEmbedding, VectorCollection
from memory.projections.terms import terms_sync
from memory.vector_index import VectorPoint, get_vector_index
from memory.vectors import active_collection_row, from_bytes, owner_key, to_bytes
from tenancy.db import retry_on_contention

logger = logging.getLogger(__name__)


def _ts(value) -> float:
    return value.timestamp() if value else 0.0


def memory_payload(memory: Memory, entity_ids: list[int], model_id: str) -> dict:
    return {
        "org": str(memory.org_id), "user_id": memory.user_id, "owner": owner_key(memory.org_id, memory.user_id),
        "kind": memory.kind, "scope": memory.scope,
        "conversation_id": memory.conversation_id or 0, "assertion": memory.assertion, "status": memory.status,
        "entity_ids": entity_ids, "valid_from": _ts(memory.valid_from), "valid_to": _ts(memory.valid_to) or 4e9,
        "created": _ts(memory.created_at), "version": memory.version, "model_id": model_id,
    }


def _vector_for(memory: Memory, collection: VectorCollection):
    """The stored vector of this version under the collection's model; encoded (and stored) if missing."""
    row = MemoryEmbedding.objects.filter(memory=memory, model_id=collection.model_id).first()
    if row is not None and row.version == memory.version:
        return from_bytes(row.vector)
    from memory.embeddings import get_embedder

    vector = get_embedder(collection.model_name).encode_one(memory.content)
    # The row read above decides insert or update (no update_or_create re-read); a concurrent sync
    # of the same memory may insert first, and then this one updates.
    if row is not None:
        MemoryEmbedding.objects.filter(id=row.id).update(version=memory.version, vector=to_bytes(vector))
        return vector
    try:
        with transaction.atomic():
            MemoryEmbedding.objects.create(memory=memory, model_id=collection.model_id, version=memory.version,
                                           vector=to_bytes(vector))
    except IntegrityError:
        MemoryEmbedding.objects.filter(memory=memory, model_id=collection.model_id).update(
            version=memory.version, vector=to_bytes(vector))
    return vector


def memory_sync(*, memory_id: int, version: int, collection_name: str | None = None) -> str:
    """Returns what it did: deleted | skipped | upserted. Raises VectorIndexUnavailable to be retried."""
    index = get_vector_index()
    if collection_name is None:
        collection = active_collection_row()
    else:
        collection = VectorCollection.objects.get(name=collection_name)
        index.ensure_collection(collection.name, collection.dim)
    name = collection.name
    memory = Memory.objects.filter(id=memory_id).first()
    if memory is None or memory.status != MemoryStatus.ACTIVE:
        index.delete([memory_id], collection=name)  # deleting twice is harmless
        if memory is not None:
            memory_cache.delete(memory.org_id, memory.user_id, [memory_id])
            if collection_name is None:
                Memory.objects.filter(id=memory_id, projected_version__lt=memory.version).update(projected_version=memory.version)
        return "deleted"
    if memory.version != version:
        return "skipped"  # a newer write has queued its own task
    vector = _vector_for(memory, collection)  # slow call, made outside the lock
    entity_ids = list(memory.entity_links.values_list("entity_id", flat=True))
    point = VectorPoint(point_id=memory.id, vector=vector, payload=memory_payload(memory, entity_ids, collection.model_id))
    with transaction.atomic():
        # The row lock stops a newer write interleaving between the version check and the upsert. On
        # the live collection the conditional UPDATE takes the lock, checks and marks in one statement
        # (a failed upsert rolls the mark back).
        if collection_name is None:
            if not Memory.objects.filter(id=memory_id, version=version, status=MemoryStatus.ACTIVE).update(projected_version=version):
                return "skipped"
        elif not Memory.objects.select_for_update().filter(id=memory_id, version=version, status=MemoryStatus.ACTIVE).exists():
            return "skipped"
        index.upsert([point], collection=name)
    terms_sync([memory])
    memory_cache.set(memory)
    return "upserted"


def memories_sync(*, pairs: list[tuple[int, int]], lagging_only: bool = False) -> dict[str, int]:
    """``memory_sync`` of several (memory id, version) pairs on the live collection in one pass: one
    read of the rows, their stored vectors and entity links, one upsert, one mark per version. A
    pair that is not the plain case (row gone or no longer active, no stored vector of its version)
    goes through ``memory_sync`` on its own. ``lagging_only``: a row already projected at its version
    (``projected_version >= version``: its own task got there first) is skipped. Returns counts by outcome."""
    want: dict[int, int] = {}
    for memory_id, version in pairs:
        want[memory_id] = max(version, want.get(memory_id, 0))
    index = get_vector_index()
    collection = active_collection_row()
    memories = {m.id: m for m in Memory.objects.filter(id__in=list(want))}
    counts: dict[str, int] = {}

    def count(outcome: str) -> None:
        counts[outcome] = counts.get(outcome, 0) + 1

    plain = {}
    for memory_id, version in want.items():
        memory = memories.get(memory_id)
        if lagging_only and memory is not None and memory.projected_version >= memory.version:
            count("skipped")
        elif memory is not None and memory.status == MemoryStatus.ACTIVE and memory.version != version:
            count("skipped")  # a newer write has queued its own task
        elif memory is not None and memory.status == MemoryStatus.ACTIVE:
            plain[memory_id] = memory
        else:
            count(memory_sync(memory_id=memory_id, version=version))
    stored = {memory_id: (v, blob) for memory_id, v, blob in MemoryEmbedding.objects.filter(
        memory_id__in=list(plain), model_id=collection.model_id).values_list("memory_id", "version", "vector")}
    for memory_id in [m for m in plain if stored.get(m, (None,))[0] != plain[m].version]:
        count(memory_sync(memory_id=memory_id, version=want[memory_id]))
        del plain[memory_id]
    if not plain:
        return counts
    links: dict[int, list[int]] = {}
    for memory_id, entity_id in EntityLink.objects.filter(memory_id__in=list(plain)).values_list("memory_id", "entity_id"):
        links.setdefault(memory_id, []).append(entity_id)
    by_version: dict[int, list[int]] = {}
    for memory_id, memory in plain.items():
        by_version.setdefault(memory.version, []).append(memory_id)
    with transaction.atomic():
        # As in memory_sync: the conditional UPDATE locks, checks and marks; rows a newer write
        # changed meanwhile are left to that write's own task.
        marked = set()
        for version, ids in by_version.items():
            locked = set(Memory.objects.select_for_update().filter(id__in=ids, version=version, status=MemoryStatus.ACTIVE)
                         .values_list("id", flat=True))
            Memory.objects.filter(id__in=locked).update(projected_version=version)
            marked |= locked
        points = [VectorPoint(point_id=memory_id, vector=from_bytes(stored[memory_id][1]),
                              payload=memory_payload(plain[memory_id], links.get(memory_id, []), collection.model_id))
                  for memory_id in plain if memory_id in marked]
        index.upsert(points, collection=collection.name)
    terms_sync([plain[memory_id] for memory_id in marked])
    for memory_id in marked:
        memory_cache.set(plain[memory_id])
    counts["upserted"] = counts.get("upserted", 0) + len(marked)
    counts["skipped"] = counts.get("skipped", 0) + len(plain) - len(marked)
    return counts


def memory_points_delete(*, memory_ids: list[int]) -> int:
    """Delete these memories' points from every collection (live, being built, retired): a forgotten
    or purged memory leaves no vector anywhere. Rows still present and no longer active are marked
    projected. Deleting twice is harmless. Returns how many collections were visited."""
    index = get_vector_index()
    names = index.collections()
    for name in names:
        index.delete(memory_ids, collection=name)
    _mark_deleted_projected(memory_ids)
    return len(names)


@retry_on_contention  # run eagerly inside the forget's commit hook, where a busy table is no reason to leave it
def _mark_deleted_projected(memory_ids: list[int]) -> None:
    Memory.objects.filter(id__in=memory_ids, projected_version__lt=F("version")).exclude(status=MemoryStatus.ACTIVE).update(
        projected_version=F("version"))
