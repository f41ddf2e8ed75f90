"""The learned gate: is a user's sentence worth keeping, and as what? (issue 39, item 1; D25)

"Remember by default": a user's statement about themselves, their organisation, people, places or
things they deal with is kept unless it is clearly not worth keeping. The closed classes decide first
(``signals.closed_class``: a question, a greeting/thanks/ack, a do-not-remember, a one-time
instruction); every other sentence is read by a small linear model over its embeddings (both halves
of the service's composite vector) and the rule signals (``signals.py``). It answers a probability
for each of fact / preference / event / task / none; the keep probability is the sum of the first
three. A sentence is kept when that reaches the model's threshold (chosen on the tune half's
cross-validation for recall first), as the most probable of the three kinds; otherwise it is
task-only or dropped, whichever is more probable.

The model is plain arrays in ``models/gate.npz`` (written by ``gate_train.py``); inference is NumPy.
"""
from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memory.learn.encode import encode_texts
from memory.learn.signals import closed_class, signals

__all__ = ["KEEP_KINDS", "MODEL_PATH", "Gate", "GateReading", "features", "get_gate"]

MODEL_PATH = Path(__file__).resolve().parent / "models" / "gate.npz"
KEEP_KINDS = ("fact", "preference", "event")


@dataclass(frozen=True)
class GateReading:
    """What the gate says of one sentence: ``label`` is the decision (fact, preference, event, task
    or none), ``p`` the keep probability (1.0 or 0.0 when a closed class decided), ``closed`` the closed
    class that decided it, if any."""

    label: str
    p: float
    closed: str | None = None

    @property
    def keep(self) -> bool:
        return self.label in KEEP_KINDS


def features(texts: list[str], vectors: np.ndarray) -> np.ndarray:
    """The model's input rows: each sentence's unit-part vector, then its rule signals."""
    flags = np.stack([signals(t) for t in texts]) if texts else np.zeros((0, 0), dtype=np.float32)
    return np.hstack([np.asarray(vectors, dtype=np.float32), flags]).astype(np.float32)


class Gate:
    def __init__(self, path: Path = MODEL_PATH):
        data = np.load(path, allow_pickle=False)
        self.classes = [str(c) for c in data["classes"]]
        self.coef, self.intercept = data["coef"], data["intercept"]
        self.mean, self.scale = data["mean"], data["scale"]
        self.threshold = float(data["threshold"])
        self.embedder = str(data["embedder"])  # the model name, as EMBEDDING_MODEL spells it
        self.embedder_id = str(data["embedder_id"])  # its model_id: what the live collection's must be
        self.version = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
        self._keep = [self.classes.index(k) for k in KEEP_KINDS]

    def probabilities(self, rows: np.ndarray) -> np.ndarray:
        z = ((rows - self.mean) / self.scale) @ self.coef.T + self.intercept
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def read(self, texts: list[str], vectors: np.ndarray | None = None, *, threshold: float | None = None
             ) -> list[GateReading]:
        """One reading per sentence. ``vectors``: the sentences' unit-part vectors from the gate's
        embedder (``encode.halves``); None encodes them here."""
        threshold = self.threshold if threshold is None else threshold
        out: list[GateReading | None] = [None] * len(texts)
        todo = []
        for i, text in enumerate(texts):
            closed = closed_class(text)
            if closed is not None:
                out[i] = GateReading("task" if closed == "task" else "none", 0.0, closed)
            else:
                todo.append(i)
        if todo:
            if vectors is None:
                rows_v = encode_texts([texts[i] for i in todo], model=self.embedder)
            else:
                rows_v = np.asarray(vectors)[todo]
            probs = self.probabilities(features([texts[i] for i in todo], rows_v))
            for i, p in zip(todo, probs):
                keep = float(p[self._keep].sum())
                if keep >= threshold:
                    label = KEEP_KINDS[int(np.argmax(p[self._keep]))]
                else:
                    label = "task" if p[self.classes.index("task")] > p[self.classes.index("none")] else "none"
                out[i] = GateReading(label, round(keep, 4))
        return out  # type: ignore[return-value]


_lock = threading.Lock()
_gate: Gate | None = None


def get_gate() -> Gate:
    """The process-wide gate, loaded once."""
    global _gate
    with _lock:
        if _gate is None:
            _gate = Gate()
        return _gate

