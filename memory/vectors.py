"""Which embedding model and collection are live, and vector (de)serialisation for the SoR."""
import numpy as np
from django.conf import settings

from memory.embeddings import Embedder, collection_name_for, get_embedder


def active_embedder() -> Embedder:
    from memory.models import VectorCollection

    live = VectorCollection.live()
    return get_embedder(live.model_name if live else settings.EMBEDDING_MODEL)


def active_collection() -> str:
    """The live collection name; created (and made live, in the DB and the index) on first use."""
    return active_collection_row().name


def active_collection_row():
    from memory.models import VectorCollection
    from memory.vector_index import get_vector_index

    live = VectorCollection.live()
    if live is None:
        embedder = get_embedder(settings.EMBEDDING_MODEL)
        live = VectorCollection.ensure_live(model_name=settings.EMBEDDING_MODEL, model_id=embedder.model_id,
                                            dim=embedder.dim, name=collection_name_for(embedder))
    index = get_vector_index()
    index.ensure_collection(live.name, live.dim)  # cheap once per process
    if index.live_collection() != live.name:
        index.set_live(live.name)
    return live


def owner_key(org_id: int, user_id: str) -> str:
    """The `owner` payload field: org and user as one value (the org id is digits, so the first colon
    ends it whatever the user id holds)."""
    return f"{org_id}:{user_id}"


def user_filters(collection, org_id: int, user_id: str) -> dict:
    """The search conditions that scope a search to one user's points in `collection` (a
    VectorCollection). One selective condition where the points carry `owner`: with org and user_id
    as two, the org condition was checked on each of the user's points, and in a store of one large
    org it matches them all (at 1M points, 2,000 per user, a search took about half as long again)."""
    if collection.payload_version >= 2:
        return {"owner": owner_key(org_id, user_id)}
    return {"org": str(org_id), "user_id": user_id}


def to_bytes(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def from_bytes(blob: bytes | memoryview) -> np.ndarray:
    return np.frombuffer(bytes(blob), dtype=np.float32)




def similarity(embedder: Embedder, query: np.ndarray, stored: np.ndarray, *, cjk: bool,
               first_weight: float = 0.5) -> np.ndarray:
    """Cosine of one unit vector against stored rows, as the write and read paths should judge it.

    A composite (USE + MiniLM) vector is split: MiniLM turns most Chinese into [UNK], so whenever
    Chinese is involved only the multilingual half counts; otherwise the halves are mixed.
    """
    from memory.embeddings import CompositeEmbedder

    stored = np.atleast_2d(stored)
    if not isinstance(embedder, CompositeEmbedder):
        return stored @ query
    first, second = embedder.part_cosines(query, stored)
    return first if cjk else first_weight * first + (1.0 - first_weight) * second
