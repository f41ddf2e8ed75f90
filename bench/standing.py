"""Standing-statement classification of the rule extractor on the labelled set (issue 15).

    python -m bench.standing                 # the report half
    python -m bench.standing --split tune    # the tuning half (the only one to look at while tuning)
    python -m bench.standing --errors        # list the misclassified sentences

Pure Python (no database, no embedder): see evaluation/standing_set.py for the set and
the scoring.
"""
from __future__ import annotations

import argparse
import json
import sys


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.standing", description=__doc__.split("\n\n")[0])
    p.add_argument("--split", default="report", choices=["report", "tune"])
    p.add_argument("--errors", action="store_true")
    p.add_argument("--json", action="store_true", help="print the whole result as JSON")
    args = p.parse_args(argv)
    from evaluation.standing_set import LABELS, load, score

    res = score(load(args.split))
    if args.json:
        print(json.dumps(res, ensure_ascii=False, indent=1))
        return 0
    print(f"split={args.split} n={res['n']} accuracy={res['accuracy']} task_as_standing={res['task_as_standing']}")
    print("| label | precision | recall |\n|---|---|---|")
    for label in (*LABELS, "standing"):
        print(f"| {label} | {res[label]['precision']} | {res[label]['recall']} |")
    print("confusion:", res["confusion"])
    if args.errors:
        for e in res["errors"]:
            print(f"  {e['id']:<22} {e['gold']:>10} -> {e['got']:<10} {e['text']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
