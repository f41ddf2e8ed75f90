"""Current and history at read time: how often does the rule (memory/subjects/current.py) present an
older statement as history when a newer one replaces it, and how often wrongly?

    python -m bench.history                # every set, with RECALL_HISTORY's thresholds
    python -m bench.history --tune         # grid-search the thresholds on the tuning sets only
    python -m bench.history --errors       # list every pair the rule gets wrong

Sets: the labelled pair set (evaluation/pairs/pairs.jsonl; `supersede` pairs should become history,
`coexist` and `duplicate` pairs never) and the everyday change sets (evaluation/data/changes-*.jsonl;
`change` pairs should, `other_attribute` pairs never). Tuning uses only `pairs tune` and
`changes tune`; the other halves are reported. A change pair is read as recall would meet it: the
older message's first standing memory (the rule extractor's; the message itself when none) against
the newer message as an episode and against its own first standing memory, either one enough. The
write path's judge (memory/subjects/judge.py) is asked too, as recall reads its open possible conflicts.
"""
from __future__ import annotations

import itertools
import json
import sys
from dataclasses import dataclass

from bench import common

NAME = "history"
CHANGES_SPLITS = ("tune", "report", "report2")  # report3 is held out for the final measurement only
TUNE_SETS = ("pairs tune", "changes tune")


@dataclass
class Case:
    set: str
    id: str
    older: tuple[str, str]  # (content, kind)
    newers: list[tuple[str, str]]
    positive: bool
    cosines: list[float] | None = None
    conflicts: list[bool] | None = None


def load_cases() -> list[Case]:
    from datetime import datetime, timezone

    from memory.extraction.base import ExtractionInput
    from memory.extraction.rules import RuleExtractor

    out = []
    for line in (common.REPO_ROOT / "evaluation" / "pairs" / "pairs.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        out.append(Case(f"pairs {r['split']}", r["id"], (r["older"]["content"], r["older"]["kind"]),
                        [(r["newer"]["content"], r["newer"]["kind"])], r["label"] == "supersede"))
    extractor, at = RuleExtractor(), datetime(2026, 5, 12, 2, 0, tzinfo=timezone.utc)

    def standing(text):
        found = extractor.extract(ExtractionInput(role="user", content=text, occurred_at=at)).candidates
        return [(c.content, c.kind) for c in found if c.kind in ("fact", "preference", "event") and c.scope == "user"]

    for split in CHANGES_SPLITS:
        path = common.REPO_ROOT / "evaluation" / "data" / f"changes-{split}.jsonl"
        for line in path.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            older = next((s for s in standing(r["older"]) if s[1] != "event"), (r["older"], "fact"))
            out.append(Case(f"changes {split}", r["id"], older, [(r["newer"], "episode"), *standing(r["newer"])[:1]],
                            r["label"] == "change"))
    return out


def featurise(cases: list[Case], embedder, limits) -> None:
    """Cosines as written, and whether the write path's judge leaves each pair a possible conflict."""
    from common.text import is_cjk
    from memory.subjects import Existing, judge
    from memory.vectors import similarity

    texts = sorted({t for c in cases for t, _ in [c.older, *c.newers]})
    vectors = dict(zip(texts, embedder.encode(texts)))
    for c in cases:
        c.cosines, c.conflicts = [], []
        for text, kind in c.newers:
            cjk = is_cjk(text) or is_cjk(c.older[0])
            cosine = float(similarity(embedder, vectors[text], vectors[c.older[0]], cjk=cjk)[0])
            c.cosines.append(cosine)
            if kind in ("fact", "preference"):
                existing = [Existing(id=0, content=c.older[0], kind=c.older[1], slot_key=None, full=cosine)]
                c.conflicts.append(judge(embedder, limits, content=text, kind=kind, slot_key=None,
                                         existing=existing)[0][1].action == "conflict")
            else:
                c.conflicts.append(False)  # only standing memories are judged on the write path


def predict(c: Case, limits, conf: dict) -> bool:
    from memory.subjects.current import Said, newer_is_current

    older = Said(content=c.older[0], kind=c.older[1])
    return any(newer_is_current(older, Said(content=text, kind=kind), cosine=cosine, limits=limits,
                                subject=conf["subject"], alike=conf["alike"], close=conf["close"], conflict=conflict).history
               for (text, kind), cosine, conflict in zip(c.newers, c.cosines, c.conflicts))


def table(cases: list[Case], limits, conf: dict) -> dict[str, dict]:
    out = {}
    for name in dict.fromkeys(c.set for c in cases):
        rows = [c for c in cases if c.set == name]
        got = [predict(c, limits, conf) for c in rows]
        tp = sum(g and c.positive for g, c in zip(got, rows))
        fp = sum(g and not c.positive for g, c in zip(got, rows))
        pos = sum(c.positive for c in rows)
        out[name] = {"positive": pos, "negative": len(rows) - pos, "history": tp, "false_history": fp,
                     "precision": tp / (tp + fp) if tp + fp else None, "recall": tp / pos if pos else None}
    return out


def tune(cases: list[Case], limits, base: dict) -> dict:
    """The most positives on the tuning sets with at most one false history per 40 predicted."""
    rows = [c for c in cases if c.set in TUNE_SETS]
    best = None
    for subject, alike, close in itertools.product((0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6), (0.0, 0.3, 0.35, 0.4, 0.45),
                                                   (0.5, 0.55, 0.6, 0.65, 0.7, 0.8, 2.0)):
        conf = {**base, "subject": subject, "alike": alike, "close": close}
        got = [predict(c, limits, conf) for c in rows]
        tp = sum(g and c.positive for g, c in zip(got, rows))
        fp = sum(g and not c.positive for g, c in zip(got, rows))
        if fp * 40 > tp + fp:
            continue
        key = (tp, -fp, subject, alike, -close)  # ties: the stricter thresholds
        if best is None or key > best[0]:
            best = (key, conf)
    return best[1] if best else base


def _fmt(x) -> str:
    return "–" if x is None else f"{x:.2f}"


def main(argv=None) -> int:
    p = common.arg_parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("--tune", action="store_true", help="grid-search the thresholds on the tuning sets")
    p.add_argument("--errors", action="store_true", help="list the pairs the rule gets wrong")
    args = p.parse_args(argv)
    bench = common.setup(NAME, args)
    from django.conf import settings

    from memory.thresholds import thresholds_for
    from memory.vectors import active_embedder

    embedder = active_embedder()
    limits = thresholds_for(embedder.model_id)
    conf = dict(settings.RECALL_HISTORY)
    cases = load_cases()
    featurise(cases, embedder, limits)
    if args.tune:
        conf = tune(cases, limits, conf)
        print(f"best on the tuning sets: subject={conf['subject']} alike={conf['alike']} close={conf['close']}")
    print(f"model {embedder.model_id}; subject={conf['subject']} alike={conf['alike']} close={conf['close']}\n")
    print("| set | should become history | should stay current | history (right) | history (wrong) | precision | recall |")
    print("|---|---|---|---|---|---|---|")
    result = table(cases, limits, conf)
    for name, t in result.items():
        print(f"| {name}{' (tuning)' if name in TUNE_SETS else ''} | {t['positive']} | {t['negative']} | {t['history']} | "
              f"{t['false_history']} | {_fmt(t['precision'])} | {_fmt(t['recall'])} |")
    if args.errors:
        for c in cases:
            if predict(c, limits, conf) != c.positive:
                print(f"- {c.set} {c.id} gold={'history' if c.positive else 'current'} cos={[round(x, 2) for x in c.cosines]} "
                      f"conflict={c.conflicts}: {c.older[0]} → {' / '.join(t for t, _ in c.newers)}")
    print(f"\nresults: {common.write_results(bench, {'model': embedder.model_id, 'conf': conf, 'table': result})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
