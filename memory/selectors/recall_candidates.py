"""Recall, first half: the query and result types, query vectors, semantic candidates and the
MySQL back-check of every hit (scope, status, time, access policy). memory/selectors/recall_pipeline.py
ranks what comes out of here; memory/second_look.py reuses it for its second search."""
import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache

import numpy as np
from django.conf import settings
from django.db import connection
from django.utils import timezone

from config.plain_reads import plain_rows
from conversations.selectors import readable_conversation_ids
from conversations.textutil import cjk_ratio
from entities.policy import allowed_entity_ids
from memory.embeddings import CompositeEmbedder
from memory.models import EntityLink, Memory, MemoryEmbedding, MemorySource
from memory.query_shape import shape
from memory.vector_index import VectorIndexUnavailable, get_vector_index
from memory.vectors import active_collection, active_embedder, from_bytes, similarity
from tenancy.models import Org

logger = logging.getLogger(__name__)

STANDING_KINDS = ["preference", "fact", "event", "context", "suggestion"]


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


# What the back-check, the ranking and the second look read of a candidate. Model instances (every
# column, converted) are built for the top k only, by one more read: converting all 27 columns of
# ~80 candidates cost more than the queries (SQLite parses each datetime in Python).
_CANDIDATE_COLUMNS = ("id", "kind", "scope", "conversation_id", "created_at", "valid_from", "valid_to", "occurred_at",
                      "importance", "access_count", "content", "content_hash")


@dataclass(slots=True)
class _Candidate:
    """One candidate's row as plain values (`_CANDIDATE_COLUMNS`), plus its stored vector."""
    row: tuple
    vector: bytes | None

    def __getattr__(self, name):  # only reached for column names (slots hold row and vector)
        try:
            return self.row[_COLUMN_INDEX[name]]
        except KeyError:
            raise AttributeError(name) from None


_COLUMN_INDEX = {name: i for i, name in enumerate(_CANDIDATE_COLUMNS)}
_DATETIME_AT = tuple(_COLUMN_INDEX[name] for name in ("created_at", "valid_from", "valid_to", "occurred_at"))


def _aware(value, tz):
    """A datetime column as the ORM would give it: SQLite hands back ISO text, MySQL a naive
    datetime; both are in the connection's time zone (UTC), made aware when USE_TZ (`tz`)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if tz is not None and value.tzinfo is None:
        value = value.replace(tzinfo=tz)
    return value


def _candidate_row(row: tuple, tz) -> tuple:
    row = list(row)
    for i in _DATETIME_AT:
        row[i] = _aware(row[i], tz)
    return tuple(row)


def memories_of(ids: list[int]) -> dict[int, Memory]:
    """The full rows of the chosen candidates (one read)."""
    # No ordering (the model's default would sort the rows for nothing).
    return {m.id: m for m in Memory.objects.filter(id__in=ids).order_by()} if ids else {}


@dataclass
class RecallItem:
    memory: Memory
    score: float
    parts: dict[str, float]
    sources: list[dict]
    entity_ids: list[int]


@dataclass
class RecallResult:
    items: list[RecallItem]
    degraded: bool = False
    degraded_reason: str | None = None
    stages: list[dict] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)


@lru_cache(maxsize=65536)
def is_cjk(text: str) -> bool:
    # Cached: the ranking asks it of every candidate's text in each round (22k calls per 170 recalls).
    return cjk_ratio(text) >= 0.3


def fusion_weights(query: str) -> tuple[float, float]:
    w = settings.RECALL_WEIGHTS
    cjk = is_cjk(query)
    sem, kw = (w["semantic_zh"], w["keyword_zh"]) if cjk else (w["semantic_en"], w["keyword_en"])
    if shape(query).long:  # keywords of a dialogue are weaker evidence than of a question
        kw *= settings.RECALL_LONG_QUERY["keyword_scale_zh" if cjk else "keyword_scale_en"]
    return sem, kw


def _vector_filters(q: RecallQuery) -> dict:
    kinds = list(q.kinds or STANDING_KINDS + (["episode"] if q.include_episodes else []))
    filters = {"org": str(q.org.id), "user_id": q.user_id, "status": "active", "kind": kinds}
    if q.entity_ids:
        filters["entity_ids"] = list(q.entity_ids)
    if q.at is not None:
        filters["created"] = {"lte": q.at.timestamp()}
    return filters


@dataclass
class _QueryVectors:
    embedder: object
    unit: np.ndarray  # the query as a document would be embedded: scores stored vectors exactly
    search: list[np.ndarray]  # vectors sent to the index for candidates


def blend(whole: _QueryVectors, focus: _QueryVectors, focus_weight: float) -> _QueryVectors:
    mix = lambda a, b: ((1.0 - focus_weight) * a + focus_weight * b).astype(np.float32)  # noqa: E731
    return _QueryVectors(whole.embedder, mix(whole.unit, focus.unit),
                         [mix(a, b) for a, b in zip(whole.search, focus.search)])


def _query_vectors(q: RecallQuery) -> _QueryVectors:
    embedder = active_embedder()
    cjk = is_cjk(q.query)
    whole = _text_vectors(embedder, q.query, cjk)
    query_shape = shape(q.query)
    if not query_shape.long:
        return whole
    # A dialogue: the whole and its last turn(s), mixed (cosine is linear in the query vector).
    return blend(whole, _text_vectors(embedder, query_shape.focus, cjk), settings.RECALL_LONG_QUERY["focus_weight"])


def _text_vectors(embedder, text: str, cjk: bool) -> _QueryVectors:
    if not isinstance(embedder, CompositeEmbedder):
        unit = embedder.encode_one(text)
        return _QueryVectors(embedder, unit, [unit])
    # One encode per model; a Chinese query searches with the multilingual half only, an English one
    # with the English mix and, for cross-lingual hits (English question, Chinese memory), the
    # multilingual half too.
    if cjk:
        # Chinese is scored by the multilingual half alone: the English model need not run at all.
        first = embedder.parts[0].encode_one(text)
        second = np.zeros(embedder.parts[1].dim, dtype=np.float32)
        return _QueryVectors(embedder, embedder.compose(first, second), [embedder.compose(first, second, 1.0)])
    first, second = embedder.encode_parts(text)
    unit = embedder.compose(first, second)
    multilingual = embedder.compose(first, second, 1.0)
    mix = embedder.compose(first, second, settings.RECALL_WEIGHTS["multilingual_share_en"])
    return _QueryVectors(embedder, unit, [mix, multilingual])


def semantic_candidates(q: RecallQuery, vectors: _QueryVectors, limit: int, result: RecallResult) -> dict[int, float]:
    started = time.perf_counter()
    try:
        name = active_collection()
        hits = {}
        for vector in vectors.search:
            # Ids and scores only: the back-check reads the rows from MySQL, so payloads would be decoded for nothing.
            for hit in get_vector_index().search(vector, filters=_vector_filters(q), limit=limit, collection=name,
                                                 with_payload=False):
                hits[hit.point_id] = max(hits.get(hit.point_id, -1.0), float(hit.score))
    except VectorIndexUnavailable as exc:
        result.degraded, result.degraded_reason = True, "vector_index_unavailable"
        logger.warning("recall degraded to keyword candidates: %s", type(exc).__name__)
        return {}
    finally:
        result.timings_ms["vector"] = (time.perf_counter() - started) * 1000
    return hits


def _semantic_scores(q: RecallQuery, vectors: _QueryVectors, kept: dict[int, _Candidate]) -> dict[int, float]:
    """Cosine of the query against each kept memory's stored vector (MySQL), so keyword-only
    candidates get a semantic score too and every score comes from the same formula."""
    pairs = [(memory_id, candidate.vector) for memory_id, candidate in kept.items() if candidate.vector is not None]
    if not pairs:
        return {}
    stored = np.vstack([from_bytes(blob) for _, blob in pairs])
    share = settings.RECALL_WEIGHTS["multilingual_share_en"]
    mixed = similarity(vectors.embedder, vectors.unit, stored, cjk=False, first_weight=share)
    multilingual = similarity(vectors.embedder, vectors.unit, stored, cjk=True)
    query_cjk = is_cjk(q.query)
    return {memory_id: float(multilingual[i] if query_cjk or is_cjk(kept[memory_id].content) else mixed[i])
            for i, (memory_id, _) in enumerate(pairs)}


def minmax(scores: dict[int, float]) -> dict[int, float]:
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high - low < 1e-6:
        return {k: (1.0 if high > 0 else 0.0) for k in scores}
    return {k: (v - low) / (high - low) for k, v in scores.items()}


def back_check(q: RecallQuery, ids: set[int], result: RecallResult,
                model_id: str) -> tuple[dict[int, _Candidate], dict, dict]:
    """Reload the candidates from MySQL and drop what this user may not see now. Each row comes
    with its stored vector under `model_id` (a second plain read: on SQLite a correlated subquery per
    row cost several times the two reads)."""
    tz = connection.timezone if settings.USE_TZ else None
    found = [_candidate_row(row, tz) for row in plain_rows(Memory, _CANDIDATE_COLUMNS, list(ids), key="id", org=q.org.id,
                                                         user_id=q.user_id, status="active")]
    stored = dict(plain_rows(MemoryEmbedding, ("memory", "vector"), [row[0] for row in found], model_id=model_id))
    rows = {row[0]: _Candidate(row, stored.get(row[0])) for row in found}
    dropped: dict[int, str] = {i: "not active in the database (stale projection)" for i in ids - set(rows)}
    kinds = set(q.kinds or STANDING_KINDS + (["episode"] if q.include_episodes else []))
    sources: dict[int, list[dict]] = defaultdict(list)
    for memory_id, message_id, conversation_id, ref in plain_rows(
            MemorySource, ("memory", "message", "conversation", "external_ref"), list(rows)):
        sources[memory_id].append({"message_id": message_id, "conversation_id": conversation_id, "ref": ref})
    links: dict[int, list[int]] = defaultdict(list)
    for memory_id, entity_id in plain_rows(EntityLink, ("memory", "entity"), list(rows)):
        links[memory_id].append(entity_id)
    conversation_ids = {s["conversation_id"] for srcs in sources.values() for s in srcs if s["conversation_id"]}
    readable = readable_conversation_ids(org=q.org, user_id=q.user_id, among=conversation_ids)
    entity_ids = {e for ents in links.values() for e in ents}
    allowed = allowed_entity_ids(org_id=q.org.id, user_id=q.user_id, entity_ids=entity_ids)
    at = q.at
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
        elif memory.valid_to and memory.valid_to <= (at or timezone.now()):
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
