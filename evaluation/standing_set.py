"""The labelled standing-statement set (`evaluation/data/standing-{tune,report}.jsonl`): how the
rule extractor classifies one user sentence, scored per class.

Each line is one sentence with a gold label: `fact` / `preference` (standing knowledge: it must
become a long-term memory), `event` (something that happened), `task` (an instruction for the task
at hand only: it must never become standing) or `none` (small talk, questions, requests). The
sentences come from six domains (logistics, clinic, school, farm, household, software team) in
zh and en; a domain's zh and en blocks fall in different halves, so the report half shares no
sentence and no domain wording in its language with the tuning half.

The extractor's answer for a sentence is the kind of its first candidate (`task` when its scope
is task, `none` when it returns nothing or only a suggestion).
"""
from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path

from memory.extraction.base import ExtractionInput
from memory.extraction.rules import RuleExtractor

__all__ = ["LABELS", "classify", "load", "score"]

DATA_DIR = Path(__file__).resolve().parent / "data"
LABELS = ("fact", "preference", "event", "task", "none")
STANDING = ("fact", "preference")
_AT = datetime.fromisoformat("2026-05-12T10:00:00+08:00")


def load(split: str) -> list[dict]:
    path = DATA_DIR / f"standing-{split}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def classify(text: str, extractor: RuleExtractor | None = None) -> str:
    extractor = extractor or RuleExtractor()
    result = extractor.extract(ExtractionInput(role="user", content=text, occurred_at=_AT))
    for c in result.candidates:
        if c.replaces_only:
            continue  # stored only as the update of a memory on its subject: not a standing statement alone
        if c.scope == "task":
            return "task"
        if c.kind in ("fact", "preference", "event"):
            return c.kind
    return "none"


def _pr(gold: list[str], pred: list[str], positive: tuple[str, ...]) -> tuple[float | None, float | None]:
    tp = sum(1 for g, p in zip(gold, pred) if g in positive and p in positive)
    pp = sum(1 for p in pred if p in positive)
    gp = sum(1 for g in gold if g in positive)
    return (round(tp / pp, 3) if pp else None), (round(tp / gp, 3) if gp else None)


def score(rows: list[dict]) -> dict:
    """Precision/recall per label, for standing knowledge as one class (fact or preference: the
    promise is that it is stored, whichever of the two it is filed as), and the count of task
    instructions that became standing (the error the promise forbids outright)."""
    extractor = RuleExtractor()
    pred = [classify(r["text"], extractor) for r in rows]
    gold = [r["label"] for r in rows]
    out: dict = {"n": len(rows), "accuracy": round(sum(g == p for g, p in zip(gold, pred)) / len(rows), 3)}
    for label in LABELS:
        out[label] = dict(zip(("precision", "recall"), _pr(gold, pred, (label,))))
    out["standing"] = dict(zip(("precision", "recall"), _pr(gold, pred, STANDING)))
    out["task_as_standing"] = sum(1 for g, p in zip(gold, pred) if g == "task" and p in STANDING)
    out["errors"] = [{"id": r["id"], "gold": g, "got": p, "text": r["text"]}
                     for r, g, p in zip(rows, gold, pred) if g != p]
    out["confusion"] = dict(Counter(f"{g}->{p}" for g, p in zip(gold, pred) if g != p))
    return out
