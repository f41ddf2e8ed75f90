"""The evidence case of ``bench.context``: the same conversation, each call with the caller's evidence
(by default 20 passages of ~200 tokens, fresh text on every call, as a retriever would return).

Floor, per call: the least work the same request needs, sharing no cache with the call —
``recall()`` for the query, one ``select_window()`` with the window budget the call used, and one
tiktoken encode of a *different* fresh evidence set of the same sizes (the raw encoder, not the
counting cache). The call and the floor each start from the warm-up's steady state
(bench/context_isolation.py), so neither reuses the other's cut of the same results for the same
query, nor the token counts of those cuts.
"""
from __future__ import annotations

import random

from bench import common

ZH_WORDS = ["液压油", "滤芯", "收割机", "拖拉机", "保养", "更换", "检查", "轴承", "皮带", "发动机", "小时", "周期",
            "压力", "温度", "低温", "润滑", "齿轮箱", "冷却液", "作业", "东区", "维修棚", "配件", "型号", "标准"]
EN_WORDS = ["hydraulic", "filter", "harvester", "tractor", "service", "replace", "inspect", "bearing", "belt",
            "engine", "hours", "interval", "pressure", "temperature", "lubricate", "gearbox", "coolant", "manual"]


def passages(rng: random.Random, count: int, tokens: int, tag: str) -> list[dict]:
    """``count`` fresh passages of about ``tokens`` tokens, sized with the raw encoder (no cache)."""
    from conversations.tokens import get_encoding

    encoding = get_encoding()
    out = []
    for i in range(count):
        words = ZH_WORDS if rng.random() < 0.7 else EN_WORDS
        sep = "" if words is ZH_WORDS else " "
        text = f"{tag}-{i}: "
        while len(encoding.encode(text, disallowed_special=())) < tokens:
            text += sep.join(rng.choice(words) for _ in range(8)) + f" {rng.randint(1, 999)}。"
        out.append({"id": f"{tag}-{i}", "text": text, "source": f"kb/doc-{rng.randint(1, 500)}#{i}",
                    "score": round(rng.random(), 3)})
    return out


def measure(*, bench, calls: list[dict], context_call, messages, conversation, org, user, count: int, tokens: int,
            seed: int, isolation) -> dict:
    from django.conf import settings

    from conversations.tokens import get_encoding
    from conversations.window import select_window
    from memory.context.evidence import Evidence
    from memory.recall import RecallQuery, recall

    rng = random.Random(seed)
    encoding = get_encoding()
    bench.log(f"evidence case: {len(calls)} calls with {count} passages of ~{tokens} tokens")
    samples = {"context": [], "floor": [], "floor_recall": [], "floor_window": [], "floor_evidence": []}
    included, dropped, totals, over = [], [], [], 0
    for n, c in enumerate(calls):
        mine = [Evidence(**p) for p in passages(rng, count, tokens, f"c{n}")]
        theirs = [p["text"] for p in passages(rng, count, tokens, f"f{n}")]
        isolation.fresh()
        result, ctx_ms = common.timed(context_call, c, mine)
        sec = {s.name: s for s in result.sections}
        isolation.fresh()
        _, r_ms = common.timed(recall, RecallQuery(org=org, user_id=user, query=c["message"],
                                                   k=settings.CONTEXT_RECALL_K, conversation_id=conversation.id))
        _, w_ms = common.timed(select_window, messages, sec["recent"].tokens, query=c["message"],
                               tool_result_max_tokens=settings.CONTEXT_TOOL_RESULT_MAX_TOKENS)
        _, e_ms = common.timed(lambda: [len(encoding.encode(t, disallowed_special=())) for t in theirs])
        samples["context"].append(ctx_ms)
        samples["floor"].append(r_ms + w_ms + e_ms)
        samples["floor_recall"].append(r_ms)
        samples["floor_window"].append(w_ms)
        samples["floor_evidence"].append(e_ms)
        included.append(len(sec["evidence"].included))
        dropped.append(len(sec["evidence"].dropped))
        totals.append(result.total_tokens)
        over += result.total_tokens > result.budget
    st = {k: common.stats(v) for k, v in samples.items()}
    by_budget: dict[int, list[int]] = {}
    for c, kept in zip(calls, included):
        by_budget.setdefault(c["budget"], []).append(kept)
    return {
        "passages": count, "passage_tokens": tokens, "latency_ms": st,
        "ratio": common.ratios(st["context"], st["floor"]),
        "evidence_included_mean_by_budget": {b: round(sum(v) / len(v), 1) for b, v in sorted(by_budget.items())},
        "evidence_dropped_mean": round(sum(dropped) / len(dropped), 1) if dropped else 0,
        "total_tokens_max": max(totals) if totals else 0, "calls_over_budget": over,
        "goals": {"context_p95_le_30ms": {"value": st["context"]["p95"], "limit": 30.0,
                                          "status": common.goal_mark(st["context"]["p95"], 30.0)}},
    }


def report(case: dict, spread) -> None:
    """The evidence case: every run's table, then the median across runs."""
    first = case["runs"][0]
    print(f"\n### evidence case — {first['passages']} passages of ~{first['passage_tokens']} tokens per call\n")
    for n, result in enumerate(case["runs"], start=1):
        st = result["latency_ms"]
        rows = [("floor: recall + select_window + encode evidence", st["floor"]), ("  floor: recall()", st["floor_recall"]),
                ("  floor: select_window()", st["floor_window"]), ("  floor: encode evidence", st["floor_evidence"]),
                ("assemble_context() with evidence", st["context"])]
        print(f"run {n}:\n")
        print(common.table(["path", "n", "p50 ms", "p95 ms", "p99 ms"],
                           [(label, s["n"], s["p50"], s["p95"], s["p99"]) for label, s in rows]))
        print(f"\nratio to the floor p50/p95 = {result['ratio'].get('p50')}/{result['ratio'].get('p95')}; "
              f"passages included by budget {result['evidence_included_mean_by_budget']}; "
              f"calls over budget: {result['calls_over_budget']}\n")
    value = case["context_p95"]["median"]
    print(f"median of {len(case['runs'])} runs (min–max): context p95 {spread(case['context_p95'])} ms, floor p95 "
          f"{spread(case['floor_p95'])} ms, ratio p95 {spread(case['ratio_p95'])}; "
          f"goal p95 ≤ 30 ms: {common.goal_mark(value, 30.0)}")
