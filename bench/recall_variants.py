"""Ingest a scenario file once, then score its source-gold probes (evidence recall@k, as
`memory_eval` computes it) under several settings variants, in-process.

    python -m bench.recall_variants /tmp/locomo.jsonl --var-dir /tmp/rv-tune \\
        --cases conv-26,conv-30,conv-41,conv-42,conv-43 \\
        --variant 'base={}' --variant 'no2nd={"RECALL_SECOND_LOOK": {"seeds": 2, "weight": 0, "expand": false}}'

The first run with a `--var-dir` ingests (through the REST API, as `memory_eval` does) and writes
`ingested.json` there; later runs with the same var dir and cases skip straight to scoring, so a
change to the read path is measured in a minute instead of a full evaluator run. A change to the
write path (extraction, dedup, supersede) needs a fresh var dir.

Probes that expect labels count too: label recall@k (at k=5 the evaluator's expect_hit_rate
for a probe that expects labels only), in a category named after the case id without its number.
The variant named `dense` ranks the same memories by raw cosine (`memory_eval --baseline dense`).

Differences from `memory_eval`, on purpose: recall is called directly (`memory.recall.recall`, the
same query, k, reference time and conversation as the evaluator's probe), no context call, and
access statistics are frozen (the frequency prior would otherwise drift between variants). A
probe's category is the part of its label after the first "-" (`q0-temporal`).
"""
from __future__ import annotations

import json
import sys
import time
from collections import defaultdict

from bench import common

NAME = "recall_variants"


def parse_args(argv=None):
    p = common.arg_parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("file", help="scenario file (FORMAT.md) with probes that expect sources")
    p.add_argument("--cases", default="", help="comma-separated case ids (default: all)")
    p.add_argument("--ks", default="5,10,25")
    p.add_argument("--variant", action="append", default=[],
                   help="NAME=JSON of settings overrides (repeatable; default one variant 'base={}'); "
                        "the name 'dense' ranks by raw cosine instead (memory_eval --baseline dense)")
    p.add_argument("--per-case", action="store_true", help="also print R@10 per case")
    p.add_argument("--misses", action="store_true",
                   help="also say where each gold ref missed at k=10 sits: rank 11-25, ranked lower, or not a candidate")
    return p.parse_args(argv)


def _variants(specs: list[str]) -> list[tuple[str, dict]]:
    out = []
    for spec in specs or ["base={}"]:
        name, _, body = spec.partition("=")
        out.append((name, json.loads(body or "{}")))
    return out


def _ingest(bench, cases, run_id) -> dict[str, dict[str, int]]:
    """Returns each case's memory labels (label -> memory id), for the probes that expect labels."""
    from evaluation.runner import CaseRunner

    labels = {}
    for case in cases:
        t0 = time.perf_counter()
        runner = CaseRunner(case, run_id=run_id, k_override=None, baseline=None)
        runner.setup_entities()
        pending: list[dict] = []
        for step in case["steps"]:
            if step["op"] == "message":
                if pending and (pending[0]["session"], pending[0].get("user"), pending[0].get("org")) != \
                        (step["session"], step.get("user"), step.get("org")):
                    runner._flush_messages(pending)
                pending.append(step)
            elif step["op"] != "probe":
                runner._flush_messages(pending)
                runner.step(step)
        runner._flush_messages(pending)
        labels[case["id"]] = runner.labels
        bench.log(f"ingested {case['id']} ({time.perf_counter() - t0:.0f}s)")
    return labels


def _recall_at(gold: set[str], ranked_refs: list[list[str]], k: int) -> float:
    found = {ref for refs in ranked_refs[:k] for ref in refs if ref in gold}
    return len(found) / len(gold)


def _where(result, gold: set[str], top_refs: list[list[str]]) -> dict[str, int]:
    """Where the gold refs missing from the top 10 are: in 11-25, ranked lower, or not candidates."""
    from memory.models import MemorySource

    order = next((s["order"] for s in result.stages if s["stage"] == "rank"), [])
    refs_of: dict[int, set[str]] = defaultdict(set)
    for memory_id, ref in MemorySource.objects.filter(memory_id__in=[m for m, _ in order]).values_list(
            "memory_id", "external_ref"):
        refs_of[memory_id].add(ref)
    top10 = {r for refs in top_refs[:10] for r in refs}
    top25 = {r for refs in top_refs[:25] for r in refs}
    ranked = {r for m, _ in order for r in refs_of[m]}
    out = {"top10": 0, "11-25": 0, "ranked lower": 0, "not a candidate": 0}
    for ref in gold:
        key = "top10" if ref in top10 else "11-25" if ref in top25 else "ranked lower" if ref in ranked else "not a candidate"
        out[key] += 1
    return out


def _label_row(case, step, labels: dict[str, int], ids: list[int], ks) -> dict:
    """A probe that expects labels: the share of its labelled memories in the top k (label recall@k;
    at k=5 the evaluator's expect_hit_rate for a probe with labels only). Category: the case id
    without its number (`personal-zh-tune-03` -> `personal-zh-tune`)."""
    gold = [labels.get(label) for label in step["expect"]["labels"]]
    return {"case": case["id"], "category": case["id"].rsplit("-", 1)[0],
            **{f"R@{k}": sum(1 for g in gold if g in ids[:k]) / len(gold) for k in ks}}


def _score(cases, run_id, ks, misses: bool = False, labels_of: dict | None = None,
           dense: bool = False) -> tuple[list[dict], list[float]]:
    from datetime import datetime

    from evaluation.dense import dense_recall
    from evaluation.runner import CaseRunner
    from memory.recall import RecallQuery, recall
    from tenancy.services import org_get_or_create

    rows, timings = [], []
    for case in cases:
        runner = CaseRunner(case, run_id=run_id, k_override=None, baseline=None)
        labels = (labels_of or {}).get(case["id"], {})
        for step in case["steps"]:
            expect = step.get("expect", {}) if step["op"] == "probe" else {}
            if not expect.get("sources") and not (expect.get("labels") and labels):
                continue
            org_name, user = step.get("org", case["org"]), step.get("user", case["user"])
            org = org_get_or_create(slug=runner._org_slug(org_name))
            conversation_id = runner.conversation(org_name, user, step["session"])
            if dense:  # the plain embedder over the same memories (evaluation/dense.py)
                found = dense_recall(org=org, user_id=user, query=step["query"], k=max(ks), at=step["at"],
                                     conversation_id=conversation_id)
                if expect.get("labels"):
                    rows.append(_label_row(case, step, labels, [i["id"] for i in found], ks))
                    continue
                refs = [[s["ref"] for s in item["sources"] if s.get("ref")] for item in found]
                gold = set(expect["sources"])
                rows.append({"case": case["id"], "category": step["label"].split("-", 1)[-1],
                             **{f"R@{k}": _recall_at(gold, refs, k) for k in ks}})
                continue
            result = recall(RecallQuery(
                org=org, user_id=user, query=step["query"], k=max(ks), at=datetime.fromisoformat(step["at"]),
                conversation_id=conversation_id, explain=misses))
            timings.append(result.timings_ms.get("total", 0.0))
            if expect.get("labels"):
                rows.append(_label_row(case, step, labels, [item.memory.id for item in result.items], ks))
                continue
            refs = [[s["ref"] for s in item.sources if s.get("ref")] for item in result.items]
            gold = set(step["expect"]["sources"])
            rows.append({"case": case["id"], "category": step["label"].split("-", 1)[-1],
                         **{f"R@{k}": _recall_at(gold, refs, k) for k in ks},
                         **({"where": _where(result, gold, refs)} if misses else {})})
    return rows, timings


def _summary(rows: list[dict], ks) -> dict[str, dict[str, float]]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        groups["all"].append(row)
        groups[row["category"]].append(row)
    return {g: {"n": len(rs), **{f"R@{k}": round(100 * sum(r[f"R@{k}"] for r in rs) / len(rs), 1) for k in ks}}
            for g, rs in sorted(groups.items(), key=lambda kv: (kv[0] != "all", kv[0]))}


def main(argv=None) -> int:
    args = parse_args(argv)
    bench = common.setup(NAME, args)
    from django.test import override_settings

    import memory.recall.access_stats
    from evaluation.runner import load_cases, new_run_id

    ks = tuple(int(k) for k in args.ks.split(","))
    wanted = [c for c in args.cases.split(",") if c]
    cases = [c for c in load_cases(args.file) if not wanted or c["id"] in wanted]
    marker = bench.var_dir / "ingested.json"
    meta = json.loads(marker.read_text()) if marker.exists() else None
    if meta and meta["file"] == args.file and meta["cases"] == [c["id"] for c in cases]:
        run_id, labels_of = meta["run_id"], meta.get("labels", {})
        bench.log(f"reusing ingest {run_id}")
    else:
        run_id = new_run_id()
        labels_of = _ingest(bench, cases, run_id)
        marker.write_text(json.dumps({"file": args.file, "cases": [c["id"] for c in cases], "run_id": run_id,
                                      "labels": labels_of}))
    memory.recall.access_stats.record_access = lambda ids: None  # frozen: the frequency prior must not drift between variants
    report = {}
    for name, overrides in _variants(args.variant):
        t0 = time.perf_counter()
        with override_settings(**overrides):
            rows, timings = _score(cases, run_id, ks, args.misses and name != "dense", labels_of, dense=name == "dense")
        summary = _summary(rows, ks)
        timings.sort()
        p50 = timings[len(timings) // 2] if timings else 0.0
        report[name] = {"overrides": overrides, "summary": summary, "recall_p50_ms": round(p50, 1)}
        line = "  ".join(f"{g}({s['n']}) " + "/".join(f"{s[f'R@{k}']:.1f}" for k in ks) for g, s in summary.items())
        print(f"{name:<16} {line}  p50 {p50:.1f} ms  ({time.perf_counter() - t0:.0f}s)", flush=True)
        if args.per_case:
            per_case: dict[str, list[float]] = defaultdict(list)
            for row in rows:
                per_case[row["case"]].append(row["R@10"])
            print("   R@10 per case: " + "  ".join(f"{c} {100 * sum(v) / len(v):.1f}" for c, v in per_case.items()))
        if args.misses:
            where: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
            for row in rows:
                for key, n in row.get("where", {}).items():
                    where[row["category"]][key] += n
                    where["all"][key] += n
            for category, counts in sorted(where.items()):
                print(f"   gold refs of {category}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    out = common.write_results(bench, {"file": args.file, "cases": [c["id"] for c in cases], "variants": report})
    bench.log(f"results {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
