"""Which embedding model and collection are live, and vector (de)serialisation for the SoR."""
import numpy as np
from django.conf import settings

from memory.embeddings import Embedder, collection_name_for, get_embedder


def active_embedder() -> Embedder:
    from memory.models import VectorCollection

    live = VectorCollection.live()
    return get_embedder(live.model_name if live else settings.EMBEDDING_MODEL)


def active_collection() -> str:
    """The live collection name; created (and made live) on first use."""
    from memory.models import VectorCollection

    live = VectorCollection.live()
    if live is not None:
        return live.name
    embedder = get_embedder(settings.EMBEDDING_MODEL)
    return VectorCollection.ensure_live(model_name=settings.EMBEDDING_MODEL, model_id=embedder.model_id,
                                        dim=embedder.dim, name=collection_name_for(embedder)).name


def to_bytes(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def from_bytes(blob: bytes | memoryview) -> np.ndarray:
    return np.frombuffer(bytes(blob), dtype=np.float32)


def embed(texts: list[str], embedder: Embedder | None = None) -> np.ndarray:
    return (embedder or active_embedder()).encode(texts)
