"""A second look for questions whose evidence is spread over several memories (multi-hop,
open-domain): the first round's top hits say who and what the question is about in the memories'
own words, so they seed a second round (pseudo-relevance feedback).

Seeds: the first round's top `seeds` items. Second round, with no encoder call: the mean of the
seeds' stored vectors and their terms (one more in-process keyword scoring) score the first
round's candidates again; with `expand`, the mean also searches the index once more and what is
new is back-checked like any candidate (measured at about twice the rank stage's cost, so off).
Every candidate then gets a bonus of
`weight` × (its fused relevance to the seeds), so an item that is about what the top hits are
about rises, while the first round's order still decides among the rest.
"""
import numpy as np
from django.conf import settings

from memory.keyword import keyword_scores
from memory.selectors.recall_candidates import back_check, fusion_weights, is_cjk, minmax, semantic_candidates
from memory.vectors import from_bytes, similarity


def enabled(query: str) -> bool:
    from memory.query_shape import shape

    config = settings.RECALL_SECOND_LOOK
    return bool(config["weight"]) and not shape(query).long


def _distinct_top(ranked, sources, n: int) -> list[int]:
    """The top `n` items that are different pieces of evidence: a memory and the episode of the
    turn it came from sit side by side in the ranking (the live memory just above its episode),
    and two seeds from one turn would make the second look a look at that turn only."""
    seeds: list[int] = []
    seen: set[int] = set()
    for memory_id, _, _ in ranked:
        messages = {s["message_id"] for s in sources.get(memory_id, ()) if s.get("message_id")}
        if messages & seen:
            continue
        seeds.append(memory_id)
        seen |= messages
        if len(seeds) >= n:
            break
    return seeds


def second_look(q, vectors, ranked, kept, sources, links, result, limit, keyword_raw, score_round):
    """Re-rank `ranked` with the second round; `kept`/`sources`/`links` grow in place.
    `score_round(kept)` re-runs the first round's scoring over the (grown) candidate set."""

    config = settings.RECALL_SECOND_LOOK
    seeds = _distinct_top(ranked, sources, config["seeds"])
    seed_vectors = [from_bytes(kept[m].vector) for m in seeds if kept[m].vector is not None]
    if not seeds or not seed_vectors:
        return ranked
    centroid = np.mean(np.vstack(seed_vectors), axis=0)
    centroid = (centroid / max(float(np.linalg.norm(centroid)), 1e-9)).astype(np.float32)
    seed_text = " ".join(kept[m].content for m in seeds)
    keyword2 = keyword_scores(org_id=q.org.id, user_id=q.user_id, query=seed_text)
    keyword2_top = dict(sorted(keyword2.items(), key=lambda pair: -pair[1])[:limit])
    if config.get("expand"):  # new candidates too: one more search and back-check (~2x the rank cost)
        probe = type(vectors)(vectors.embedder, centroid, [centroid])
        hits = semantic_candidates(q, probe, limit, result)
        new_ids = (set(hits) | set(keyword2_top)) - set(kept)
        if new_ids:
            more, more_sources, more_links = back_check(q, new_ids, result, vectors.embedder.model_id)
            kept.update(more)
            sources.update(more_sources)
            links.update(more_links)
            ranked = score_round(kept)
    ids = [memory_id for memory_id, _, _ in ranked if kept[memory_id].vector is not None]
    if not ids:
        return ranked
    stored = np.vstack([from_bytes(kept[m].vector) for m in ids])
    # The read path's rule: the multilingual half alone whenever Chinese is on either side.
    share = settings.RECALL_WEIGHTS["multilingual_share_en"]
    mixed = similarity(vectors.embedder, centroid, stored, cjk=False, first_weight=share)
    multilingual = similarity(vectors.embedder, centroid, stored, cjk=True)
    query_cjk = is_cjk(q.query)
    semantic2 = minmax({m: float(multilingual[i] if query_cjk or is_cjk(kept[m].content) else mixed[i])
                         for i, m in enumerate(ids)})
    top2 = max((keyword2.get(m, 0.0) for m in kept), default=0.0)
    w_sem, w_kw = fusion_weights(q.query)
    weight = config["weight"]
    bonus = {}
    for memory_id, _, _ in ranked:
        kw2 = keyword2.get(memory_id, 0.0) / top2 if top2 > 0 else 0.0
        bonus[memory_id] = weight * (w_sem * semantic2.get(memory_id, 0.0) + w_kw * kw2)
    # Scored again with the bonus inside the ranking, so what the ranking guarantees after scoring
    # (a live memory above the episode it came from) still holds.
    return score_round(kept, bonus)
