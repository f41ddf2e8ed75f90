"""Train and report the learned judge (D25):

    python -m memory.learn train judge            # fit on evaluation/learn/judge-tune*.jsonl → models/judge.npz
    python -m memory.learn train judge --cv       # out-of-fold figures on the tuning half only, nothing written
    python -m memory.learn train judge --cv --with FILE.jsonl
                                                  # … with pairs not yet in the tuning half (their own domains)
    python -m memory.learn report judge           # the report half, written by someone who saw neither
                                                  # the code nor the tuning half: figures only, never tuning

(`python -m memory.learn.judge_train train|report` before the CLI dispatches here.) The features are
memory/learn/pair_features.py's, computed from the texts by the same code the write path runs; the
model is scikit-learn's HistGradientBoostingClassifier, exported to plain arrays (judge_model.py), and
the decision bands (replaces / possible conflict / duplicate) are chosen on out-of-fold probabilities
of the tuning half, each fold one writer's file held out. Training is deterministic: the same data and encoder give the same file.
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
# Components kept of each block of vector features (pair_features.BLOCK_WIDTHS): the pair's
# interactions, the newer statement. With the newer's 16, out-of-fold (by domain) replace recall rose
# 0.77 → 0.82 at the same precision.
N_COMPONENTS = (24, 16)
PARAMS = dict(max_iter=150, learning_rate=0.1, max_leaf_nodes=15, min_samples_leaf=12, l2_regularization=1.0,
              early_stopping=False, random_state=0)
# Replaces only when sure (a wrong supersede hides a true memory); a narrow band under it is a possible
# conflict: both kept, the newer first, an operator (or an LLM, batched) decides. Wider, it mostly
# flags pairs that coexist (out of fold, a third of the pairs 0.3 under the threshold coexist).
PRECISION_TARGET = 0.92
CONFLICT_WIDTH = 0.05


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


def features(rows: list[dict], encoder=None) -> tuple[np.ndarray, np.ndarray]:
    from memory.embeddings import get_embedder
    from memory.learn.pair_features import PairEncoder, PairInput, pair_matrix

    encoder = encoder or PairEncoder(get_embedder(ENCODER), cache_size=1 << 16)
    pairs = [PairInput(r["older"]["content"], r["newer"]["content"], r["older"]["kind"], r["newer"]["kind"])
             for r in rows]
    return pair_matrix(encoder, pairs)


def fit(scalars: np.ndarray, vectors: np.ndarray, y: np.ndarray) -> dict:
    """Arrays of a fitted model (the judge.npz layout, bands excluded)."""
    from sklearn.decomposition import PCA
    from sklearn.ensemble import HistGradientBoostingClassifier

    from memory.learn.pair_features import BLOCK_WIDTHS

    # One PCA per block, kept as one block-diagonal projection (judge_model.inputs is unchanged).
    width = vectors.shape[1] // sum(BLOCK_WIDTHS)
    bounds = np.cumsum([0, *BLOCK_WIDTHS]) * width
    proj_mean = np.zeros(vectors.shape[1], np.float32)
    proj = np.zeros((sum(N_COMPONENTS), vectors.shape[1]), np.float32)
    row = 0
    for k, start, stop in zip(N_COMPONENTS, bounds[:-1], bounds[1:]):
        pca = PCA(n_components=k, svd_solver="full").fit(vectors[:, start:stop])
        proj_mean[start:stop] = pca.mean_
        proj[row:row + k, start:stop] = pca.components_
        row += k
    x = np.hstack([scalars, (vectors - proj_mean) @ proj.T]).astype(np.float64)
    clf = HistGradientBoostingClassifier(**PARAMS).fit(x, y)
    assert tuple(clf.classes_) == tuple(range(len(LABELS)))
    feature, threshold, left, right, value, roots, tree_class = [], [], [], [], [], [], []
    depth, offset = 0, 0
    for per_class in clf._predictors:  # one tree per class per iteration
        for k, tree in enumerate(per_class):
            nodes = tree.nodes
            roots.append(offset)
            tree_class.append(k)
            leaf = nodes["is_leaf"].astype(bool)
            feature.append(np.where(leaf, -1, nodes["feature_idx"]))
            threshold.append(nodes["num_threshold"])
            left.append(np.where(leaf, 0, nodes["left"]) + offset)
            right.append(np.where(leaf, 0, nodes["right"]) + offset)
            value.append(np.where(leaf, nodes["value"], 0.0))
            depth = max(depth, int(nodes["depth"].max()))
            offset += len(nodes)
    return dict(proj_mean=proj_mean, proj=proj,
                baseline=np.asarray(clf._baseline_prediction, dtype=np.float64).reshape(-1),
                tree_class=np.asarray(tree_class, np.int32), roots=np.asarray(roots, np.int64),
                feature=np.concatenate(feature).astype(np.int32), threshold=np.concatenate(threshold).astype(np.float64),
                left=np.concatenate(left).astype(np.int64), right=np.concatenate(right).astype(np.int64),
                value=np.concatenate(value).astype(np.float64), depth=np.int32(depth + 1))


def _model(arrays: dict, bands: dict):
    from memory.learn.judge_model import JudgeModel

    return JudgeModel(model_id=ENCODER, labels=LABELS, depth=int(arrays["depth"]), bands=bands,
                      **{k: v for k, v in arrays.items() if k != "depth"})


def oof_proba(scalars, vectors, y, groups, folds: int) -> np.ndarray:
    """Out-of-fold probabilities; the pairs of one group stay in one fold."""
    from sklearn.model_selection import GroupKFold

    out = np.zeros((len(y), len(LABELS)))
    for train_idx, test_idx in GroupKFold(n_splits=folds).split(scalars, y, groups):
        model = _model(fit(scalars[train_idx], vectors[train_idx], y[train_idx]), {})
        out[test_idx] = model.proba(model.inputs(scalars[test_idx], vectors[test_idx]))
    return out


def choose_bands(proba: np.ndarray, y: np.ndarray, ruled: np.ndarray) -> dict:
    """The lowest replace threshold whose out-of-fold precision, on the pairs the rules leave to the
    model, reaches the target; the conflict band CONFLICT_WIDTH below it; duplicate where it is the
    likeliest class at ≥ 0.5."""
    sup = LABELS.index("supersede")
    best = 0.9
    for t in np.arange(0.30, 0.95, 0.01):
        chosen = (proba[:, sup] >= t) & ~ruled
        if chosen.sum() and (y[chosen] == sup).mean() >= PRECISION_TARGET:
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
    folds = len(set(groups)) if args.folds == "author" else 5
    scalars, vectors = features(rows)
    ruled = ruled_rows(rows)
    proba = oof_proba(scalars, vectors, y, groups, folds)
    bands = choose_bands(proba, y, ruled)
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
