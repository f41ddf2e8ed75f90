"""`python -m memory.learn train gate` reproduces the committed model: same predictions."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memory.learn.encode import encode_texts
from memory.learn.gate import MODEL_PATH, Gate
from memory.learn.gate_train import DATA_DIR

ROOT = Path(__file__).resolve().parents[3]


# Training needs no database: once, in the embedded profile (it takes minutes).
pytestmark = pytest.mark.embedded_only


def test_training_reproduces_the_committed_model(tmp_path):
    out = tmp_path / "gate.npz"
    done = subprocess.run([sys.executable, "-m", "memory.learn", "train", "gate", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-2000:]
    committed, trained = Gate(MODEL_PATH), Gate(out)
    assert trained.threshold == committed.threshold
    rows = [json.loads(line) for line in (DATA_DIR / "gate-tune.jsonl").read_text().splitlines()[::7]]
    texts = [r["text"] for r in rows]
    vectors = encode_texts(texts, model=committed.embedder)
    assert [r.label for r in trained.read(texts, vectors)] == [r.label for r in committed.read(texts, vectors)]
    np.testing.assert_allclose([r.p for r in trained.read(texts, vectors)],
                               [r.p for r in committed.read(texts, vectors)], atol=1e-3)


def test_the_cli_refuses_an_unknown_model():
    done = subprocess.run([sys.executable, "-m", "memory.learn", "train", "nothing"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "usage" in done.stderr
