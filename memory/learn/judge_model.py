"""The learned judge's model as plain arrays (`memory/learn/models/judge.npz`): a small neural network
(one hidden layer of rectified units, a softmax over the three classes) over the standardised scalar
features and the raw vector features, evaluated in NumPy. No pickle: the file holds only numbers and
names, written by `memory.learn.judge_train` and read here."""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["JudgeModel", "MODEL_PATH", "load_model"]

MODEL_PATH = Path(__file__).resolve().parent / "models" / "judge.npz"


@dataclass(frozen=True)
class JudgeModel:
    model_id: str  # the embedding model the features were computed with (a name get_embedder knows)
    labels: tuple[str, ...]  # class order of the probabilities
    scalar_mean: np.ndarray  # scalar features are standardised with the training half's mean and spread
    scalar_scale: np.ndarray
    vector_gain: float  # vector features (products of unit vectors, ~0.03 each) scaled to the scalars' range
    hidden_w: np.ndarray  # (inputs, hidden)
    hidden_b: np.ndarray
    out_w: np.ndarray  # (hidden, classes)
    out_b: np.ndarray
    bands: dict  # decision thresholds calibrated in training (judge.py reads them)

    @property
    def vector_width(self) -> int:
        return self.hidden_w.shape[0] - self.scalar_mean.size

    def inputs(self, scalars: np.ndarray, vectors: np.ndarray) -> np.ndarray:
        return np.hstack([(scalars - self.scalar_mean) / self.scalar_scale,
                          vectors * self.vector_gain]).astype(np.float64)

    def proba(self, x: np.ndarray) -> np.ndarray:
        """Class probabilities of rows of model inputs (`inputs`)."""
        hidden = np.maximum(x @ self.hidden_w + self.hidden_b, 0.0)
        raw = hidden @ self.out_w + self.out_b
        raw -= raw.max(axis=1, keepdims=True)
        e = np.exp(raw)
        return e / e.sum(axis=1, keepdims=True)


_loaded: dict[Path, JudgeModel] = {}
_lock = threading.Lock()
_ARRAYS = ("scalar_mean", "scalar_scale", "hidden_w", "hidden_b", "out_w", "out_b")


def load_model(path: Path = MODEL_PATH) -> JudgeModel:
    with _lock:
        if path not in _loaded:
            with np.load(path, allow_pickle=False) as z:
                bands = dict(zip(z["band_names"].tolist(), z["band_values"].tolist()))
                _loaded[path] = JudgeModel(model_id=str(z["model_id"]), labels=tuple(z["labels"].tolist()),
                                           vector_gain=float(z["vector_gain"]), bands=bands,
                                           **{name: z[name] for name in _ARRAYS})
        return _loaded[path]


def forget_loaded() -> None:
    """Drop the loaded models (after `train` wrote a new file in this process)."""
    with _lock:
        _loaded.clear()
