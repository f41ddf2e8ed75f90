"""Sentence embeddings for the learned models, from the service's own encoders (memory/embeddings.py).

The gate reads a sentence through both halves of the default composite vector: the multilingual
model (USE, every language) and MiniLM (English). At run time the write path hands it the vector it
computes anyway for the memory (the composite of the live collection); only when the live model is
another one does the gate encode with its own (``encode_texts``). Training encodes the labelled sets
in batches and keeps them in ``var/learn/`` keyed by the texts' hash, so a rerun does not encode again.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from memory.embeddings import CompositeEmbedder, Embedder, get_embedder

__all__ = ["CACHE_DIR", "GATE_EMBEDDER", "GATE_EMBEDDER_ID", "encode_texts", "halves"]

# The model whose vectors the gate is trained on: the service's default EMBEDDING_MODEL, and the
# model_id its embedder reports (what the live collection's must be for the gate to reuse its vectors).
GATE_EMBEDDER = "use-multilingual+minilm"
GATE_EMBEDDER_ID = "use-multilingual-v3+st:all-MiniLM-L6-v2"
CACHE_DIR = Path(__file__).resolve().parents[2] / "var" / "learn"


def halves(embedder: Embedder, vectors: np.ndarray) -> np.ndarray:
    """Each part of a composite vector back at unit length ([u, m] / sqrt(2) -> [u, m]), so the
    features do not depend on how the composite weighs its halves."""
    if isinstance(embedder, CompositeEmbedder):
        return np.asarray(vectors, dtype=np.float32) * np.float32(np.sqrt(2.0))
    return np.asarray(vectors, dtype=np.float32)


def encode_texts(texts: list[str], *, model: str = GATE_EMBEDDER, cache: bool = False) -> np.ndarray:
    """(N, dim) unit-part vectors of ``texts`` with ``model``; ``cache`` keeps them on disk (training)."""
    path = None
    if cache:
        digest = hashlib.sha256("\n".join([model, *texts]).encode()).hexdigest()[:16]
        path = CACHE_DIR / f"{digest}.npy"
        if path.exists():
            return np.load(path, allow_pickle=False)
    embedder = get_embedder(model)
    vectors = halves(embedder, embedder.encode(list(texts)))
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors, allow_pickle=False)
    return vectors
