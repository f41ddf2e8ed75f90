"""Strict validation of the reviewer's answer.

The answer is one JSON object `{"pairs": [...], "statements": [...]}` with at most one entry per item
shown. Anything unexpected (not JSON, another shape, a decision outside the vocabulary, a `keep`
without a kind, an id that was not shown or is answered twice) makes the whole answer invalid: a
model that invents an id may also have mixed up the ones it did see, and a wrong `replaces` would
retire a true memory. An item the answer leaves out is simply unanswered.
"""
from __future__ import annotations

import json
from typing import Any

__all__ = ["GATE_DECISIONS", "KEEP_KINDS", "PAIR_DECISIONS", "InvalidAnswer", "parse_answer"]

PAIR_DECISIONS = frozenset({"replaces", "coexists", "duplicate", "unsure"})
GATE_DECISIONS = frozenset({"keep", "task_only", "drop", "unsure"})
KEEP_KINDS = frozenset({"preference", "fact", "event"})
ENTRY_KEYS = frozenset({"id", "decision", "kind", "reason"})  # a `reason` is tolerated, never kept or logged


class InvalidAnswer(ValueError):
    """`reason` is a short category safe to log (never model or memory text)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _entries(answer: dict, key: str, shown: set[int], decisions: frozenset, seen: set[int]) -> dict[int, dict]:
    entries = answer.get(key, [])
    if not isinstance(entries, list):
        raise InvalidAnswer(f"{key}_not_list")
    out = {}
    for entry in entries:
        if not isinstance(entry, dict) or not set(entry) <= ENTRY_KEYS:
            raise InvalidAnswer(f"{key}_entry_shape")
        item_id, decision = entry.get("id"), entry.get("decision")
        if not _is_int(item_id) or item_id not in shown:
            raise InvalidAnswer(f"{key}_unknown_id")
        if item_id in seen:
            raise InvalidAnswer(f"{key}_repeated_id")
        if decision not in decisions:
            raise InvalidAnswer(f"{key}_decision")
        kind = entry.get("kind")
        if decision == "keep" and kind not in KEEP_KINDS:
            raise InvalidAnswer(f"{key}_kind")
        if decision != "keep" and kind is not None and kind not in KEEP_KINDS:
            raise InvalidAnswer(f"{key}_kind")
        seen.add(item_id)
        out[item_id] = {"decision": decision, "kind": kind if decision == "keep" else None}
    return out


def parse_answer(content: str, *, pair_ids: set[int], statement_ids: set[int]) -> dict[int, dict]:
    """{short id: {"decision": ..., "kind": ...}} for every item the answer decided."""
    try:
        answer = json.loads(content)
    except (ValueError, TypeError) as exc:
        raise InvalidAnswer("not_json") from exc
    if not isinstance(answer, dict) or not set(answer) <= {"pairs", "statements"}:
        raise InvalidAnswer("shape")
    seen: set[int] = set()
    decided = _entries(answer, "pairs", pair_ids, PAIR_DECISIONS, seen)
    decided.update(_entries(answer, "statements", statement_ids, GATE_DECISIONS, seen))
    return decided
