"""Quality gates of a scenario run: bounds on the report's metrics that make `memory_eval` exit non-zero.

A gate is `metric>=bound` or `metric<=bound` over any metric of the JSON report (FORMAT.md), so CI and
the benches gate what they measure: `--min-pass 1 --max-stale 0 --max-erasure 0` for the public files,
`--gate "source_recall@10>=0.6"` for a LoCoMo slice, a floor on a report half. A metric with no probes
to measure it (null) fails a `>=` gate (nothing was shown) and passes a `<=` gate (nothing was violated).
A case that stopped with an error fails every gated run: its later probes never ran, so its rates lie.
"""
import re
from dataclasses import dataclass

# The shortcuts `memory_eval` offers as flags: flag name -> (metric, operator).
FLAG_GATES = {
    "min_pass": ("probe_pass_rate", ">="),
    "min_hit": ("expect_hit_rate", ">="),
    "max_stale": ("stale_injection_rate", "<="),
    "max_erasure": ("erasure_violation_rate", "<="),
    "min_entity": ("entity_accuracy", ">="),
    "min_source_recall": ("source_recall@k", ">="),
}

_FIXED = {"probe_pass_rate", "expect_hit_rate", "stale_injection_rate", "erasure_violation_rate", "entity_accuracy",
          "context_tokens_p50", "context_tokens_p95", "recall_ms_p50", "recall_ms_p95", "context_ms_p50", "context_ms_p95"}
_AT_K = re.compile(r"(source_recall|all_hit|ndcg)@(k|\d+)")
_GATE = re.compile(r"\s*([\w@]+)\s*(>=|<=)\s*([0-9]*\.?[0-9]+)\s*")


@dataclass(frozen=True)
class Gate:
    metric: str
    op: str  # ">=" or "<="
    bound: float

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.bound:g}"


def known_metric(name: str) -> bool:
    return name in _FIXED or bool(_AT_K.fullmatch(name))


def gate_parse(text: str) -> Gate:
    """`metric>=0.9` / `metric<=0`; ValueError naming what is wrong."""
    match = _GATE.fullmatch(text)
    if not match:
        raise ValueError(f"gate {text!r} is not METRIC>=NUMBER or METRIC<=NUMBER")
    metric, op, bound = match.groups()
    if not known_metric(metric):
        raise ValueError(f"gate {text!r}: unknown metric {metric!r}")
    return Gate(metric, op, float(bound))


def gate_failures(report: dict, gates: list[Gate]) -> list[str]:
    """One readable line per gate the report misses; empty when every gate holds (or none is set)."""
    if not gates:
        return []
    failures = [f"case {c['id']} stopped with an error: {c['error']}" for c in report["cases"] if c.get("error")]
    metrics = report["metrics"]
    for gate in gates:
        value = metrics.get(gate.metric)
        if value is None:
            if gate.op == ">=":
                failures.append(f"{gate}: not measured (no probe in the file measures {gate.metric})")
            continue
        held = value >= gate.bound if gate.op == ">=" else value <= gate.bound
        if not held:
            failures.append(f"{gate}: measured {value}")
    return failures
