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
    return live.name


def to_bytes(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def from_bytes(blob: bytes | memoryview) -> np.ndarray:
    return np.frombuffer(bytes(blob), dtype=np.float32)


def embed(texts: list[str], embedder: Embedder | None = None) -> np.ndarray:
    return (embedder or active_embedder()).encode(texts)
