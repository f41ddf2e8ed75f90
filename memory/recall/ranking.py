"""Ranking (DESIGN §6, step 5): each candidate's score from its parts (fused relevance, recency,
importance, access frequency, entity links, episode lineage), and the choice of distinct items.

How much each signal is worth for this query (docs/architecture.md, read path). The embedder's
cosine is the one signal every query has. The others earn their weight per query:

- Keyword evidence is scaled by the larger of the best match and the query's idf mass (the score a
  memory holding each query term once would get, `TermIndex.mass`): a short question whose terms a
  memory holds scores near 1 as before, while over a long multi-turn query, whose many common words
  every memory shares a few of, the best match is a small share of the mass and so a small score.
- The second look and the turn-neighbour lift re-rank around the first round's top hits; they run
  only when those hits are a confident seed (`confident_seed`): the user has more memories than a
  candidate list, and the top raw cosine leads the cosine after the seeds by
  RECALL_CONFIDENCE["second_look_margin"].
- Priors (recency, importance, access) are scaled by RECALL_CONFIDENCE["prior_scale"]
  (`static_parts` below), so they break near-ties.
- When the two signals disagree, the confident one decides (`keyword_trust`): the embedder's top
  candidate leads the next different piece of evidence by a clear raw cosine margin, keyword search
  puts other memories first, and its best score is shared by several of them (one common word that
  says what the user's memories are about, not which one answers). Then keyword evidence loses
  weight by how sure the embedder is and how little the keyword top stands alone, so the order falls
  back towards the embedder's. A keyword top that stands alone (a rare name, a code) keeps its weight.
"""
import math

from django.conf import settings
from django.utils import timezone

from memory.recall.candidates import fusion_weights
from memory.recall.entity_focus import EntityFocus
from memory.recall.lineage import Lineage
from memory.recall.query import RecallQuery
from memory.recall.snapshot import Candidate


def keyword_relevance(keyword_raw: dict[int, float], ids, mass: float) -> dict[int, float]:
    """Each candidate's keyword score in [0, 1]."""
    top = max(keyword_raw.values(), default=0.0)
    if top <= 0:
        return {}
    norm = settings.RECALL_CONFIDENCE.get("keyword_norm", "top")
    if norm == "mass" and mass > 0:
        return {m: min(1.0, keyword_raw.get(m, 0.0) / mass) for m in ids}
    if norm == "top_or_mass" and mass > 0:  # a full match scales as "top" does, a partial one by the mass
        scale = max(top, mass)
        return {m: keyword_raw.get(m, 0.0) / scale for m in ids}
    return {m: keyword_raw.get(m, 0.0) / top for m in ids}


def keyword_trust(raw_cosines: dict[int, float], keyword: dict[int, float], same_evidence) -> float:
    """The share of the keyword fusion weight this query keeps (module docstring), in [0, 1].
    `same_evidence(a, b)`: a and b say the same thing (one text, or one source turn), so b is no
    runner-up of a's."""
    lo, hi = settings.RECALL_CONFIDENCE.get("semantic_lead", (0.0, 0.0))
    if hi <= lo or len(raw_cosines) < 2:
        return 1.0
    ordered = sorted(raw_cosines, key=lambda m: (-raw_cosines[m], m))
    top = ordered[0]
    runner_up = next((raw_cosines[m] for m in ordered[1:] if not same_evidence(top, m)), None)
    if runner_up is None:
        return 1.0
    semantic_sure = min(1.0, max(0.0, (raw_cosines[top] - runner_up - lo) / (hi - lo)))
    best = sorted(keyword.values(), reverse=True)[:2]
    if not semantic_sure or not best or best[0] <= 0:
        return 1.0
    if keyword.get(top, 0.0) >= settings.RECALL_CONFIDENCE.get("keyword_agree", 0.5) * best[0]:
        return 1.0  # the signals agree on the embedder's top
    keyword_alone = 1.0 - (best[1] / best[0] if len(best) > 1 else 0.0)
    return 1.0 - semantic_sure * (1.0 - keyword_alone)


def confident_seed(raw_cosines: dict[int, float], seeds: int, corpus_size: int, limit: int) -> bool:
    """The second look and the neighbour lift may run: the user has more memories than one candidate
    list holds (otherwise every memory is already a candidate, the first round's order is the
    embedder's over all of them, and feedback from its top hits only pulls the order towards the
    user's dominant topic), and the top hits stand out of the candidates by raw cosine."""
    config = settings.RECALL_CONFIDENCE
    if config.get("second_look_needs_pool", True) and corpus_size <= limit:
        return False
    margin = config.get("second_look_margin", 0.0)
    if margin <= 0:
        return True
    ordered = sorted(raw_cosines.values(), reverse=True)
    if len(ordered) <= seeds:
        return False
    return ordered[0] - ordered[seeds] >= margin


def static_parts(q: RecallQuery, memory: Candidate, links: list[int], state: str,
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
        parts = static_parts(q, memory, links, state)
        share = {"direct": 1.0, "hop": settings.RECALL_ENTITY_HOP_SHARE,
                 "past": settings.RECALL_ENTITY_HOP_SHARE * settings.RECALL_ENTITY_PAST_SHARE}[link]
        parts["entity"] = w["entity"] * share
        if path is not None:
            parts["entity_path"] = path
        return parts
    prior = settings.RECALL_CONFIDENCE.get("prior_scale", 1.0)  # priors break near-ties (module docstring)
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


def rank(q: RecallQuery, kept: dict[int, Candidate], *, semantic: dict[int, float], keyword: dict[int, float],
         links: dict[int, list[int]], raw_semantic: dict[int, float], lineage: dict[int, Lineage] | None = None,
         bonus: dict[int, float] | None = None, static: dict[int, dict] | None = None,
         focus: EntityFocus | None = None, keyword_share: float = 1.0) -> list[tuple[int, float, dict]]:
    """Every candidate's score and its parts, best first; weak matches (under the relevance floor)
    left out. `static`: the recall's cache of `static_parts` per candidate (filled here), so a second
    round only adds the relevance and the bonus. `keyword_share`: of the keyword fusion weight
    (`keyword_trust`)."""
    w_sem, w_kw = fusion_weights(q.query)
    w_kw *= keyword_share
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
            fixed = static[memory_id] = static_parts(q, memory, links.get(memory_id, ()), state, focus)
        # Only what the score adds up is rounded here; the rest when an item is served (served_parts):
        # most candidates are never served, and rounding them all was a visible share of a recall.
        parts = {"semantic": sem, "cosine": cosine, "keyword": kw, "relevance": round(relevance, 4), **fixed}
        extra = 0.0
        if bonus is not None:  # the second look (memory/recall/rerank.py)
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


def served_parts(parts: dict) -> dict:
    return {name: round(value, 4) if isinstance(value, float) else value for name, value in parts.items()}


def choose_distinct(ranked: list[tuple[int, float, dict]], kept: dict[int, Candidate], sources: dict[int, list[dict]],
                 lineage: dict[int, Lineage], window: int) -> tuple[list[tuple[int, float, dict]], dict[int, str]]:
    """Dedup (DESIGN §6, step 4): the top `window` items that are different pieces of evidence, and why
    each other one above them was dropped."""
    chosen, chosen_ids, seen_hashes, seen_sources = [], set(), set(), set()
    dropped = {}
    for memory_id, score, parts in ranked:
        memory = kept[memory_id]
        if memory.content_hash in seen_hashes:
            dropped[memory_id] = "duplicate content"
            continue
        # A memory and the episode it was extracted from say the same thing from the same turn:
        # keep the better-ranked one so the k slots carry k different pieces of evidence.
        source_key = frozenset(s["message_id"] for s in sources[memory_id] if s["message_id"])
        if settings.RECALL_COLLAPSE_SAME_SOURCE and len(source_key) == 1 and source_key in seen_sources:
            dropped[memory_id] = "same single source as a better-ranked item"
            continue
        if settings.RECALL_COLLAPSE_SAME_SOURCE and _restated_above(memory_id, lineage, chosen_ids):
            # The same rule for a memory that several turns restated (it has several sources): the
            # episode says what its live memory above says, and that memory carries its ref.
            dropped[memory_id] = "its live memory is ranked above"
            continue
        seen_hashes.add(memory.content_hash)
        if len(source_key) == 1:
            seen_sources.add(source_key)
        chosen.append((memory_id, score, parts))
        chosen_ids.add(memory_id)
        if len(chosen) >= window:
            break
    return chosen, dropped


def _restated_above(memory_id: int, lineage: dict[int, Lineage], chosen_ids: set[int]) -> bool:
    """An episode whose message lives on in a memory already chosen (its live memory outranks it)."""
    line = lineage.get(memory_id)
    return line is not None and line.state == "live" and bool(line.refs & chosen_ids)
