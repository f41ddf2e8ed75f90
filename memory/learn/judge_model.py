"""The learned judge's model as plain arrays (`memory/learn/models/judge.npz`): a projection of the
vector features, then gradient-boosted trees over every feature, evaluated in NumPy. No pickle: the
file holds only numbers and names, written by `memory.learn.judge_train` and read here."""
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
    proj_mean: np.ndarray  # vector features: centred, then projected on `proj` (PCA components)
    proj: np.ndarray
    baseline: np.ndarray  # raw score per class before any tree
    tree_class: np.ndarray  # per tree: the class whose raw score it adds to
    roots: np.ndarray  # per tree: its first node in the node arrays
    feature: np.ndarray  # per node: the feature compared (−1 at a leaf)
    threshold: np.ndarray  # per node: go left when the feature is ≤ this
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray  # per node: the leaf's value
    depth: int
    bands: dict  # decision thresholds calibrated in training (judge.py reads them)

    def inputs(self, scalars: np.ndarray, vectors: np.ndarray) -> np.ndarray:
        reduced = (vectors - self.proj_mean) @ self.proj.T
        return np.hstack([scalars, reduced]).astype(np.float64)

    def proba(self, x: np.ndarray) -> np.ndarray:
        """Class probabilities of rows of model inputs (`inputs`)."""
        n = x.shape[0]
        nodes = np.broadcast_to(self.roots, (n, self.roots.size)).copy()
        rows = np.arange(n)[:, None]
        for _ in range(self.depth):
            feat = self.feature[nodes]
            leaf = feat < 0
            if leaf.all():
                break
            go_left = x[rows, np.where(leaf, 0, feat)] <= self.threshold[nodes]
            nodes = np.where(leaf, nodes, np.where(go_left, self.left[nodes], self.right[nodes]))
        raw = np.tile(self.baseline, (n, 1))
        np.add.at(raw.T, self.tree_class, self.value[nodes].T)  # each tree adds its leaf to its class
        raw -= raw.max(axis=1, keepdims=True)
        e = np.exp(raw)
        return e / e.sum(axis=1, keepdims=True)


_loaded: dict[Path, JudgeModel] = {}
_lock = threading.Lock()


def load_model(path: Path = MODEL_PATH) -> JudgeModel:
    with _lock:
        if path not in _loaded:
            with np.load(path, allow_pickle=False) as z:
                bands = dict(zip(z["band_names"].tolist(), z["band_values"].tolist()))
                _loaded[path] = JudgeModel(
                    model_id=str(z["model_id"]), labels=tuple(z["labels"].tolist()), proj_mean=z["proj_mean"],
                    proj=z["proj"], baseline=z["baseline"], tree_class=z["tree_class"], roots=z["roots"],
                    feature=z["feature"], threshold=z["threshold"], left=z["left"], right=z["right"],
                    value=z["value"], depth=int(z["depth"]), bands=bands)
        return _loaded[path]


def forget_loaded() -> None:
    """Drop the loaded models (after `train` wrote a new file in this process)."""
    with _lock:
        _loaded.clear()
