"""Recall's candidates (DESIGN §6, step 2): the vector index's hits for the query's vectors, scoped to
the user's points, and the query's cosine to each candidate's stored vector; the keyword candidates
come from the user's snapshot (memory/recall/snapshot.py). Semantic and keyword scores are fused
with per-language weights (`fusion_weights`)."""
import logging
import time

import numpy as np
from django.conf import settings

from common.plain_reads import plain_rows
from memory.choices import MemoryKind
from memory.models import MemoryEmbedding
from memory.recall.query import RecallQuery, RecallResult, shape
from memory.recall.query_vectors import QueryVectors, is_cjk
from memory.recall.snapshot import Candidate
from memory.vector_index import VectorIndexUnavailable, get_vector_index
from memory.vectors import active_collection_row, from_bytes, similarity, user_filters

logger = logging.getLogger(__name__)

RECALLED_KINDS = ["preference", "fact", "event", "context", "suggestion"]
_ALL_KINDS = frozenset(MemoryKind.values)


def requested_kinds(q: RecallQuery) -> set[str]:
    """The kinds this query asks for (all standing kinds and episodes unless it names some)."""
    return set(q.kinds or RECALLED_KINDS + (["episode"] if q.include_episodes else []))


def fusion_weights(query: str) -> tuple[float, float]:
    w = settings.RECALL_WEIGHTS
    cjk = is_cjk(query)
    sem, kw = (w["semantic_zh"], w["keyword_zh"]) if cjk else (w["semantic_en"], w["keyword_en"])
    if shape(query).long:  # keywords of a dialogue are weaker evidence than of a question
        kw *= settings.RECALL_LONG_QUERY["keyword_scale_zh" if cjk else "keyword_scale_en"]
    return sem, kw


def _vector_filters(q: RecallQuery, collection) -> dict:
    """The user's points, narrowed only by conditions that can exclude one: the index holds active
    memories alone (the projection deletes a point when its memory stops being active; one that lags
    is dropped by the back-check), and every point has one of the kinds, so asking for all of them
    asks for nothing. Each condition is checked on every point of the user's."""
    filters = user_filters(collection, q.org.id, q.user_id)
    kinds = requested_kinds(q)
    if not kinds >= _ALL_KINDS:
        filters["kind"] = sorted(kinds)
    if q.entity_ids:
        filters["entity_ids"] = list(q.entity_ids)
    if q.at is not None:
        filters["created"] = {"lte": q.at.timestamp()}
    return filters


def semantic_candidates(q: RecallQuery, vectors: QueryVectors, limit: int, result: RecallResult) -> dict[int, float]:
    started = time.perf_counter()
    try:
        collection = active_collection_row()
        hits = {}
        # Ids and scores only (the back-check reads the rows from MySQL, so payloads would be decoded for
        # nothing); an English query's two vectors in one batch.
        for found in get_vector_index().search_many(vectors.search, filters=_vector_filters(q, collection), limit=limit,
                                                    collection=collection.name, with_payload=False):
            for hit in found:
                hits[hit.point_id] = max(hits.get(hit.point_id, -1.0), float(hit.score))
    except VectorIndexUnavailable as exc:
        result.degraded, result.degraded_reason = True, "vector_index_unavailable"
        logger.warning("recall degraded to keyword candidates: %s", type(exc).__name__)
        return {}
    finally:
        result.timings_ms["vector"] = (time.perf_counter() - started) * 1000
    return hits


def semantic_scores(q: RecallQuery, vectors: QueryVectors, kept: dict[int, Candidate]) -> dict[int, float]:
    """Cosine of the query against each kept memory's stored vector, so keyword-only candidates get a
    semantic score too and every score comes from the same formula."""
    pairs = [(memory_id, candidate.vector) for memory_id, candidate in kept.items() if candidate.vector is not None]
    if not pairs:
        return {}
    stored = np.vstack([vector for _, vector in pairs])
    share = settings.RECALL_WEIGHTS["multilingual_share_en"]
    query_cjk = is_cjk(q.query)
    cjk_rows = np.array([query_cjk or kept[memory_id].cjk for memory_id, _ in pairs])

    def cosines(unit: np.ndarray) -> np.ndarray:
        mixed = similarity(vectors.embedder, unit, stored, cjk=False, first_weight=share)
        multilingual = similarity(vectors.embedder, unit, stored, cjk=True)
        return np.where(cjk_rows, multilingual, mixed)

    score = cosines(vectors.unit)
    best_share = settings.RECALL_CONFIDENCE.get("parts_max", 0.0)
    if vectors.parts and best_share > 0:  # a conversation: its best-matching part counts too
        best = np.max(np.vstack([cosines(part) for part in vectors.parts]), axis=0)
        score = (1.0 - best_share) * score + best_share * best
    return {memory_id: float(score[i]) for i, (memory_id, _) in enumerate(pairs)}


def minmax(scores: dict[int, float]) -> dict[int, float]:
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high - low < 1e-6:
        return {k: (1.0 if high > 0 else 0.0) for k in scores}
    return {k: (v - low) / (high - low) for k, v in scores.items()}


def read_vectors(kept: dict[int, Candidate], model_id: str) -> None:
    """Each candidate's stored vector under the live model (one plain read of MemoryEmbedding: the
    bytes are used in place, ~1 ms for 80 candidates; the index's retrieve turns every component into
    a Python float first). A candidate without one (mid re-embed) keeps None and is scored by its search
    hit, if any."""
    wanted = [memory_id for memory_id, candidate in kept.items() if candidate.vector is None]
    for memory_id, blob in plain_rows(MemoryEmbedding, ("memory", "vector"), wanted, model_id=model_id):
        kept[memory_id].vector = from_bytes(blob)
