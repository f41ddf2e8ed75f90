"""Strict validation of the LLM's extraction answer.

Anything unexpected makes the whole answer invalid and the caller falls back to the rules: a
half-trusted answer is worse than a rule-based one, because a wrong `supersedes` id or a fact
invented from an assistant turn would silently replace a true memory.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from memory.extraction.base import ASSERTIONS, CHANGES, KINDS, OPERATIONS, SCOPES, Candidate
from memory.extraction.importance import importance_for

__all__ = ["InvalidOutput", "ParsedOutput", "parse_output"]

MAX_MEMORIES = 20
MAX_CONTENT_CHARS = 2000
MAX_SLOT_CHARS = 200  # the slot_key column is 200 characters
MAX_SUBJECT_CHARS = 100


class InvalidOutput(ValueError):
    """`reason` is a short category safe to log (never contains model or message text)."""

    def __init__(self, reason: str, ids: list[int] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.ids = ids or []


@dataclass
class ParsedOutput:
    candidates: list[Candidate]
    do_not_remember: bool


def _require(cond: bool, reason: str) -> None:
    if not cond:
        raise InvalidOutput(reason)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _parse_time(value: Any, ref: datetime, reason: str) -> datetime | None:
    if value is None:
        return None
    _require(isinstance(value, str) and len(value) <= 40, reason)
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        # A date without an offset is meant in the user's time zone, which is the message's.
        parsed = parsed if parsed.tzinfo else parsed.replace(tzinfo=ref.tzinfo)
        # Normalising to UTC here surfaces dates the database cannot store (year 9999 with an offset).
        parsed = parsed.astimezone(timezone.utc)
    except (ValueError, OverflowError) as exc:
        raise InvalidOutput(reason) from exc
    _require(1900 <= parsed.year <= 2200, reason)
    return parsed


def parse_output(raw: str, *, shown_ids: set[int], role: str, ref: datetime) -> ParsedOutput:
    try:
        data = json.loads(raw)
    except (TypeError, ValueError) as exc:
        raise InvalidOutput("not_json") from exc
    _require(isinstance(data, dict), "not_object")
    _require(isinstance(data.get("reasoning"), str), "reasoning")
    memories = data.get("memories")
    _require(isinstance(memories, list) and len(memories) <= MAX_MEMORIES, "memories")
    dnr = data.get("do_not_remember", False)
    _require(isinstance(dnr, bool), "do_not_remember")

    candidates = [_candidate(item, shown_ids=shown_ids, role=role, ref=ref) for item in memories]
    if dnr:
        return ParsedOutput(candidates=[], do_not_remember=True)
    return ParsedOutput(candidates=candidates, do_not_remember=False)


def _candidate(item: Any, *, shown_ids: set[int], role: str, ref: datetime) -> Candidate:
    _require(isinstance(item, dict), "memory_not_object")
    operation, kind, assertion = item.get("operation"), item.get("kind"), item.get("assertion")
    scope, content, slot_key = item.get("scope", "user"), item.get("content"), item.get("slot_key")
    _require(operation in OPERATIONS, "operation")
    _require(kind in KINDS, "kind")
    _require(assertion in ASSERTIONS, "assertion")
    _require(scope in SCOPES, "scope")
    _require(isinstance(content, str) and 0 < len(content.strip()) <= MAX_CONTENT_CHARS, "content")
    _require(slot_key is None or (isinstance(slot_key, str) and len(slot_key) <= MAX_SLOT_CHARS), "slot_key")

    subject = item.get("subject")
    _require(subject is None or (isinstance(subject, str) and len(subject) <= MAX_SUBJECT_CHARS), "subject")

    supersedes = item.get("supersedes", [])
    _require(isinstance(supersedes, list) and all(_is_int(i) for i in supersedes), "supersedes_type")
    unknown = [i for i in supersedes if i not in shown_ids]
    if unknown:
        raise InvalidOutput("supersedes_unknown_id", ids=unknown)

    change = item.get("change")
    _require(change is None or change in CHANGES, "change")
    importance = item.get("importance")
    _require(importance is None or (isinstance(importance, (int, float)) and not isinstance(importance, bool)
                                    and 0 <= importance <= 1), "importance")

    # Invariants the write path relies on.
    _require((kind == "suggestion") == (assertion == "model_suggestion"), "suggestion_assertion")
    _require(role != "assistant" or kind == "suggestion", "assistant_fact")
    _require(scope != "task" or kind == "context", "task_scope_kind")
    _require(operation != "UPDATE" or bool(supersedes), "update_without_supersedes")

    if operation == "UPDATE" and change is None:
        change = "update"
    if operation != "UPDATE":
        supersedes = []  # ADD/NOOP replace nothing, whatever the model listed
    return Candidate(
        kind=kind,
        content=content.strip(),
        assertion=assertion,
        slot_key=slot_key.strip() or None if isinstance(slot_key, str) else None,
        scope=scope,
        occurred_at=_parse_time(item.get("occurred_at"), ref, "occurred_at"),
        valid_from=_parse_time(item.get("valid_from"), ref, "valid_from"),
        valid_to=_parse_time(item.get("valid_to"), ref, "valid_to"),
        importance=float(importance) if importance is not None
        else importance_for(kind=kind, scope=scope, change=change),
        operation=operation,
        supersedes=list(dict.fromkeys(supersedes)),
        change=change,
        # Only standing statements have an attribute; anything else is matched on nothing.
        subject=(subject.strip() or None) if isinstance(subject, str) and kind in ("preference", "fact") else None,
    )
