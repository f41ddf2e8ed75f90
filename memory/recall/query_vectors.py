"""The query's vectors, computed on the encoder threads while the request thread does its own reads.

A Chinese query is embedded with the multilingual model only; an English one with both models of a
composite (the English mix searches, the multilingual half finds Chinese memories across languages);
a long query (a dialogue or a paragraph, memory/recall/query.py) also embeds its focus, mixed in.
Each model runs on one thread (EMBEDDING_THREADS), so on two cores the encodes of one query run side
by side and the request thread reads the user's snapshot and scores keywords meanwhile: recall waits
for the slowest encode, not for their sum plus its own reads. ONNX Runtime and NumPy's kernels release
the GIL while they compute."""
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from django.conf import settings

from common import text as textutil
from memory.embeddings import CompositeEmbedder, encoder_pool
from memory.recall.query import shape

# Queries repeat (a context call and its recall ask of the same message): cached.
is_cjk = lru_cache(maxsize=65536)(textutil.is_cjk)


@dataclass
class QueryVectors:
    embedder: object
    unit: np.ndarray  # the query as a document would be embedded: scores stored vectors exactly
    search: list[np.ndarray]  # vectors sent to the index for candidates
    # A conversation's parts (the whole, its focus) as documents would be embedded: a memory's
    # best match over them joins the blend (RECALL_CONFIDENCE["parts_max"], memory/recall/candidates.py).
    parts: list[np.ndarray] = field(default_factory=list)


def blend(whole: QueryVectors, focus: QueryVectors, focus_weight: float) -> QueryVectors:
    mix = lambda a, b: ((1.0 - focus_weight) * a + focus_weight * b).astype(np.float32)  # noqa: E731
    return QueryVectors(whole.embedder, mix(whole.unit, focus.unit),
                        [mix(a, b) for a, b in zip(whole.search, focus.search)], [whole.unit, focus.unit])


def _compose(embedder, parts: list[np.ndarray], cjk: bool) -> QueryVectors:
    if not isinstance(embedder, CompositeEmbedder):
        return QueryVectors(embedder, parts[0], [parts[0]])
    if cjk:
        # Chinese is scored by the multilingual half alone: the English model need not run at all.
        first, second = parts[0], np.zeros(embedder.parts[1].dim, dtype=np.float32)
        return QueryVectors(embedder, embedder.compose(first, second), [embedder.compose(first, second, 1.0)])
    first, second = parts
    unit = embedder.compose(first, second)
    multilingual = embedder.compose(first, second, 1.0)
    mix = embedder.compose(first, second, settings.RECALL_WEIGHTS["multilingual_share_en"])
    return QueryVectors(embedder, unit, [mix, multilingual])


def encoders_for(embedder, cjk: bool) -> list:
    """The models a query of this language needs (a Chinese query skips the English model)."""
    if not isinstance(embedder, CompositeEmbedder):
        return [embedder]
    return [embedder.parts[0]] if cjk else list(embedder.parts)


def start_query_vectors(query: str, embedder) -> Callable[[], QueryVectors]:
    """Start every encode this query needs on the encoder threads; the returned callable waits for
    them and composes the vectors (an encoder's error is raised there)."""
    cjk = is_cjk(query)
    query_shape = shape(query)
    texts = [query] + ([query_shape.focus] if query_shape.long else [])
    models = encoders_for(embedder, cjk)
    futures = [[encoder_pool().submit(model.encode_query, text) for model in models] for text in texts]

    def finish() -> QueryVectors:
        whole = _compose(embedder, [f.result() for f in futures[0]], cjk)
        if len(futures) == 1:
            return whole
        # A dialogue: the whole and its last turn(s), mixed (cosine is linear in the query vector).
        focus = _compose(embedder, [f.result() for f in futures[1]], cjk)
        return blend(whole, focus, settings.RECALL_LONG_QUERY["focus_weight"])

    return finish
