"""The read path (DESIGN §6): scope → candidates (vector + keyword, fused) → MySQL back-check →
dedup → rank → top-k. Every stage can report what it kept and dropped (explain / console)."""
import logging
import math
import time

import numpy as np
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from conversations.selectors import readable_conversation_ids
from conversations.textutil import cjk_ratio
from entities.policy import allowed_entity_ids
from memory.embeddings import CompositeEmbedder
from memory.keyword import keyword_scores
from memory.query_shape import keyword_text, shape
from memory.second_look import enabled as second_look_enabled, second_look
from memory.selectors.conflict_marks import conflicts_apply
from memory.selectors.episode_lineage import Lineage, episode_lineage, is_small_talk
from memory.models import EntityLink, Memory, MemoryEmbedding, MemorySource
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


_MEMORY_COLUMNS = tuple(f.attname for f in Memory._meta.concrete_fields)


@dataclass(slots=True)
class _Candidate:
    """One candidate's row as plain values, plus its stored vector. Model instances are built for
    the top k only (`memory()`): building one per candidate (~100 at 100 memories per user) cost more
    than the query that read them."""
    row: tuple
    vector: bytes | None

    def __getattr__(self, name):  # only reached for column names (slots hold row and vector)
        try:
            return self.row[_COLUMN_INDEX[name]]
        except KeyError:
            raise AttributeError(name) from None

    def memory(self) -> Memory:
        return Memory.from_db(Memory.objects.db, _MEMORY_COLUMNS, self.row)


_COLUMN_INDEX = {name: i for i, name in enumerate(_MEMORY_COLUMNS)}


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


def _is_cjk(text: str) -> bool:
    return cjk_ratio(text) >= 0.3


def _weights(query: str) -> tuple[float, float]:
    w = settings.RECALL_WEIGHTS
    cjk = _is_cjk(query)
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
    cjk = _is_cjk(q.query)
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


def _semantic_candidates(q: RecallQuery, vectors: _QueryVectors, limit: int, result: RecallResult) -> dict[int, float]:
    started = time.perf_counter()
    try:
        name = active_collection()
        hits = {}
        for vector in vectors.search:
            for hit in get_vector_index().search(vector, filters=_vector_filters(q), limit=limit, collection=name):
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
    query_cjk = _is_cjk(q.query)
    return {memory_id: float(multilingual[i] if query_cjk or _is_cjk(kept[memory_id].content) else mixed[i])
            for i, (memory_id, _) in enumerate(pairs)}


def _minmax(scores: dict[int, float]) -> dict[int, float]:
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high - low < 1e-6:
        return {k: (1.0 if high > 0 else 0.0) for k in scores}
    return {k: (v - low) / (high - low) for k, v in scores.items()}


def _back_check(q: RecallQuery, ids: set[int], result: RecallResult,
                model_id: str) -> tuple[dict[int, _Candidate], dict, dict]:
    """Reload the candidates from MySQL and drop what this user may not see now. Each row comes
    with its stored vector under `model_id` (one query for both)."""
    vector = MemoryEmbedding.objects.filter(memory_id=OuterRef("pk"), model_id=model_id).values("vector")[:1]
    rows = {row[0]: _Candidate(row[:-1], row[-1]) for row in Memory.objects.filter(
        id__in=ids, org=q.org, user_id=q.user_id, status="active").annotate(
        stored_vector=Subquery(vector)).values_list(*_MEMORY_COLUMNS, "stored_vector")}
    dropped: dict[int, str] = {i: "not active in the database (stale projection)" for i in ids - set(rows)}
    kinds = set(q.kinds or STANDING_KINDS + (["episode"] if q.include_episodes else []))
    sources: dict[int, list[dict]] = defaultdict(list)
    for memory_id, message_id, conversation_id, ref in MemorySource.objects.filter(memory_id__in=rows).values_list(
            "memory_id", "message_id", "conversation_id", "external_ref"):
        sources[memory_id].append({"message_id": message_id, "conversation_id": conversation_id, "ref": ref})
    links: dict[int, list[int]] = defaultdict(list)
    for memory_id, entity_id in EntityLink.objects.filter(memory_id__in=rows).values_list("memory_id", "entity_id"):
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


def _rank(q: RecallQuery, kept: dict[int, _Candidate], semantic: dict[int, float], keyword: dict[int, float],
          links: dict[int, list[int]], raw_semantic: dict[int, float],
          lineage: dict[int, Lineage] | None = None,
          bonus: dict[int, float] | None = None) -> list[tuple[int, float, dict]]:
    w = settings.RECALL_WEIGHTS
    w_sem, w_kw = _weights(q.query)
    now = q.at or timezone.now()
    half_life = settings.RECALL_RECENCY_HALF_LIFE_DAYS
    boost = set(q.boost_entity_ids)
    lineage = lineage or {}
    scored: dict[int, tuple[float, dict]] = {}
    weak: set[int] = set()
    for memory_id, memory in kept.items():
        sem, kw = semantic.get(memory_id, 0.0), keyword.get(memory_id, 0.0)
        relevance = w_sem * sem + w_kw * kw
        # Min-max scaling makes the weakest candidate 0 whatever its cosine; the floor is judged on
        # the raw cosine so a lone weak match is not promoted.
        if max(raw_semantic.get(memory_id, 0.0) * w_sem, kw * w_kw) < settings.RECALL_MIN_RELEVANCE \
                and memory_id not in q.include_ids:
            weak.add(memory_id)
        when = memory.occurred_at or memory.created_at or now
        age_days = max(0.0, (now - when).total_seconds() / 86400)
        state = lineage[memory_id].state if memory_id in lineage else "none"
        parts = {
            "semantic": round(sem, 4), "cosine": round(raw_semantic.get(memory_id, 0.0), 4),
            "keyword": round(kw, 4), "relevance": round(relevance, 4),
            "recency": round(w["recency"] * math.pow(0.5, age_days / half_life), 4),
            "importance": round(w["importance"] * memory.importance, 4),
            "frequency": round(w["frequency"] * min(1.0, math.log1p(memory.access_count) / math.log1p(50)), 4),
            "entity": w["entity"] if boost and boost & set(links.get(memory_id, ())) else 0.0,
            # A standing memory states what is true now; the episode it came from only what was said then.
            "episode": -w["episode_penalty"] if memory.kind == "episode" else 0.0,
            # What the message said was replaced since: below what is current.
            "stale_episode": -settings.RECALL_STALE_EPISODE_PENALTY if state == "stale" else 0.0,
        }
        if bonus is not None:  # the second look (memory/second_look.py)
            parts["second_look"] = round(bonus.get(memory_id, 0.0), 4)
        score = sum(parts[p] for p in ("relevance", "recency", "importance", "frequency", "entity", "episode",
                                       "stale_episode")) + (bonus or {}).get(memory_id, 0.0)
        scored[memory_id] = (score, parts)
    # An episode's live memory outranks it; a stale episode ranks below its subject's current memory.
    # The memory takes the episode's place (plus a hair, ordered by its own relevance).
    for episode_id, line in lineage.items():
        if episode_id not in scored or episode_id in weak or line.state not in ("live", "stale"):
            continue
        floor = scored[episode_id][0]
        for ref in line.refs:
            if ref in scored and ref != episode_id:
                score, parts = scored[ref]
                lifted = floor + 0.001 + 0.001 * parts["relevance"]
                if lifted > score:
                    parts["lineage"] = round(parts.get("lineage", 0.0) + lifted - score, 4)
                    scored[ref] = (lifted, parts)
                weak.discard(ref)
    ranked = [(memory_id, score, parts) for memory_id, (score, parts) in scored.items() if memory_id not in weak]
    ranked.sort(key=lambda row: (-row[1], -row[0]))
    return ranked


def _episode_lineage(q: RecallQuery, kept: dict[int, _Candidate], sources: dict, links: dict, result: RecallResult,
                     model_id: str) -> dict[int, Lineage]:
    """Episodes follow what their message became (memory/selectors/episode_lineage.py): drop those
    restating forgotten content or another conversation's task instruction, and bring in the
    current memories they point at, back-checked like any candidate."""
    episodes = {memory_id for memory_id, memory in kept.items() if memory.kind == "episode"}
    lineage = episode_lineage(q.org.id, episodes, sources)
    dropped = {}
    for episode_id, line in lineage.items():
        if line.state == "forgotten":
            dropped[episode_id] = "restates a forgotten memory"
        elif line.state == "task" and line.conversation_id != q.conversation_id:
            dropped[episode_id] = "task-scoped instruction of another conversation"
        elif line.state == "none" and not links.get(episode_id) and is_small_talk(kept[episode_id].content):
            dropped[episode_id] = "small talk"
    for episode_id in dropped:
        kept.pop(episode_id)
        lineage.pop(episode_id)
    wanted = {ref for line in lineage.values() for ref in line.refs} - set(kept)
    if wanted:
        more, more_sources, more_links = _back_check(q, wanted, result, model_id)
        kept.update(more)
        sources.update(more_sources)
        links.update(more_links)
    if q.explain:
        result.stages.append({"stage": "episode_lineage", "dropped": dropped,
                              "states": {e: {"state": line.state, "refs": sorted(line.refs)} for e, line in lineage.items()}})
    return lineage


def _restated_above(memory_id: int, lineage: dict[int, Lineage], chosen_ids: set[int]) -> bool:
    """An episode whose message lives on in a memory already chosen (its live memory outranks it)."""
    line = lineage.get(memory_id)
    return line is not None and line.state == "live" and bool(line.refs & chosen_ids)


def recall(q: RecallQuery) -> RecallResult:
    started = time.perf_counter()
    result = RecallResult(items=[])
    k = max(1, min(q.k, settings.MAX_RECALL_K))
    limit = max(settings.RECALL_CANDIDATES, k * 3)
    if not q.query.strip():
        return result
    t0 = time.perf_counter()
    vectors = _query_vectors(q)
    result.timings_ms["embed"] = (time.perf_counter() - t0) * 1000
    vector_hits = _semantic_candidates(q, vectors, limit, result)
    t0 = time.perf_counter()
    keyword_raw = keyword_scores(org_id=q.org.id, user_id=q.user_id, query=keyword_text(q.query))
    keyword_top = dict(sorted(keyword_raw.items(), key=lambda pair: -pair[1])[:limit])
    result.timings_ms["keyword"] = (time.perf_counter() - t0) * 1000
    if q.explain:
        result.stages.append({"stage": "candidates", "semantic": vector_hits, "keyword": keyword_top})
    t0 = time.perf_counter()
    kept, sources, links = _back_check(q, set(vector_hits) | set(keyword_top) | set(q.include_ids), result,
                                       vectors.embedder.model_id)
    lineage = _episode_lineage(q, kept, sources, links, result, vectors.embedder.model_id)

    def score_round(kept: dict[int, _Candidate], bonus: dict[int, float] | None = None) -> list[tuple[int, float, dict]]:
        raw_semantic = _semantic_scores(q, vectors, kept)
        for memory_id in kept:  # no stored vector (e.g. mid re-embed): fall back to the index's score
            if memory_id not in raw_semantic and memory_id in vector_hits:
                raw_semantic[memory_id] = vector_hits[memory_id]
        top_kw = max(keyword_raw.values(), default=0.0)
        keyword = {m: keyword_raw.get(m, 0.0) / top_kw for m in kept} if top_kw > 0 else {}
        semantic = _minmax(raw_semantic) if settings.RECALL_NORMALIZE_SEMANTIC else raw_semantic
        return _rank(q, kept, semantic, keyword, links, raw_semantic, lineage, bonus)

    ranked = score_round(kept)
    if second_look_enabled(q.query):
        ranked = second_look(q, vectors, ranked, kept, sources, links, result, limit, keyword_raw, score_round)
    chosen, chosen_ids, seen_hashes, seen_sources = [], set(), set(), set()
    dedup_dropped = {}
    for memory_id, score, parts in ranked:
        memory = kept[memory_id]
        if memory.content_hash in seen_hashes:
            dedup_dropped[memory_id] = "duplicate content"
            continue
        # A memory and the episode it was extracted from say the same thing from the same turn:
        # keep the better-ranked one so the k slots carry k different pieces of evidence.
        source_key = frozenset(s["message_id"] for s in sources[memory_id] if s["message_id"])
        if settings.RECALL_COLLAPSE_SAME_SOURCE and len(source_key) == 1 and source_key in seen_sources:
            dedup_dropped[memory_id] = "same single source as a better-ranked item"
            continue
        if settings.RECALL_COLLAPSE_SAME_SOURCE and _restated_above(memory_id, lineage, chosen_ids):
            # The same rule for a memory that several turns restated (it has several sources): the
            # episode says what its live memory above says, and that memory carries its ref.
            dedup_dropped[memory_id] = "its live memory is ranked above"
            continue
        seen_hashes.add(memory.content_hash)
        if len(source_key) == 1:
            seen_sources.add(source_key)
        chosen.append((memory_id, score, parts))
        chosen_ids.add(memory_id)
        if len(chosen) >= k:
            break
    items = [RecallItem(memory=kept[memory_id].memory(), score=round(score, 4), parts=parts,
                        sources=sources[memory_id], entity_ids=links.get(memory_id, []))
             for memory_id, score, parts in chosen]
    result.items = items = conflicts_apply(items, org=q.org, user_id=q.user_id, explain=q.explain)
    result.timings_ms["back_check_rank"] = (time.perf_counter() - t0) * 1000
    if q.explain:
        result.stages.append({"stage": "dedup", "dropped": dedup_dropped})
        result.stages.append({"stage": "rank", "order": [(m, round(s, 4)) for m, s, _ in ranked]})
    result.timings_ms["total"] = (time.perf_counter() - started) * 1000
    from memory.access import record_access

    record_access([item.memory.id for item in items])
    return result
