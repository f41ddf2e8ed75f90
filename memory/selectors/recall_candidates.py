"""Recall, first half: the query and result types, query vectors, semantic candidates and the
MySQL back-check of every hit (scope, status, time, access policy). memory/selectors/recall_pipeline.py
ranks what comes out of here; memory/second_look.py reuses it for its second search."""
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from django.conf import settings
from django.utils import timezone

from config.plain_reads import plain_instances, plain_rows
from conversations.selectors import readable_among
from entities.policy import allowed_entity_ids
from memory.choices import MemoryKind, MemoryStatus
from memory.models import Memory, MemoryEmbedding
from memory.query_shape import shape
from memory.selectors.corpus import Candidate, UserCorpus, user_corpus
from memory.selectors.query_vectors import QueryVectors, is_cjk
from memory.vector_index import VectorIndexUnavailable, get_vector_index
from memory.vectors import active_collection_row, from_bytes, similarity, user_filters
from tenancy.models import Org

logger = logging.getLogger(__name__)

STANDING_KINDS = ["preference", "fact", "event", "context", "suggestion"]
_ALL_KINDS = frozenset(MemoryKind.values)


@dataclass
class RecallQuery:
    org: Org
    user_id: str
    query: str
    k: int = 5
    kinds: list[str] | None = None
    entity_ids: list[int] = field(default_factory=list)  # filter: only memories linked to these
    boost_entity_ids: list[int] = field(default_factory=list)  # rank memories linked to these higher
    at: datetime | None = None
    conversation_id: int | None = None
    include_episodes: bool = True
    exclude_message_ids: set[int] = field(default_factory=set)  # already in the recent window
    include_ids: set[int] = field(default_factory=set)  # always candidates (e.g. standing preferences)
    explain: bool = False
    # The query's encodes, when the caller started them itself (start_query_vectors): context starts
    # them first and assembles the window while they run.
    pending_vectors: object = None


def memories_of(ids: list[int]) -> dict[int, Memory]:
    """The full rows of the chosen candidates, still active (one read): the snapshot the ranking used is
    as of the user's generation, and what is served is checked against MySQL once more."""
    # By primary key only, status checked here: with the status in the WHERE clause SQLite's planner
    # took the status index and scanned every active row (~18 ms at 100k). A plain statement: the ORM
    # compiling the query cost more than the read.
    return {m.id: m for m in plain_instances(Memory, ids) if m.status == MemoryStatus.ACTIVE}


@dataclass
class RecallItem:
    memory: Memory
    score: float
    parts: dict[str, float]
    sources: list[dict]
    entity_ids: list[int]
    # Current and history (memory/selectors/current_state.py): "history" when a newer item on the same
    # subject answers the query too; current_by is that item's id.
    presented_as: str = "current"
    current_by: int | None = None


@dataclass
class RecallResult:
    items: list[RecallItem]
    degraded: bool = False
    degraded_reason: str | None = None
    stages: list[dict] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)


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
    kinds = set(q.kinds or STANDING_KINDS + (["episode"] if q.include_episodes else []))
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


def _semantic_scores(q: RecallQuery, vectors: QueryVectors, kept: dict[int, Candidate]) -> dict[int, float]:
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


def back_check(q: RecallQuery, ids: set[int], result: RecallResult,
               corpus: UserCorpus | None = None) -> tuple[dict[int, Candidate], dict, dict]:
    """Drop what this user may not see now. Rows, sources and links come from the user's snapshot
    (memory/selectors/corpus.py: MySQL as of the user's memory generation, so an id it does not hold
    is not active); whether each source conversation is readable and each linked entity allowed is
    read now, on every call, so a revocation applies at once."""
    corpus = corpus if corpus is not None else user_corpus(q.org.id, q.user_id)
    rows = corpus.candidates(ids)
    dropped: dict[int, str] = {i: "not active in the database (stale projection)" for i in ids - set(rows)}
    kinds = set(q.kinds or STANDING_KINDS + (["episode"] if q.include_episodes else []))
    sources, links = corpus.sources_links(list(rows))
    conversation_ids = {s["conversation_id"] for srcs in sources.values() for s in srcs if s["conversation_id"]}
    readable = readable_among(corpus.owners(q.org.id, conversation_ids), user_id=q.user_id)
    entity_ids = {e for ents in links.values() for e in ents}
    allowed = allowed_entity_ids(org_id=q.org.id, user_id=q.user_id, entity_ids=entity_ids) if entity_ids else set()
    at = q.at
    now = at or timezone.now()
    kept = {}
    for memory_id, memory in rows.items():
        src_conversations = {s["conversation_id"] for s in sources[memory_id] if s["conversation_id"]}
        reason = None
        if memory.kind not in kinds:
            reason = "kind not requested"
        elif memory.scope == "task" and memory.conversation_id != q.conversation_id:
            reason = "task-scoped to another conversation"
        elif at is not None and memory.created_at and memory.created_at > at:
            reason = "not yet known at the reference time"
        elif at is not None and memory.valid_from and memory.valid_from > at:
            reason = "not yet valid at the reference time"
        elif memory.valid_to and memory.valid_to <= now:
            reason = "expired at the reference time"
        elif src_conversations - readable:
            # Every source, not any (D5): a merged memory carries the text of each conversation it
            # came from, so one revoked source hides it.
            reason = "a source conversation is unreadable for this user"
        elif any(e not in allowed for e in links[memory_id]):
            reason = "linked entity not accessible"
        elif q.entity_ids and not set(links[memory_id]) & set(q.entity_ids):
            reason = "not linked to the requested entity"
        elif memory.kind == "episode" and {s["message_id"] for s in sources[memory_id]} & q.exclude_message_ids:
            reason = "already in the recent window"
        if reason:
            dropped[memory_id] = reason
        else:
            kept[memory_id] = memory
    if q.explain:
        result.stages.append({"stage": "back_check", "kept": sorted(kept), "dropped": dropped})
    return kept, sources, links


def read_vectors(kept: dict[int, Candidate], model_id: str) -> None:
    """Each candidate's stored vector under the live model (one plain read of MemoryEmbedding: the
    bytes are used in place, ~1 ms for 80 candidates; the index's retrieve turns every component into
    a Python float first). A candidate without one (mid re-embed) keeps None and is scored by its search
    hit, if any."""
    wanted = [memory_id for memory_id, candidate in kept.items() if candidate.vector is None]
    for memory_id, blob in plain_rows(MemoryEmbedding, ("memory", "vector"), wanted, model_id=model_id):
        kept[memory_id].vector = from_bytes(blob)
