"""How much each ranking signal is worth for this query (docs/architecture.md, read path).

The embedder's cosine is the one signal every query has. The others earn their weight per query:

- Keyword evidence is scaled by the larger of the best match and the query's idf mass (the score a
  memory holding each query term once would get, `TermIndex.mass`): a short question whose terms a
  memory holds scores near 1 as before, while over a long multi-turn query, whose many common words
  every memory shares a few of, the best match is a small share of the mass and so a small score.
- The second look and the turn-neighbour lift re-rank around the first round's top hits; they run
  only when those hits are a confident seed (`confident_seed`): the user has more memories than a
  candidate list, and the top raw cosine leads the cosine after the seeds by
  RECALL_CONFIDENCE["second_look_margin"].
- Priors (recency, importance, access) are scaled by RECALL_CONFIDENCE["prior_scale"]
  (memory/selectors/recall_pipeline.py `_static_parts`), so they break near-ties.
"""
from django.conf import settings


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
