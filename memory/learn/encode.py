"""Sentence embeddings for the learned models, from the service's own encoders (memory/embeddings.py).

The gate reads a sentence through both halves of the default composite vector: the multilingual
model (USE, every language) and MiniLM (English). At run time the write path hands it the vector it
computes anyway for the memory (the composite of the live collection); only when the live model is
another one does the gate encode with its own (``encode_texts``). Training encodes the labelled sets
in batches and keeps them in ``CACHE_DIR`` keyed by the model and the texts' hash, so a rerun does not
encode again. The cache lives outside the checkout (``$LEARN_CACHE_DIR``, default ``~/.cache/memsvc-learn``):
a clean clone on the same machine (CI's) reuses what an earlier run encoded, and a vector depends only on the
model and the text, so reusing it changes no trained number. A new machine encodes once (the judge's ~60k
texts take about seven minutes on two cores).
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from memory.embeddings import CompositeEmbedder, Embedder, get_embedder

__all__ = ["CACHE_DIR", "GATE_EMBEDDER", "GATE_EMBEDDER_ID", "cached", "encode_texts", "halves"]

# The model whose vectors the gate is trained on: the service's default EMBEDDING_MODEL, and the
# model_id its embedder reports (what the live collection's must be for the gate to reuse its vectors).
GATE_EMBEDDER = "use-multilingual+minilm"
GATE_EMBEDDER_ID = "use-multilingual-v3+st:all-MiniLM-L6-v2"
CACHE_DIR = Path(os.environ.get("LEARN_CACHE_DIR") or Path.home() / ".cache" / "memsvc-learn")


def halves(embedder: Embedder, vectors: np.ndarray) -> np.ndarray:
    """Each part of a composite vector back at unit length ([u, m] / sqrt(2) -> [u, m]), so the
    features do not depend on how the composite weighs its halves."""
    if isinstance(embedder, CompositeEmbedder):
        return np.asarray(vectors, dtype=np.float32) * np.float32(np.sqrt(2.0))
    return np.asarray(vectors, dtype=np.float32)


def cached(model: str, texts: list[str], encode: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """``encode(texts)``, kept on disk under the model and the texts' hash (training and reports)."""
    digest = hashlib.sha256("\n".join([model, *texts]).encode()).hexdigest()[:16]
    path = CACHE_DIR / f"{digest}.npy"
    if path.exists():
        return np.load(path, allow_pickle=False)
    vectors = encode(list(texts))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
    np.save(tmp, vectors, allow_pickle=False)
    tmp.replace(path)  # whole or absent: two runs at once never read half a file
    return vectors


def encode_texts(texts: list[str], *, model: str = GATE_EMBEDDER, cache: bool = False) -> np.ndarray:
    """(N, dim) unit-part vectors of ``texts`` with ``model``; ``cache`` keeps them on disk (training)."""
    embedder = get_embedder(model)
    if cache:
        return cached(model, texts, lambda todo: halves(embedder, embedder.encode(todo)))
    return halves(embedder, embedder.encode(list(texts)))
