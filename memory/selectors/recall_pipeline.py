"""The read path (DESIGN §6): scope → candidates (vector + keyword, fused) → MySQL back-check →
dedup → rank → top-k. Every stage can report what it kept and dropped (explain / console)."""
import dataclasses
import logging
import math
import time

from django.conf import settings
from django.utils import timezone

from memory.choices import STANDING_KINDS as _CONFLICT_KINDS  # the kinds a possible conflict pairs
from memory.query_shape import keyword_text
from memory.second_look import enabled as second_look_enabled
from memory.second_look import neighbour_candidates, second_look
from memory.selectors.conflict_marks import conflicts_apply, open_conflicts
from memory.selectors.corpus import Candidate, UserCorpus, user_corpus
from memory.selectors.current_state import history_apply, history_window
from memory.selectors.entity_focus import EntityFocus, entity_focus
from memory.selectors.episode_lineage import Lineage, episode_lineage
from memory.selectors.query_vectors import start_query_vectors
from memory.selectors.recall_candidates import (  # noqa: F401  (the types are part of this module's interface)
    STANDING_KINDS,
    RecallItem,
    RecallQuery,
    RecallResult,
    _semantic_scores,
    back_check,
    fusion_weights,
    memories_of,
    minmax,
    read_vectors,
    semantic_candidates,
)
from memory.signal_confidence import confident_seed, keyword_relevance
from memory.vectors import active_embedder

logger = logging.getLogger(__name__)


_STATIC = ("recency", "importance", "frequency", "entity", "episode", "stale_episode")


def _static_parts(q: RecallQuery, memory: Candidate, links: list[int], state: str,
                  focus: EntityFocus | None = None) -> dict:
    """The parts of a candidate's score that do not depend on the query's relevance (the same in
    every round of one recall)."""
    w = settings.RECALL_WEIGHTS
    now = q.at or timezone.now()
    when = memory.occurred_at or memory.created_at or now
    age_days = max(0.0, (now - when).total_seconds() / 86400)
    boost = q.boost_entity_ids
    link, path = focus.part(links) if focus is not None else (None, None)
    if link is not None and not (boost and set(boost) & set(links)):
        # Linked to what the query names, or one relation away from it (below a direct link).
        parts = _static_parts(q, memory, links, state)
        parts["entity"] = w["entity"] * (1.0 if link == "direct" else settings.RECALL_ENTITY_HOP_SHARE)
        if path is not None:
            parts["entity_path"] = path
        return parts
    prior = settings.RECALL_CONFIDENCE.get("prior_scale", 1.0)  # priors break near-ties (memory/signal_confidence.py)
    return {
        "recency": round(prior * w["recency"] * math.pow(0.5, age_days / settings.RECALL_RECENCY_HALF_LIFE_DAYS), 4),
        "importance": round(prior * w["importance"] * memory.importance, 4),
        "frequency": round(prior * w["frequency"] * min(1.0, math.log1p(memory.access_count) / math.log1p(50)), 4),
        "entity": w["entity"] if boost and set(boost) & set(links) else 0.0,
        # A standing memory states what is true now; the episode it came from only what was said then.
        "episode": -w["episode_penalty"] if memory.kind == "episode" else 0.0,
        # What the message said was replaced since: below what is current.
        "stale_episode": -settings.RECALL_STALE_EPISODE_PENALTY if state == "stale" else 0.0,
    }


def _rank(q: RecallQuery, kept: dict[int, Candidate], semantic: dict[int, float], keyword: dict[int, float],
          links: dict[int, list[int]], raw_semantic: dict[int, float],
          lineage: dict[int, Lineage] | None = None,
          bonus: dict[int, float] | None = None, static: dict[int, dict] | None = None,
          focus: EntityFocus | None = None) -> list[tuple[int, float, dict]]:
    """`static`: the recall's cache of `_static_parts` per candidate (filled here), so a second round
    only adds the relevance and the bonus."""
    w_sem, w_kw = fusion_weights(q.query)
    lineage = lineage or {}
    static = {} if static is None else static
    floor = settings.RECALL_MIN_RELEVANCE
    scored: dict[int, tuple[float, dict]] = {}
    weak: set[int] = set()
    for memory_id, memory in kept.items():
        sem, kw = semantic.get(memory_id, 0.0), keyword.get(memory_id, 0.0)
        relevance = w_sem * sem + w_kw * kw
        cosine = raw_semantic.get(memory_id, 0.0)
        # Min-max scaling makes the weakest candidate 0 whatever its cosine; the floor is judged on
        # the raw cosine so a lone weak match is not promoted.
        if max(cosine * w_sem, kw * w_kw) < floor and memory_id not in q.include_ids:
            weak.add(memory_id)
        fixed = static.get(memory_id)
        if fixed is None:
            state = lineage[memory_id].state if memory_id in lineage else "none"
            fixed = static[memory_id] = _static_parts(q, memory, links.get(memory_id, ()), state, focus)
        # Only what the score adds up is rounded here; the rest when an item is served (_served_parts):
        # most candidates are never served, and rounding them all was a visible share of a recall.
        parts = {"semantic": sem, "cosine": cosine, "keyword": kw, "relevance": round(relevance, 4), **fixed}
        extra = 0.0
        if bonus is not None:  # the second look (memory/second_look.py)
            extra = bonus.get(memory_id, 0.0)
            parts["second_look"] = round(extra, 4)
        score = (parts["relevance"] + fixed["recency"] + fixed["importance"] + fixed["frequency"] + fixed["entity"]
                 + fixed["episode"] + fixed["stale_episode"]) + extra
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


def _served_parts(parts: dict) -> dict:
    return {name: round(value, 4) if isinstance(value, float) else value for name, value in parts.items()}


def _episode_lineage(q: RecallQuery, kept: dict[int, Candidate], sources: dict, links: dict, result: RecallResult,
                     corpus: UserCorpus) -> dict[int, Lineage]:
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
        elif line.state == "none" and not links.get(episode_id) and kept[episode_id].small_talk:
            dropped[episode_id] = "small talk"
    for episode_id in dropped:
        kept.pop(episode_id)
        lineage.pop(episode_id)
    wanted = {ref for line in lineage.values() for ref in line.refs} - set(kept)
    if wanted:
        more, more_sources, more_links = back_check(q, wanted, result, corpus)
        kept.update(more)
        sources.update(more_sources)
        links.update(more_links)
    if q.explain:
        result.stages.append({"stage": "episode_lineage", "dropped": dropped,
                              "states": {e: {"state": line.state, "refs": sorted(line.refs)} for e, line in lineage.items()}})
    return lineage


def _merge_back_checks(result: RecallResult) -> None:
    """The back-check runs in rounds (keyword candidates while the query is embedded, then the vector
    hits and neighbours, then what the episode lineage and the second look bring in): one stage for
    the explainer, right after the candidates."""
    rounds = [stage for stage in result.stages if stage["stage"] == "back_check"]
    merged = {"stage": "back_check", "kept": sorted({i for r in rounds for i in r["kept"]}),
              "dropped": {i: why for r in rounds for i, why in r["dropped"].items()}}
    result.stages[:] = [stage for stage in result.stages if stage["stage"] != "back_check"]
    at = next((i + 1 for i, stage in enumerate(result.stages) if stage["stage"] == "candidates"), 0)
    result.stages.insert(at, merged)


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
    embedder = active_embedder()
    # The query is embedded on the encoder threads while this thread reads the user's snapshot and
    # scores keywords: on two cores the embedding and the reads overlap (memory/selectors/query_vectors.py).
    pending = q.pending_vectors or start_query_vectors(q.query, embedder)
    t0 = time.perf_counter()
    corpus = user_corpus(q.org.id, q.user_id)
    focus = entity_focus(org=q.org, user_id=q.user_id, query=q.query, conversation_id=q.conversation_id)
    if focus is not None and focus.memory_ids:
        # Linked memories are candidates whatever their wording, and the relevance floor spares them.
        q = dataclasses.replace(q, include_ids=set(q.include_ids) | set(focus.memory_ids))
    keyword_query = keyword_text(q.query)
    keyword_raw = corpus.keyword_scores(keyword_query)
    keyword_mass = corpus.keyword_mass(keyword_query) if keyword_raw else 0.0
    keyword_top = dict(sorted(keyword_raw.items(), key=lambda pair: -pair[1])[:limit])
    result.timings_ms["keyword"] = (time.perf_counter() - t0) * 1000
    # Still while the encoders run: back-check the keyword candidates and read their vectors.
    early = set(keyword_top) | set(q.include_ids)
    kept, sources, links = back_check(q, early, result, corpus)
    read_vectors(kept, embedder.model_id)
    result.timings_ms["overlap"] = (time.perf_counter() - t0) * 1000
    vectors = pending()
    result.timings_ms["embed"] = (time.perf_counter() - started) * 1000
    vector_hits = semantic_candidates(q, vectors, limit, result)
    if q.explain:
        result.stages.append({"stage": "candidates", "semantic": vector_hits, "keyword": keyword_top})
    t0 = time.perf_counter()
    neighbours = neighbour_candidates(q, vector_hits, keyword_top, corpus)  # memory/second_look.py: one statement
    more, more_sources, more_links = back_check(q, (set(vector_hits) | set(neighbours)) - early, result, corpus)
    kept.update(more)
    sources.update(more_sources)
    links.update(more_links)
    lineage = _episode_lineage(q, kept, sources, links, result, corpus)
    read_vectors(kept, embedder.model_id)

    semantic_of: dict[frozenset, dict[int, float]] = {}  # the second look scores the same candidates again
    static: dict[int, dict] = {}  # each candidate's parts that no round changes

    def score_round(kept: dict[int, Candidate], bonus: dict[int, float] | None = None) -> list[tuple[int, float, dict]]:
        key = frozenset(kept)
        raw_semantic = semantic_of.get(key)
        if raw_semantic is None:
            raw_semantic = _semantic_scores(q, vectors, kept)
            for memory_id in kept:  # no stored vector (e.g. mid re-embed): fall back to the index's score
                if memory_id not in raw_semantic and memory_id in vector_hits:
                    raw_semantic[memory_id] = vector_hits[memory_id]
            semantic_of.clear()
            semantic_of[key] = raw_semantic
        keyword = keyword_relevance(keyword_raw, kept, keyword_mass)
        semantic = minmax(raw_semantic) if settings.RECALL_NORMALIZE_SEMANTIC else raw_semantic
        return _rank(q, kept, semantic, keyword, links, raw_semantic, lineage, bonus, static, focus)

    def admit(ids: set[int]) -> None:  # later candidates (second look): back-checked and lineage-checked like the first
        more, more_sources, more_links = back_check(q, ids - set(kept), result, corpus)
        sources.update(more_sources)
        links.update(more_links)
        lineage.update(_episode_lineage(q, more, sources, links, result, corpus))
        read_vectors(more, embedder.model_id)
        kept.update(more)

    ranked = score_round(kept)
    if second_look_enabled(q.query) and confident_seed(semantic_of.get(frozenset(kept), {}),
                                                       settings.RECALL_SECOND_LOOK["seeds"], len(corpus.ids), limit):
        ranked = second_look(q, vectors, ranked, kept, sources, links, result, limit, keyword_raw, score_round, admit,
                             neighbours, corpus)
    # Current and history are decided among the top of the ranked list, so it is chosen past k first.
    window = history_window(k)
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
        if len(chosen) >= window:
            break
    full = memories_of([memory_id for memory_id, _, _ in chosen])
    items = [RecallItem(memory=full[memory_id], score=round(score, 4), parts=_served_parts(parts),
                        sources=sources[memory_id], entity_ids=links.get(memory_id, []))
             for memory_id, score, parts in chosen if memory_id in full]  # gone since the back-check: left out
    # Open possible conflicts (the write path's judge: both kept, the newer first) among the window are
    # evidence for current and history too: one read serves both.
    t1 = time.perf_counter()
    pairs = open_conflicts(org=q.org, user_id=q.user_id,
                           ids=[item.memory.id for item in items if item.memory.kind in _CONFLICT_KINDS])
    items = history_apply(items, kept, lineage, embedder, k=k, explain=q.explain, stages=result.stages,
                          flagged={(older, newer) for _, older, newer in pairs})
    result.timings_ms["current_state"] = (time.perf_counter() - t1) * 1000  # part of back_check_rank
    result.items = items = conflicts_apply(items, org=q.org, user_id=q.user_id, explain=q.explain, pairs=pairs)
    result.timings_ms["back_check_rank"] = (time.perf_counter() - t0) * 1000
    if q.explain:
        _merge_back_checks(result)
        result.stages.append({"stage": "dedup", "dropped": dedup_dropped})
        result.stages.append({"stage": "rank", "order": [(m, round(s, 4)) for m, s, _ in ranked]})
    result.timings_ms["total"] = (time.perf_counter() - started) * 1000
    from memory.access import record_access

    record_access([item.memory.id for item in items])
    return result
