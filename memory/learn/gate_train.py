"""Train the gate and report it: ``python -m memory.learn train gate`` / ``report gate``.

Training reads only the tune half (``evaluation/learn/gate-tune*.jsonl``). The regularisation and the
keep threshold are chosen on its stratified 5-fold cross-validation (fixed seed): the threshold is
the highest that still keeps ``RECALL_TARGET`` of the keep-worthy sentences out of fold, since a
statement lost is lost for good while a kept one can still be judged, ranked or forgotten later.
The model is then fitted on the whole tune half and written as plain arrays. ``report`` scores a
model on the report half, written by someone who saw neither the code nor the tune half; nothing
here ever reads that half to choose anything.
"""
from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import numpy as np

from memory.learn.encode import GATE_EMBEDDER, GATE_EMBEDDER_ID, encode_texts
from memory.learn.gate import KEEP_KINDS, MODEL_PATH, Gate, features
from memory.learn.signals import closed_class, split_question

__all__ = ["report", "train"]

DATA_DIR = Path(__file__).resolve().parents[2] / "evaluation" / "learn"
CLASSES = ("fact", "preference", "event", "task", "none")
SEED = 20261206
# Wider C was tried (0.3, 1.0): lower cross-validated precision, and slower to fit.
C_GRID = (0.01, 0.03, 0.1)
RECALL_TARGET = 0.97


def _load(half: str) -> tuple[list[str], np.ndarray, list[dict]]:
    """The sentences of a half: `gate-<half>.jsonl`, then any `gate-<half>-*.jsonl` beside it (more
    tuning sentences, written later by another blind writer), in name order."""
    paths = [DATA_DIR / f"gate-{half}.jsonl", *sorted(DATA_DIR.glob(f"gate-{half}-*.jsonl"))]
    rows = [json.loads(line) for path in paths for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts = [r["text"] for r in rows]
    return texts, np.array([CLASSES.index(r["label"]) for r in rows]), rows


def _fit(x: np.ndarray, y: np.ndarray, c: float) -> dict:
    from sklearn.linear_model import LogisticRegression

    mean = x.mean(axis=0)
    scale = x.std(axis=0) + 1e-6
    model = LogisticRegression(C=c, max_iter=3000, class_weight="balanced", random_state=SEED)
    model.fit((x - mean) / scale, y)
    coef = np.zeros((len(CLASSES), x.shape[1]), dtype=np.float32)
    intercept = np.zeros(len(CLASSES), dtype=np.float32)
    coef[model.classes_] = model.coef_
    intercept[model.classes_] = model.intercept_
    intercept[[i for i in range(len(CLASSES)) if i not in model.classes_]] = -1e4
    return {"classes": np.array(CLASSES), "coef": coef, "intercept": intercept,
            "mean": mean.astype(np.float32), "scale": scale.astype(np.float32)}


def _keep_probability(arrays: dict, x: np.ndarray) -> np.ndarray:
    z = ((x - arrays["mean"]) / arrays["scale"]) @ arrays["coef"].T + arrays["intercept"]
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    return p


def _out_of_fold(x: np.ndarray, y: np.ndarray, c: float) -> np.ndarray:
    from sklearn.model_selection import StratifiedKFold

    probs = np.zeros((len(y), len(CLASSES)))
    for fit_idx, test_idx in StratifiedKFold(5, shuffle=True, random_state=SEED).split(x, y):
        probs[test_idx] = _keep_probability(_fit(x[fit_idx], y[fit_idx], c), x[test_idx])
    return probs


def _threshold(keep_p: np.ndarray, worthy: np.ndarray, decided: np.ndarray) -> tuple[float, float, float]:
    """The highest threshold keeping RECALL_TARGET of the keep-worthy (closed-class rows count as
    dropped), with the precision and recall it gives."""
    total = worthy.sum()
    best = (0.05, 0.0, 1.0)
    for t in np.arange(0.05, 0.951, 0.01):
        kept = (keep_p >= t) & ~decided
        recall = (kept & worthy).sum() / total
        if recall >= RECALL_TARGET:
            best = (round(float(t), 2), float((kept & worthy).sum() / max(kept.sum(), 1)), float(recall))
    return best


def train(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m memory.learn train gate")
    parser.add_argument("--out", default=str(MODEL_PATH))
    args = parser.parse_args(argv)
    texts, y, _ = _load("tune")
    decided = np.array([closed_class(t) is not None for t in texts])
    x = features(texts, encode_texts(texts, model=GATE_EMBEDDER, cache=True))
    worthy = np.isin(y, [CLASSES.index(k) for k in KEEP_KINDS])
    open_idx = np.flatnonzero(~decided)
    best = None
    for c in C_GRID:
        probs = np.zeros((len(y), len(CLASSES)))
        probs[open_idx] = _out_of_fold(x[open_idx], y[open_idx], c)
        keep_p = probs[:, : len(KEEP_KINDS)].sum(axis=1)
        t, precision, recall = _threshold(keep_p, worthy, decided)
        kind_ok = (probs[:, : len(KEEP_KINDS)].argmax(axis=1) == y)[worthy & (keep_p >= t) & ~decided].mean()
        print(f"C={c}: cross-validated keep threshold {t:.2f} precision {precision:.3f} recall {recall:.3f} "
              f"kind accuracy {kind_ok:.3f}")
        if best is None or precision > best[1]:
            best = (c, precision, t)
    c, _, t = best
    arrays = _fit(x[open_idx], y[open_idx], c)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(out, **arrays, threshold=np.float32(t), embedder=np.array(GATE_EMBEDDER),
             embedder_id=np.array(GATE_EMBEDDER_ID), c=np.float32(c))
    print(f"wrote {out} (C={c}, threshold {t:.2f}, {len(open_idx)} of {len(texts)} tune sentences reach the model)")
    return 0


def _figures(gold: list[str], predicted: list[str]) -> dict:
    worthy = np.array([g in KEEP_KINDS for g in gold])
    kept = np.array([p in KEEP_KINDS for p in predicted])
    out = {"n": len(gold), "keep_precision": float((worthy & kept).sum() / max(kept.sum(), 1)),
           "keep_recall": float((worthy & kept).sum() / max(worthy.sum(), 1))}
    for label in CLASSES:
        tp = sum(g == p == label for g, p in zip(gold, predicted))
        n_pred, n_gold = predicted.count(label), gold.count(label)
        out[label] = {"precision": round(tp / max(n_pred, 1), 3), "recall": round(tp / max(n_gold, 1), 3),
                      "support": n_gold}
    return out


def _read_split(gate: Gate, texts: list[str]) -> list[str]:
    """Each sentence's label as the write path reads it: a question that opens with a statement is
    read as both (``split_question``), and the sentence counts as kept as the statement when that is."""
    parts = [split_question(t) for t in texts]
    flat = [p for ps in parts for p in ps]
    readings = iter(gate.read(flat, encode_texts(flat, model=gate.embedder, cache=True)))
    out = []
    for ps in parts:
        labels = [next(readings).label for _ in ps]
        out.append(next((label for label in labels if label in KEEP_KINDS), labels[-1]))
    return out


def report(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m memory.learn report gate")
    parser.add_argument("--model", default=str(MODEL_PATH))
    parser.add_argument("--half", default="report", choices=("report", "tune"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    gate = Gate(Path(args.model))
    texts, y, rows = _load(args.half)
    predicted = _read_split(gate, texts)
    gold = [CLASSES[i] for i in y]
    result = {"model": gate.version, "half": args.half, "all": _figures(gold, predicted)}
    for lang in sorted({r["lang"] for r in rows}):
        idx = [i for i, r in enumerate(rows) if r["lang"] == lang]
        result[lang] = _figures([gold[i] for i in idx], [predicted[i] for i in idx])
    missed = Counter(rows[i]["why"] for i in range(len(rows)) if gold[i] in KEEP_KINDS and predicted[i] not in KEEP_KINDS)
    result["missed_keep_by_why"] = dict(missed)
    kept = Counter(rows[i]["why"] for i in range(len(rows)) if gold[i] not in KEEP_KINDS and predicted[i] in KEEP_KINDS)
    result["kept_not_worthy_by_why"] = dict(kept)
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=1))
        return 0
    for part in ["all"] + sorted({r["lang"] for r in rows}):
        f = result[part]
        print(f"{part:6} n={f['n']:5} keep precision {f['keep_precision']:.3f} recall {f['keep_recall']:.3f}  " +
              "  ".join(f"{k} P/R {f[k]['precision']:.2f}/{f[k]['recall']:.2f}" for k in CLASSES))
    print("keep-worthy sentences not kept, by why:", dict(missed))
    print("sentences kept though not worth keeping, by why:", dict(kept))
    return 0
