"""Aggregate metrics of a scenario run (FORMAT.md "Metrics the runner reports")."""
import math

from evaluation.runner import CaseResult, ProbeResult


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return round(ordered[index], 3)


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def source_scores(probe: ProbeResult, k: int) -> tuple[float, float, float]:
    """(recall@k, all_hit@k, ndcg@k) over the probe's gold refs, items ranked as recalled."""
    gold = set(probe.source_gold)
    found: dict[str, int] = {}
    for rank, refs in enumerate(probe.ranked_refs[:k], start=1):
        for ref in refs:
            if ref in gold and ref not in found:
                found[ref] = rank
    recall = len(found) / len(gold)
    dcg = sum(1 / math.log2(rank + 1) for rank in found.values())
    idcg = sum(1 / math.log2(i + 1) for i in range(1, min(len(gold), k) + 1))
    return recall, float(len(found) == len(gold)), dcg / idcg if idcg else 0.0


def compute(cases: list[CaseResult], *, source_ks: tuple[int, ...] = ()) -> dict:
    probes = [p for c in cases for p in c.probes]
    source_probes = [p for p in probes if p.source_gold]
    metrics: dict = {
        "probe_pass_rate": _rate(sum(p.passed for p in probes), len(probes)),
        "expect_hit_rate": _rate(sum(p.expect_hit for p in probes), sum(p.expect_total for p in probes)),
        "stale_injection_rate": _rate(sum(p.forbid_violated for p in probes), sum(p.has_forbid for p in probes)),
        "erasure_violation_rate": _rate(sum(p.erased_violated for p in probes), sum(p.has_erased for p in probes)),
        "entity_accuracy": _rate(sum(p.entity_ok for p in probes), sum(p.entity_expected for p in probes)),
    }
    if source_probes:
        scores = [source_scores(p, p.k) for p in source_probes]
        metrics["source_recall@k"] = round(sum(s[0] for s in scores) / len(scores), 4)
        metrics["all_hit@k"] = round(sum(s[1] for s in scores) / len(scores), 4)
        metrics["ndcg@k"] = round(sum(s[2] for s in scores) / len(scores), 4)
        by_suffix: dict[str, list[float]] = {}
        for probe, score in zip(source_probes, scores):
            suffix = probe.label.split("-", 1)[1] if "-" in probe.label else probe.label
            by_suffix.setdefault(suffix, []).append(score[0])
        metrics["source_recall_by_label_suffix"] = {k: round(sum(v) / len(v), 4) for k, v in sorted(by_suffix.items())}
        for k in source_ks:
            at_k = [source_scores(p, k) for p in source_probes]
            metrics[f"source_recall@{k}"] = round(sum(s[0] for s in at_k) / len(at_k), 4)
            metrics[f"all_hit@{k}"] = round(sum(s[1] for s in at_k) / len(at_k), 4)
            metrics[f"ndcg@{k}"] = round(sum(s[2] for s in at_k) / len(at_k), 4)
            per: dict[str, list[float]] = {}
            for probe, score in zip(source_probes, at_k):
                suffix = probe.label.split("-", 1)[1] if "-" in probe.label else probe.label
                per.setdefault(suffix, []).append(score[0])
            metrics[f"source_recall@{k}_by_label_suffix"] = {s: round(sum(v) / len(v), 4) for s, v in sorted(per.items())}
    else:
        metrics.update({"source_recall@k": None, "all_hit@k": None, "ndcg@k": None, "source_recall_by_label_suffix": {}})
    tokens = [p.context_tokens for p in probes if p.context_tokens is not None]
    recall_ms = [p.recall_ms for p in probes if p.recall_ms is not None]
    context_ms = [p.context_ms for p in probes if p.context_ms is not None]
    metrics.update({
        "context_tokens_p50": _pct(tokens, 0.5), "context_tokens_p95": _pct(tokens, 0.95),
        "recall_ms_p50": _pct(recall_ms, 0.5), "recall_ms_p95": _pct(recall_ms, 0.95),
        "context_ms_p50": _pct(context_ms, 0.5), "context_ms_p95": _pct(context_ms, 0.95),
    })
    return metrics
