"""Train and report the learned judge (D25):

    python -m memory.learn train judge            # fit on evaluation/learn/judge-tune*.jsonl → models/judge.npz
    python -m memory.learn train judge --cv       # out-of-fold figures on the tuning half only, nothing written
    python -m memory.learn train judge --cv --with FILE.jsonl
                                                  # … with pairs not yet in the tuning half (their own domains)
    python -m memory.learn report judge           # the report half, written by someone who saw neither
                                                  # the code nor the tuning half: figures only, never tuning

(`python -m memory.learn.judge_train train|report` before the CLI dispatches here.) The features are
memory/learn/pair_features.py's, computed from the texts by the same code the write path runs; the
model is scikit-learn's MLPClassifier (one hidden layer), exported to plain arrays (judge_model.py), and
the decision bands (replaces / possible conflict / duplicate) are chosen on out-of-fold probabilities
of the tuning half, each fold holding out whole writers' files (AUTHOR_FOLDS folds). Training is
deterministic: the same data and encoder give the same file.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import zlib
from collections import Counter
from pathlib import Path

import numpy as np

__all__ = ["report", "train"]

DATA = Path(__file__).resolve().parents[2] / "evaluation" / "learn"
LABELS = ("coexist", "duplicate", "supersede")
ENCODER = "use-multilingual+minilm"
# One hidden layer over every feature, the vectors unreduced. Against gradient-boosted trees over a
# projection of the vectors (the model before), on five writers' files held out together: average
# precision of replaces 0.879 → 0.907, recall at precision 0.90 0.59 → 0.72; on six other writers
# 0.899 → 0.918, 0.70 → 0.73. Smaller (64) or deeper (256, 64) nets, weaker or stronger penalties
# (alpha 0.01, 0.1) and averaging with the trees did no better on both.
PARAMS = dict(hidden_layer_sizes=(128,), alpha=0.03, batch_size=256, max_iter=60, early_stopping=True,
              random_state=0)
VECTOR_GAIN = 8.0  # products of unit vectors are ~0.03 apart; scaled, they weigh like the standardised scalars
# Replaces only when sure (a wrong supersede hides a true memory); a narrow band under it is a possible
# conflict: both kept, the newer first, an operator (or an LLM, batched) decides. Wider, it mostly
# flags pairs that coexist (out of fold, a third of the pairs 0.3 under the threshold coexist).
# Precision is read on the labelled pairs, and the unrelated pairs bound on their own: counted as
# negatives in one precision (the bands before), their ~2 per labelled pair made the threshold 0.91
# and halved recall on writers the model never read.
PRECISION_TARGET = 0.92
UNRELATED_FP = 0.02
CONFLICT_WIDTH = 0.05
# Folds by writer: each holds out whole files (GroupKFold balances them by size). One writer per fold
# cost a fit per file (seventeen files: the reproduction test alone took over ten minutes).
AUTHOR_FOLDS = 5


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def load(split: str) -> list[dict]:
    """The rows of a half: `judge-<split>.jsonl`, then any `judge-<split>-*.jsonl` beside it (the tuning
    half's extra pairs, each written later by another blind writer), in name order. Each row carries
    its file's name as `author`: one file is one writer's wording."""
    paths = [DATA / f"judge-{split}.jsonl", *sorted(DATA.glob(f"judge-{split}-*.jsonl"))]
    return [{**json.loads(line), "author": path.stem} for path in paths
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _family(row: dict) -> str:
    return row["id"].rsplit("-", 1)[0]  # "healthcare-zh-0-3": the pairs of one older statement


def with_unrelated(rows: list[dict]) -> list[dict]:
    """The labelled rows plus, for each, its newer statement against the older statement of (a) a row
    of another domain and (b) another family of its own domain and language, labelled coexist. The
    write path judges a new statement against the user's closest memories, often about something else
    of the same life (two facts about one farm); every labelled pair shares its older statement's
    topic, so without these the model never sees such a pair (and a change cue alone reads as a
    replace). Partners are picked by a fixed stride, so the set is the same on every run."""
    out = list(rows)
    n = len(rows)
    tests = (lambda r, o: o["domain"] != r["domain"],
             lambda r, o: o["domain"] == r["domain"] and o["lang"] == r["lang"] and _family(o) != _family(r)
             and o["older"]["content"] != r["older"]["content"])
    for i, r in enumerate(rows):
        for k, test in enumerate(tests):
            for step in range(1, n):
                other = rows[(i * 7919 + step * (104729 + k)) % n]
                if test(r, other):
                    out.append({"id": f"{r['id']}~{other['id']}", "domain": r["domain"], "older": other["older"],
                                "newer": r["newer"], "label": "coexist", "why": "unrelated",
                                "author": r.get("author", "")})
                    break
    return out


def features(rows: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """The pairs' features, their texts encoded once and kept on disk (memory/learn/encode.py's cache)."""
    from memory.embeddings import get_embedder
    from memory.learn.encode import cached
    from memory.learn.pair_features import PairEncoder, PairInput, pair_matrix, pair_texts

    pairs = [PairInput(r["older"]["content"], r["newer"]["content"], r["older"]["kind"], r["newer"]["kind"])
             for r in rows]
    texts = pair_texts(pairs)
    embedder = get_embedder(ENCODER)
    encoder = PairEncoder(embedder, cache_size=len(texts) + 1)
    for text, vector in zip(texts, cached(ENCODER, texts, embedder.encode)):
        encoder.seed(text, vector)
    return pair_matrix(encoder, pairs)


def fit(scalars: np.ndarray, vectors: np.ndarray, y: np.ndarray) -> dict:
    """Arrays of a fitted model (the judge.npz layout, bands excluded)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    mean = scalars.mean(axis=0)
    scale = scalars.std(axis=0)
    scale = np.where(scale > 1e-9, scale, 1.0)  # a feature constant in training (a kind nobody wrote) stays 0
    x = np.hstack([(scalars - mean) / scale, vectors * VECTOR_GAIN]).astype(np.float64)
    clf = MLPClassifier(**PARAMS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # early stopping ends it; max_iter only bounds time
        clf.fit(x, y)
    assert tuple(clf.classes_) == tuple(range(len(LABELS)))
    return dict(scalar_mean=mean.astype(np.float64), scalar_scale=scale.astype(np.float64),
                vector_gain=np.float64(VECTOR_GAIN), hidden_w=clf.coefs_[0], hidden_b=clf.intercepts_[0],
                out_w=clf.coefs_[1], out_b=clf.intercepts_[1])


def _model(arrays: dict, bands: dict):
    from memory.learn.judge_model import JudgeModel

    return JudgeModel(model_id=ENCODER, labels=LABELS, bands=bands, **arrays)


def oof_proba(scalars, vectors, y, groups, folds: int) -> np.ndarray:
    """Out-of-fold probabilities; the pairs of one group stay in one fold."""
    from sklearn.model_selection import GroupKFold

    out = np.zeros((len(y), len(LABELS)))
    for train_idx, test_idx in GroupKFold(n_splits=folds).split(scalars, y, groups):
        model = _model(fit(scalars[train_idx], vectors[train_idx], y[train_idx]), {})
        out[test_idx] = model.proba(model.inputs(scalars[test_idx], vectors[test_idx]))
    return out


def choose_bands(proba: np.ndarray, y: np.ndarray, ruled: np.ndarray, unrelated: np.ndarray | None = None) -> dict:
    """The lowest replace threshold at which, out of fold and on the pairs the rules leave to the model,
    the labelled pairs' precision reaches PRECISION_TARGET and at most UNRELATED_FP of the unrelated
    pairs (with_unrelated) would be replaced; the conflict band CONFLICT_WIDTH below it; duplicate where
    it is the likeliest class at ≥ 0.5."""
    sup = LABELS.index("supersede")
    unrelated = np.zeros(len(y), bool) if unrelated is None else unrelated
    best = 0.9
    for t in np.arange(0.30, 0.95, 0.01):
        chosen = (proba[:, sup] >= t) & ~ruled
        labelled = chosen & ~unrelated
        if not labelled.sum() or (y[labelled] == sup).mean() < PRECISION_TARGET:
            continue
        if unrelated.any() and (chosen & unrelated).sum() / unrelated.sum() > UNRELATED_FP:
            continue
        best = float(t)
        break
    best = round(best, 2)
    return {"supersede": best, "conflict": round(best - CONFLICT_WIDTH, 2), "duplicate": 0.5}


def decide_rows(proba: np.ndarray, bands: dict, ruled: np.ndarray) -> list[str]:
    """What the judge decides from these probabilities: coexist where a rule rules the pair out."""
    from memory.learn.judge import decide

    return ["coexist" if r else decide(dict(zip(LABELS, p)), bands) for p, r in zip(proba, ruled)]


def ruled_rows(rows: list[dict]) -> np.ndarray:
    from memory.learn.judge import ruled_out
    from memory.learn.pair_features import PairInput

    return np.array([ruled_out(PairInput(r["older"]["content"], r["newer"]["content"], r["older"]["kind"],
                                         r["newer"]["kind"])) is not None for r in rows])


def metrics(gold: list[str], got: list[str]) -> dict:
    """Per decision precision/recall, with a possible conflict counted as not replaced (and not coexisting)."""
    out = {}
    for label, name in (("supersede", "supersede"), ("coexist", "coexist"), ("duplicate", "duplicate")):
        tp = sum(g == label and p == name for g, p in zip(gold, got))
        pred = sum(p == name for p in got)
        true = sum(g == label for g in gold)
        out[label] = (tp / pred if pred else 0.0, tp / true if true else 0.0)
    kept = sum(g == "coexist" and p in ("coexist", "conflict") for g, p in zip(gold, got))
    out["coexist_kept"] = kept / max(1, sum(g == "coexist" for g in gold))
    out["confusion"] = Counter(zip(gold, got))
    return out


def print_metrics(title: str, m: dict) -> None:
    print(title)
    for label in LABELS:
        p, r = m[label]
        print(f"  {label:<10} P {p:.3f}  R {r:.3f}")
    print(f"  coexist kept active (coexist or possible conflict): {m['coexist_kept']:.3f}")
    print("  confusion (gold → judged):")
    for gold in LABELS:
        row = {got: m["confusion"][(gold, got)] for got in ("supersede", "conflict", "coexist", "duplicate")}
        print(f"    {gold:<10} " + "  ".join(f"{k} {v:>4}" for k, v in row.items()))


def train(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m memory.learn train judge")
    p.add_argument("--cv", nargs="?", type=int, const=1, default=0,
                   help="out-of-fold figures on the tuning half only; writes nothing (a number given is ignored)")
    p.add_argument("--folds", choices=("author", "domain"), default="author",
                   help="what one fold holds out (default author: one file, one writer's wording)")
    p.add_argument("--out", default=None, help="where to write the model (default memory/learn/models/judge.npz)")
    p.add_argument("--with", dest="extra", action="append", default=[],
                   help="a JSONL file of more tuning pairs (same format), read after the tuning half")
    args = p.parse_args(argv)
    _setup()
    from memory.learn.judge_model import MODEL_PATH, forget_loaded

    extra = [{**json.loads(line), "author": Path(path).stem} for path in args.extra
             for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = with_unrelated(load("tune") + extra)
    y = np.array([LABELS.index(r["label"]) for r in rows])
    # The bands are chosen on pairs of a writer the fold's model never read: the report half is
    # another writer's, and a model held to 0.92 precision out of fold by domain met ~0.85 on it (the
    # writer, not the domain, was what it had not seen). crc32: stable across processes.
    key = "author" if args.folds == "author" else "domain"
    groups = np.array([zlib.crc32(r[key].encode()) for r in rows])
    folds = min(AUTHOR_FOLDS, len(set(groups))) if args.folds == "author" else 5
    scalars, vectors = features(rows)
    ruled = ruled_rows(rows)
    proba = oof_proba(scalars, vectors, y, groups, folds)
    bands = choose_bands(proba, y, ruled, np.array([r.get("why") == "unrelated" for r in rows]))
    print(f"bands (out of fold by {args.folds}, tuning half): {bands}")
    labelled = [i for i, r in enumerate(rows) if r.get("why") != "unrelated"]
    got = decide_rows(proba, bands, ruled)
    print_metrics(f"tuning half, {folds} folds by {args.folds}, out of fold (labelled pairs)",
                  metrics([rows[i]["label"] for i in labelled], [got[i] for i in labelled]))
    for author in sorted({rows[i]["author"] for i in labelled}):
        own = [i for i in labelled if rows[i]["author"] == author]
        m = metrics([rows[i]["label"] for i in own], [got[i] for i in own])
        print(f"  {author:<24} replaces P {m['supersede'][0]:.3f} R {m['supersede'][1]:.3f}  "
              f"coexists R {m['coexist'][1]:.3f}  duplicate P {m['duplicate'][0]:.3f} R {m['duplicate'][1]:.3f}")
    unrelated = [g for r, g in zip(rows, got) if r.get("why") == "unrelated"]
    print(f"  unrelated pairs judged other than coexist: {sum(g != 'coexist' for g in unrelated)} of {len(unrelated)}")
    if args.cv:
        return 0
    arrays = fit(scalars, vectors, y)
    out = Path(args.out) if args.out else MODEL_PATH
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, model_id=np.array(ENCODER), labels=np.array(LABELS),
                        band_names=np.array(list(bands)), band_values=np.array(list(bands.values()), dtype=np.float64),
                        **arrays)
    forget_loaded()
    print(f"wrote {out}")
    return 0


def report(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m memory.learn report judge")
    p.add_argument("--split", default="report", choices=["report", "tune"])
    p.add_argument("--errors", action="store_true")
    args = p.parse_args(argv)
    _setup()
    from memory.learn.judge import judge_pairs
    from memory.learn.pair_features import PairInput

    rows = load(args.split)
    got = judge_pairs([PairInput(r["older"]["content"], r["newer"]["content"], r["older"]["kind"], r["newer"]["kind"])
                       for r in rows])
    gold = [r["label"] for r in rows]
    print_metrics(f"split={args.split} ({len(rows)} pairs), the write path's judge", metrics(gold, [d.action for d in got]))
    if args.errors:
        for r, d in zip(rows, got):
            if d.action != r["label"]:
                print(f"  {r['id']:<24} {r['label']:>9} → {d.action:<9} {r['older']['content']} | {r['newer']['content']}")
    return 0


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else "train"
    sys.exit(report(sys.argv[2:]) if command == "report" else train(sys.argv[2:]))
