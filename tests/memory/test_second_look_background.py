"""The background of the candidates in the second look (memory/recall/rerank.py): a candidate close to
the candidates as a whole loses relevance, before the seeds are chosen and in the final score."""
from types import SimpleNamespace

import numpy as np
import pytest

from memory.recall.rerank import background_penalty, second_look

SECOND_LOOK = {"seeds": 1, "weight": 0.4, "expand": False}


def _unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


# Four specific lines (each about one thing) and one generic line between them all (say "Maria: I
# bet": its vector is mostly the speaker and the tone, close to everything said in the conversation).
VECTORS = {1: _unit(1, 1, 1, 1), 2: _unit(1, 0, 0, 0), 3: _unit(0.9, 0.1, 0, 0), 4: _unit(0, 1, 0, 0),
           5: _unit(0, 0, 1, 0), 6: _unit(0, 0, 0, 1)}
FIRST_ROUND = {1: 1.00, 2: 0.95, 3: 0.80, 4: 0.45, 5: 0.40, 6: 0.35}  # the generic line matched best


def _setup(monkeypatch, settings, background_weight: float):
    settings.RECALL_SECOND_LOOK = {**SECOND_LOOK, "background_weight": background_weight}
    kept = {m: SimpleNamespace(vector=v, cjk=False, speaker=None) for m, v in VECTORS.items()}
    vectors = SimpleNamespace(embedder=object())  # not a composite: plain cosine of unit vectors
    q = SimpleNamespace(query="What does Maria like to cook?", org=SimpleNamespace(id=1), user_id="u")
    return q, vectors, kept


def _run(monkeypatch, settings, background_weight: float):
    q, vectors, kept = _setup(monkeypatch, settings, background_weight)
    seen_bonus = {}

    def score_round(bonus=None):
        seen_bonus.update(bonus or {})
        rows = [(m, FIRST_ROUND[m] + (bonus or {}).get(m, 0.0), {}) for m in kept]
        return sorted(rows, key=lambda row: (-row[1], -row[0]))

    no_terms = SimpleNamespace(terms_of=lambda ids: np.zeros(0, dtype=np.int64),  # no keyword round here
                               keyword_scores_of=lambda query: {})
    run = SimpleNamespace(q=q, vectors=vectors, kept=kept, sources={}, result=None, limit=10, score=score_round,
                          admit=None, neighbours=None, snapshot=no_terms)  # a recall's state (memory/recall/pipeline.py)
    ranked = second_look(run, score_round())
    return [m for m, _, _ in ranked], seen_bonus


def test_the_candidate_closest_to_all_the_others_loses_the_most(monkeypatch, settings):
    q, vectors, kept = _setup(monkeypatch, settings, 1.6)
    ids = list(VECTORS)
    stored = np.vstack([VECTORS[m] for m in ids])
    penalty = background_penalty(q, vectors, kept, ids, stored)
    mean = stored.mean(axis=0) / np.linalg.norm(stored.mean(axis=0))
    closeness = {m: float(VECTORS[m] @ mean) for m in ids}
    w_sem = settings.RECALL_WEIGHTS["semantic_en"]
    assert max(penalty, key=penalty.get) == 1
    for m in ids:  # raw cosines to the mean, less the lowest: not stretched when all are alike
        assert penalty[m] == pytest.approx(1.6 * w_sem * (closeness[m] - min(closeness.values())), abs=1e-5)
    settings.RECALL_SECOND_LOOK = {**SECOND_LOOK, "background_weight": 0.0}
    assert background_penalty(q, vectors, kept, ids, stored) == {}


def test_no_background_among_a_handful_of_candidates(monkeypatch, settings):
    # A user with a few memories, all candidates: their mean is the question's own topic.
    q, vectors, kept = _setup(monkeypatch, settings, 1.6)
    ids = list(VECTORS)
    stored = np.vstack([VECTORS[m] for m in ids])
    settings.RECALL_SECOND_LOOK = {**SECOND_LOOK, "background_weight": 1.6, "background_min": len(ids) + 1}
    assert background_penalty(q, vectors, kept, ids, stored) == {}
    settings.RECALL_SECOND_LOOK = {**SECOND_LOOK, "background_weight": 1.6, "background_min": len(ids)}
    assert background_penalty(q, vectors, kept, ids, stored)


def test_the_seed_is_what_the_question_singles_out_not_the_generic_line(monkeypatch, settings):
    # Without the background the generic line is the seed: the second look lifts what it is close
    # to, i.e. everything, and it stays first. With it, the specific best match (2) is the seed, its
    # near twin (3) rises with it, and the generic line falls below both.
    off, off_bonus = _run(monkeypatch, settings, 0.0)
    assert off[0] == 1
    on, on_bonus = _run(monkeypatch, settings, 1.6)
    assert on[:2] == [2, 3]
    assert on.index(1) > on.index(3)
    assert on_bonus[1] < off_bonus[1]  # the penalty is in the final score too
