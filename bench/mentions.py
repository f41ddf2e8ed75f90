"""The labelled mention set (`evaluation/data/mentions-{tune,report}.jsonl`, issue 41) scored per kind.

The same replay as ``manage.py memory_eval`` (evaluation/runner.py, a throwaway database), but only the
entity expectation of each probe is scored, and per kind (the probe label's suffix after the first
"-": ``m7-recent_tiebreak`` → ``recent_tiebreak``):

- accuracy: the resolution is exactly the expected entity / ambiguity / none;
- ambiguity exactness: of the probes expecting ``ambiguous``, those answered ambiguous with exactly the
  expected candidates; and of the answers that were ambiguous, those whose candidates were the expected;
- hidden shown: answers naming an entity the acting user may not read (the case's ``grants`` and its
  ``revoke_entity`` / ``grant_entity`` steps); must be 0.

    python -m bench.mentions --split tune --failures      # the failures, with query and answer
    python -m bench.mentions --split report               # report half: numbers only, no lines
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from bench import common

DATA = Path(__file__).resolve().parent.parent / "evaluation" / "data"


def _kind(label: str) -> str:
    return label.split("-", 1)[1] if "-" in label else label


def run(path: Path, *, show_failures: bool, case_id: str | None = None) -> dict:
    from evaluation.management.commands.memory_eval import Command
    from evaluation.runner import CaseRunner, load_cases, new_run_id

    class Runner(CaseRunner):
        """Keeps the resolve answer and who may read what, for the per-kind score."""

        def __init__(self, case, **kw):
            super().__init__(case, **kw)
            self.hidden = {(u, e["id"]) for e in case.get("entities") or [] if "grants" in e
                           for u in self._users() if u not in e["grants"]}
            self.answers: list[tuple[dict, dict | None]] = []

        def _users(self) -> set[str]:
            users = {self.case["user"]} | {s["user"] for s in self.case["steps"] if s.get("user")}
            return users | {g for e in self.case.get("entities") or [] for g in e.get("grants", [])}

        def step(self, step):
            super().step(step)
            if step["op"] in ("revoke_entity", "grant_entity"):
                key = (step.get("user", self.case["user"]), step["entity"])
                (self.hidden.add if step["op"] == "revoke_entity" else self.hidden.discard)(key)

        def call(self, client, method, path, body=None, op=""):
            out = super().call(client, method, path, body, op)
            if op == "resolve":
                self.last = out
            return out

        def probe(self, step):
            self.last = None
            result = super().probe(step)
            if "entity" in step.get("expect", {}):
                self.answers.append((step, self.last, step.get("user", self.case["user"])))
            return result

    command = Command()
    cleanup = command._isolate()
    run_id = new_run_id()
    per_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    amb_expected = [0, 0]
    amb_answered = [0, 0]
    hidden_shown = 0
    failures = []
    try:
        for case in load_cases(str(path), case_id):
            runner = Runner(case, run_id=run_id, k_override=None, baseline="recent")
            result = runner.run(command._drain)
            if result.error:
                raise SystemExit(f"{case['id']}: {result.error}")
            for step, answer, user in runner.answers:
                expected = step["expect"]["entity"]
                status = (answer or {}).get("status")
                got = [answer["entity"]["external_id"]] if answer and answer.get("entity") else \
                    sorted(c["external_id"] for c in (answer or {}).get("candidates", []))
                if isinstance(expected, str):
                    ok = status == "resolved" and got == [expected]
                elif "ambiguous" in expected:
                    ok = status == "ambiguous" and got == sorted(expected["ambiguous"])
                    amb_expected[0] += ok
                    amb_expected[1] += 1
                else:
                    ok = status == "none"
                if status == "ambiguous":
                    amb_answered[0] += isinstance(expected, dict) and got == sorted(expected.get("ambiguous", []))
                    amb_answered[1] += 1
                hidden_shown += any((user, g) in runner.hidden for g in got)
                kind = _kind(step["label"])
                per_kind[kind][0] += ok
                per_kind[kind][1] += 1
                if not ok:
                    failures.append({"case": case["id"], "label": step["label"], "query": step["query"],
                                     "expected": expected, "got": [status, got],
                                     "evidence": (answer or {}).get("evidence")})
    finally:
        cleanup()
    total = [sum(v[0] for v in per_kind.values()), sum(v[1] for v in per_kind.values())]
    out = {"file": path.name, "accuracy": round(total[0] / max(total[1], 1), 3), "probes": total[1],
           "per_kind": {k: f"{v[0]}/{v[1]}" for k, v in sorted(per_kind.items())},
           "ambiguous_expected_exact": f"{amb_expected[0]}/{amb_expected[1]}",
           "ambiguous_answers_exact": f"{amb_answered[0]}/{amb_answered[1]}",
           "hidden_shown": hidden_shown}
    if show_failures:
        out["failures"] = failures
    return out


def main(argv: list[str] | None = None) -> int:
    parser = common.arg_parser("mentions", __doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=["tune", "report"], default="tune")
    parser.add_argument("--file", help="another file of the same format instead of --split")
    parser.add_argument("--case", help="only this case id")
    parser.add_argument("--failures", action="store_true", help="list the failed probes (tune half only)")
    args = parser.parse_args(argv)
    if args.failures and args.split == "report" and not args.file:
        parser.error("--failures reads the report half's lines; it is for reporting only")
    common.setup("mentions", args)
    path = Path(args.file) if args.file else DATA / f"mentions-{args.split}.jsonl"
    json.dump(run(path, show_failures=args.failures, case_id=args.case), sys.stdout, ensure_ascii=False, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
