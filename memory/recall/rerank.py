"""Rerank (DESIGN §6, step 5, second round): a second look for questions whose evidence is spread over several memories (multi-hop,
open-domain): the first round's top hits say who and what the question is about in the memories'
own words, so they seed a second round (pseudo-relevance feedback).

Seeds: the first round's top `seeds` items. Second round, with no encoder call: the mean of the
seeds' stored vectors and their terms (one more in-process keyword scoring) score the first
round's candidates again; with `expand`, the mean also searches the index once more and what is
new is back-checked like any candidate (measured at about twice the rank stage's cost, so off).
Every candidate then gets a bonus of
`weight` × (its fused relevance to the seeds), so an item that is about what the top hits are
about rises, while the first round's order still decides among the rest.

Turn neighbours (`neighbours`): a question's evidence is often the turn next to the one it
matched (the answer after a question, the line that says what "it" was). Before the back-check,
the memories of the turns next to the best candidates' turns (by their raw fused scores) are
looked up in one SQL statement and join the candidates, so they are back-checked and
lineage-checked with the rest; after the first round, those next to the top hits gain
`neighbour_weight`. The named speaker (`speaker_weight`): a question that names one of the
transcript speakers ("What might Caroline's degree be in?") is more often answered by what that
speaker said, so their turns gain a little.

The background (`background_weight`): a candidate close to the candidates as a whole (a short,
generic line such as "Maria: I bet", whose vector is mostly its speaker's name and the
conversation's tone) is close to any question about them, whatever it asks. As in Rocchio's
feedback, where the non-relevant documents' centroid is subtracted from the query, every candidate
loses `background_weight` x (its cosine to the mean of all candidates' stored vectors, less the
lowest such cosine) x the semantic fusion weight, before the seeds are chosen (so the seeds are what the
question singles out, not what every question about that person finds) and in the final score.
"""
import re

import numpy as np
from django.conf import settings
from django.db import connection

from conversations.models import Message
from memory.models import MemorySource
from memory.recall.candidates import fusion_weights, minmax, semantic_candidates
from memory.recall.query import shape
from memory.recall.query_vectors import is_cjk
from memory.vectors import similarity


def enabled(query: str) -> bool:
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


def turn_neighbours(seeds: list[int], span: int) -> dict[int, int]:
    """Memories drawn from the turns next to the seeds' turns (within `span` positions in the same
    conversation), each with the message id of the seed turn it neighbours (the nearest one): one
    SQL statement over the (conversation, seq) index. Scope and access are the caller's back-check."""
    if not seeds or span <= 0:
        return {}
    source, message = MemorySource._meta.db_table, Message._meta.db_table
    marks = ", ".join(["%s"] * len(seeds))
    # No subtraction on seq: it is unsigned on MySQL, where seq - 2 below zero is an error.
    sql = (f"SELECT s2.memory_id, m1.id, m1.seq, m2.seq FROM {source} s1 "
           f"JOIN {message} m1 ON m1.id = s1.message_id "
           f"JOIN {message} m2 ON m2.conversation_id = m1.conversation_id "
           f"AND m2.seq + %s >= m1.seq AND m2.seq <= m1.seq + %s AND m2.id <> m1.id "
           f"JOIN {source} s2 ON s2.message_id = m2.id "
           f"WHERE s1.memory_id IN ({marks})")
    with connection.cursor() as cursor:
        cursor.execute(sql, [span, span, *seeds])
        rows = cursor.fetchall()
    out: dict[int, tuple[int, int]] = {}
    for neighbour, seed_message, seed_seq, seq in rows:
        distance = abs(int(seq) - int(seed_seq))
        if neighbour not in out or distance < out[neighbour][1]:
            out[neighbour] = (seed_message, distance)
    return {neighbour: seed_message for neighbour, (seed_message, _) in out.items()}


def neighbour_candidates(q, vector_hits: dict[int, float], keyword_top: dict[int, float], snapshot) -> dict[int, int]:
    """Before the back-check, so the neighbours are checked with the first round's candidates (no
    second back-check): the turns next to the best candidates by their raw fused scores, as
    `turn_neighbours` gives them. A question's evidence is often the turn next to the one it
    matched: the answer to a question, or the line that says what "it" was."""
    config = settings.RECALL_SECOND_LOOK
    span = config.get("neighbours", 0)
    if not span or not enabled(q.query):
        return {}
    w_sem, w_kw = fusion_weights(q.query)
    semantic = minmax(vector_hits)
    top_kw = max(keyword_top.values(), default=0.0)
    pre = {m: w_sem * semantic.get(m, 0.0) + (w_kw * keyword_top.get(m, 0.0) / top_kw if top_kw > 0 else 0.0)
           for m in set(vector_hits) | set(keyword_top)}
    seeds = sorted(pre, key=lambda m: (-pre[m], -m))[:config.get("neighbour_pool", 4)]
    # Seeds without a source turn (memories written through the API) have no neighbours: no statement.
    sources, _ = snapshot.sources_links([m for m in seeds if m in snapshot])
    seeds = [m for m in seeds if any(s["message_id"] for s in sources.get(m, ()))]
    return turn_neighbours(seeds, span)


def asked_speakers(query: str, speakers: dict[int, str | None]) -> set[str]:
    """The transcript speakers (labels of the candidates' turns, "Caroline: ...") that the query
    names, unless it names every speaker there is (then naming tells nothing apart)."""
    names = {name for name in speakers.values() if name}
    words = {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z'.-]*", query)}
    words |= {w[:-2] for w in words if w.endswith("'s")}
    asked = {name for name in names if all(part.lower() in words for part in name.split())}
    return asked if asked != names else set()


def _cosines(q, vectors, kept, ids: list[int], stored: np.ndarray, unit: np.ndarray) -> dict[int, float]:
    """Cosine of `unit` to each candidate's stored vector, by the read path's rule: the multilingual
    half alone whenever Chinese is on either side."""
    share = settings.RECALL_WEIGHTS["multilingual_share_en"]
    mixed = similarity(vectors.embedder, unit, stored, cjk=False, first_weight=share)
    multilingual = similarity(vectors.embedder, unit, stored, cjk=True)
    query_cjk = is_cjk(q.query)
    return {m: float(multilingual[i] if query_cjk or kept[m].cjk else mixed[i]) for i, m in enumerate(ids)}


def _unit_mean(matrix: np.ndarray) -> np.ndarray:
    mean = np.mean(matrix, axis=0)
    return (mean / max(float(np.linalg.norm(mean)), 1e-9)).astype(np.float32)


def _stored(ranked, kept) -> tuple[list[int], np.ndarray | None]:
    ids = [memory_id for memory_id, _, _ in ranked if kept[memory_id].vector is not None]
    return ids, (np.vstack([kept[m].vector for m in ids]) if ids else None)


def background_penalty(q, vectors, kept, ids: list[int], stored: np.ndarray | None) -> dict[int, float]:
    """What each candidate loses for being close to the candidates as a whole (module docstring):
    `background_weight` x semantic weight x (its cosine to their mean stored vector - the lowest such
    cosine). Raw cosines, not min-max scaled: when the candidates are all about one thing, the
    differences are small and so is the penalty. Under `background_min` candidates there is no
    background (a user with a handful of memories: their mean is the question's own topic). In-process
    arithmetic over the vectors already read: no statement, no encoder call, no search."""
    config = settings.RECALL_SECOND_LOOK
    weight = config.get("background_weight", 0.0)
    if not weight or stored is None or len(ids) < max(3, config.get("background_min", 0)):
        return {}
    closeness = _cosines(q, vectors, kept, ids, stored, _unit_mean(stored))
    low = min(closeness.values())
    w_sem = fusion_weights(q.query)[0]
    return {m: weight * w_sem * (value - low) for m, value in closeness.items()}


def _corrected(ranked, penalty: dict[int, float]):
    """The first round's order with the background penalty taken off (the seeds are chosen from it)."""
    if not penalty:
        return ranked
    return sorted(ranked, key=lambda row: (-(row[1] - penalty.get(row[0], 0.0)), -row[0]))


def second_look(run, ranked):
    """Re-rank `ranked` with the second round. `run` is the recall's state (memory/recall/pipeline.py):
    its candidates (`kept`, `sources`), the query's vectors, the turn neighbours found before the
    back-check and the user's snapshot; `run.admit(ids)` brings new candidates in through the first
    round's back-check and episode lineage, and `run.score(bonus)` scores the (grown) candidates again."""
    q, vectors, kept, sources = run.q, run.vectors, run.kept, run.sources
    config = settings.RECALL_SECOND_LOOK
    seeds_n = config["seeds"]
    ids, stored = _stored(ranked, kept)
    penalty = background_penalty(q, vectors, kept, ids, stored)
    order = _corrected(ranked, penalty)
    seeds = _distinct_top(order, sources, seeds_n)
    seed_vectors = [kept[m].vector for m in seeds if kept[m].vector is not None]
    if not seeds or not seed_vectors:
        return ranked
    centroid = _unit_mean(np.vstack(seed_vectors))
    # The seeds' own terms, as the projection stored them (no text is read or segmented again).
    keyword2 = run.snapshot.keyword_scores_of(run.snapshot.terms_of(seeds))
    keyword2_top = dict(sorted(keyword2.items(), key=lambda pair: -pair[1])[:run.limit])
    if config.get("expand"):  # new candidates too: one more search and back-check (~2x the rank cost)
        probe = type(vectors)(vectors.embedder, centroid, [centroid])
        hits = semantic_candidates(q, probe, run.limit, run.result)
        new_ids = (set(hits) | set(keyword2_top)) - set(kept)
        if new_ids:
            run.admit(new_ids)
            ranked = run.score()
            ids, stored = _stored(ranked, kept)
            penalty = background_penalty(q, vectors, kept, ids, stored)
            order = _corrected(ranked, penalty)
    # Neighbours (found before the back-check) of the turns of this round's top items gain a bonus.
    seed_of_message = {s.get("message_id"): m for m in _distinct_top(order, sources, config.get("neighbour_seeds", seeds_n))
                       for s in sources.get(m, ())}
    near = {m: seed_of_message[seed_message] for m, seed_message in (run.neighbours or {}).items()
            if seed_message in seed_of_message and m in kept}
    if not ids:
        return ranked
    semantic2 = minmax(_cosines(q, vectors, kept, ids, stored, centroid))
    top2 = max((keyword2.get(m, 0.0) for m in kept), default=0.0)
    w_sem, w_kw = fusion_weights(q.query)
    weight = config["weight"]
    speakers, asked = {}, set()
    if config.get("speaker_weight"):  # a question about someone: what they said themselves comes first
        speakers = {m: kept[m].speaker for m, _, _ in ranked}
        asked = asked_speakers(q.query, speakers)
    bonus = {}
    for memory_id, _, _ in ranked:
        kw2 = keyword2.get(memory_id, 0.0) / top2 if top2 > 0 else 0.0
        bonus[memory_id] = weight * (w_sem * semantic2.get(memory_id, 0.0) + w_kw * kw2) - penalty.get(memory_id, 0.0)
        if memory_id in near:
            bonus[memory_id] += config.get("neighbour_weight", 0.0)
        if asked and speakers.get(memory_id) in asked:
            bonus[memory_id] += config["speaker_weight"]
    # Scored again with the bonus inside the ranking, so what the ranking guarantees after scoring
    # (a live memory above the episode it came from) still holds.
    ranked = run.score(bonus)
    # A neighbour rises at most to just below the hit it neighbours: it is evidence about that hit,
    # never a reason to put an older turn (a superseded plan, the assistant's echo) above it.
    score = {memory_id: value for memory_id, value, _ in ranked}
    over = {m: score[m] - score[seed] for m, seed in near.items() if m in score and seed in score and score[m] >= score[seed]}
    if not over:
        return ranked
    for memory_id, excess in over.items():
        bonus[memory_id] -= excess + 0.001
    return run.score(bonus)
