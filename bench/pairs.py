"""Subject matching on the labelled pair set: precision and recall of each decision (DESIGN §5).

    python -m bench.pairs                 # the test half, with the thresholds of memory/thresholds.py
    python -m bench.pairs --tune          # grid-search the subject thresholds on the tuning half only
    python -m bench.pairs --build         # rebuild evaluation/pairs/pairs.jsonl from families.py
    python -m bench.pairs --model use-multilingual-v3   # calibrate another embedding model

Each pair is (older, newer) with a gold label: supersede (same subject, new value), coexist
(another attribute, another thing, or an event) or duplicate (same subject, same value). The
matcher is the write path's (`memory.subjects.judge` logic): a `conflict` answer is counted as
wrong for every label, so it lowers recall, never raises precision.
"""
from __future__ import annotations

import itertools
import json
import sys

from bench import common

NAME = "pairs"
PAIRS_DIR = common.REPO_ROOT / "evaluation" / "pairs"
PAIRS_FILE = PAIRS_DIR / "pairs.jsonl"
LABELS = ("supersede", "coexist", "duplicate")


def parse_args(argv=None):
    p = common.arg_parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("--build", action="store_true", help="rebuild pairs.jsonl from evaluation/pairs/families.py")
    p.add_argument("--tune", action="store_true", help="grid-search thresholds on the tuning half")
    p.add_argument("--split", default="test", choices=["test", "tune", "all"])
    p.add_argument("--model", help="embedding model (default: EMBEDDING_MODEL)")
    p.add_argument("--errors", action="store_true", help="list the misjudged pairs")
    p.add_argument("--domain", help="only these domains (comma separated), e.g. delivery,documents")
    return p.parse_args(argv)


def build() -> int:
    sys.path.insert(0, str(PAIRS_DIR))
    from families import FAMILIES  # noqa: E402  (data module next to the pairs)

    rows = []
    for n, (domain, lang, statements) in enumerate(FAMILIES):
        split = "tune" if n % 4 in (0, 3) else "test"  # zh and en families of one topic fall in different halves
        for (i, older), (j, newer) in itertools.combinations(enumerate(statements), 2):
            (a_attr, a_val, a_text), (b_attr, b_val, b_text) = older, newer
            kinds = [("event" if t.startswith("E:") else "preference" if t.startswith("P:") else "fact") for t in (a_text, b_text)]
            if "event" in kinds or a_attr != b_attr:
                label = "coexist"
            else:
                label = "duplicate" if a_val == b_val else "supersede"
            rows.append({"id": f"{domain}-{lang}-{i}-{j}", "domain": domain, "lang": lang, "split": split,
                         "older": {"kind": kinds[0], "content": a_text.split(":", 1)[1] if a_text[1:2] == ":" else a_text},
                         "newer": {"kind": kinds[1], "content": b_text.split(":", 1)[1] if b_text[1:2] == ":" else b_text},
                         "label": label})
    PAIRS_FILE.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"{len(rows)} pairs -> {PAIRS_FILE}")
    return 0


def load(split: str, domains: str | None = None) -> list[dict]:
    rows = [json.loads(line) for line in PAIRS_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
    if domains:
        rows = [r for r in rows if r["domain"] in domains.split(",")]
    return rows if split == "all" else [r for r in rows if r["split"] == split]


def featurise(rows: list[dict], embedder):
    from common.text import is_cjk
    from memory.subjects.judge import masked_similarity
    from memory.subjects.match import pair_features
    from memory.subjects.parts import parse
    from memory.vectors import similarity

    texts = sorted({r[s]["content"] for r in rows for s in ("older", "newer")})
    vectors = dict(zip(texts, embedder.encode(texts)))
    out = []
    for r in rows:
        a, b = r["older"]["content"], r["newer"]["content"]
        cjk = is_cjk(a) or is_cjk(b)
        full = float(similarity(embedder, vectors[b], vectors[a], cjk=cjk)[0])
        pa, pb = parse(a), parse(b)
        masked = masked_similarity(embedder, pb.masked, [pa.masked])[0]
        out.append(pair_features(pa, pb, masked=masked, full=full))
    return out


def judge_all(rows, feats, limits) -> list[str]:
    from memory.subjects.judge import decide_with

    return [decide_with(f, limits, kinds=(r["older"]["kind"], r["newer"]["kind"])).action for r, f in zip(rows, feats)]


def scores(rows, predicted) -> dict:
    table = {}
    for label in LABELS:
        tp = sum(1 for r, p in zip(rows, predicted) if p == label and r["label"] == label)
        pred = sum(1 for p in predicted if p == label)
        gold = sum(1 for r in rows if r["label"] == label)
        precision = tp / pred if pred else None
        recall = tp / gold if gold else None
        f1 = 2 * precision * recall / (precision + recall) if precision and recall else 0.0
        table[label] = {"gold": gold, "predicted": pred, "precision": precision, "recall": recall, "f1": f1}
    table["conflict"] = {"predicted": sum(1 for p in predicted if p == "conflict")}
    table["accuracy"] = sum(1 for r, p in zip(rows, predicted) if p == r["label"]) / len(rows) if rows else None
    return table


def objective(table) -> float:
    # A wrong supersede hides a true memory: its precision counts extra.
    f1 = sum(table[label]["f1"] for label in LABELS) / len(LABELS)
    return f1 + 0.5 * (table["supersede"]["precision"] or 0.0)


def tune(rows, feats, base):
    from dataclasses import replace

    best = None
    grid_same = [x / 100 for x in range(30, 86, 2)]
    for lo, hi, dup in itertools.product((0.3, 0.4, 0.5, 0.6), (0.8, 0.9, 1.0), (0.7, 0.75, 0.8, 0.85, 0.9)):
        for same in grid_same:
            for gap in (0.0, 0.05, 0.1, 0.15):
                limits = replace(base, subject_same=same, subject_conflict=round(same - gap, 3), masked_lo=lo,
                                 masked_hi=hi, subject_duplicate=dup)
                value = objective(scores(rows, judge_all(rows, feats, limits)))
                if best is None or value > best[0] + 1e-9:
                    best = (value, limits)
    return best[1]


def _fmt(x) -> str:
    return "–" if x is None else f"{x:.2f}"


def print_table(title: str, rows, predicted) -> dict:
    table = scores(rows, predicted)
    print(f"\n### {title}\n")
    print("| decision | gold pairs | predicted | precision | recall |")
    print("|---|---|---|---|---|")
    for label in LABELS:
        t = table[label]
        print(f"| {label} | {t['gold']} | {t['predicted']} | {_fmt(t['precision'])} | {_fmt(t['recall'])} |")
    print(f"| possible conflict (counted wrong) | – | {table['conflict']['predicted']} | – | – |")
    print(f"\naccuracy {_fmt(table['accuracy'])} over {len(rows)} pairs "
          f"(zh {sum(r['lang'] == 'zh' for r in rows)}, en {sum(r['lang'] == 'en' for r in rows)})")
    return table


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.build:
        return build()
    bench = common.setup(NAME, args)
    from django.conf import settings

    from memory.embeddings import get_embedder
    from memory.thresholds import thresholds_for

    embedder = get_embedder(args.model or settings.EMBEDDING_MODEL)
    limits = thresholds_for(embedder.model_id)
    print(f"model {embedder.model_id}; thresholds {limits}")
    if args.tune:
        rows = load("tune", args.domain)
        feats = featurise(rows, embedder)
        best = tune(rows, feats, limits)
        print(f"best on the tuning half: subject_same={best.subject_same} subject_conflict={best.subject_conflict} "
              f"masked_lo={best.masked_lo} masked_hi={best.masked_hi} subject_duplicate={best.subject_duplicate}")
        print_table("tuning half, tuned thresholds", rows, judge_all(rows, feats, best))
        return 0
    rows = load(args.split, args.domain)
    feats = featurise(rows, embedder)
    predicted = judge_all(rows, feats, limits)
    table = print_table(f"{args.split} half{' (' + args.domain + ')' if args.domain else ''} — {embedder.model_id}",
                        rows, predicted)
    if args.errors:
        for r, p, f in zip(rows, predicted, feats):
            if p != r["label"]:
                print(f"- {r['id']} gold={r['label']} got={p}: {r['older']['content']} → {r['newer']['content']} {f.as_dict()}")
    print(f"\nresults: {common.write_results(bench, {'split': args.split, 'model': embedder.model_id, 'table': table})}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
