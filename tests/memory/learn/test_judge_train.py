"""`python -m memory.learn train judge` reproduces the committed model (D25): the same data and
encoder give the same bands and, on the CPU the model was trained on, the same numbers.

On another machine the result moves, in two ways seen here: on an AMD EPYC machine (session 27) the
retrained network kept the same bands and 90 % of the decisions on the sampled tuning pairs, with
probabilities off by 0.05 on average (the encoder's and the linear algebra's kernels round differently,
and Adam with early stopping carries that far); on another (session 28) the retrained network's probabilities
came out the same to 1e-8, but the bands, chosen where the out-of-fold precision first reaches 0.92, came out 0.08 higher
(0.74 / 0.69 for 0.66 / 0.61), on the committed tree as on the new one. So the check is bands within
BAND_TOLERANCE and most decisions, not every digit: a change to the data, the features or the training
still moves them further (docs/evaluation.md, sessions 27 and 28)."""
import pytest

from memory.learn import judge_train
from memory.learn.judge import decide
from memory.learn.judge_model import MODEL_PATH, load_model

# Training needs no database: once, in the embedded profile (it takes minutes).
pytestmark = pytest.mark.embedded_only

SAME_DECISIONS = 0.85
BAND_TOLERANCE = 0.1


def test_train_reproduces_the_committed_model(tmp_path, capsys):
    out = tmp_path / "judge.npz"
    assert judge_train.train(["--out", str(out)]) == 0
    committed, trained = load_model(MODEL_PATH), load_model(out)
    assert trained.bands.keys() == committed.bands.keys()
    assert all(abs(trained.bands[k] - committed.bands[k]) <= BAND_TOLERANCE for k in committed.bands), trained.bands
    rows = judge_train.load("tune")[::50]
    scalars, vectors = judge_train.features(rows)
    ours = committed.proba(committed.inputs(scalars, vectors))
    theirs = trained.proba(trained.inputs(scalars, vectors))
    decisions = [(decide(dict(zip(committed.labels, a)), committed.bands),
                  decide(dict(zip(trained.labels, b)), trained.bands)) for a, b in zip(ours, theirs)]
    same = sum(a == b for a, b in decisions) / len(decisions)
    assert same >= SAME_DECISIONS, same
    assert "wrote" in capsys.readouterr().out
