"""Token-budgeted sliding window over a conversation's recent messages.

The window is filled from the newest message backwards and stays contiguous: once a
unit does not fit, everything older is dropped (it belongs to the rolling summary).
An assistant message with ``tool_calls`` and the tool results answering it form one
unit, so the model never sees a call without its result or a result without its call.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from common.text import split_sentences, tokenize
from conversations.tokens import count_message_tokens, count_tokens, truncate_to_tokens

__all__ = [
    "WindowMessage",
    "WindowPlan",
    "WindowResult",
    "WindowUnit",
    "message_tokens",
    "normalize_tool_call",
    "select_window",
    "tool_call_id",
    "truncate_tool_result",
]


def tool_call_id(call: dict[str, Any]) -> str:
    """The id ``normalize_tool_call`` gives ``call``, without serialising its arguments."""
    return str(call.get("id") or "")


def normalize_tool_call(call: dict[str, Any]) -> dict[str, Any]:
    """OpenAI shape ``{"id","type":"function","function":{"name","arguments": str}}``.

    Accepts the flat ``{"id","name","arguments": dict|str}`` form stored by agents, or
    the OpenAI form (whose arguments may still be a dict).
    """
    function = call.get("function") if isinstance(call.get("function"), dict) else call
    arguments = function.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), default=str)
    return {
        "id": tool_call_id(call),
        "type": "function",
        "function": {"name": str(function.get("name") or ""), "arguments": arguments},
    }


@dataclass
class WindowMessage:
    id: int
    role: str
    content: str
    tool_call_id: str | None = None
    tool_calls: list[dict] | None = None
    occurred_at: datetime | None = None
    seq: int = 0

    def call_ids(self) -> list[str]:
        return [tool_call_id(c) for c in self.tool_calls or []]

    def to_openai(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": self.role, "content": self.content or ""}
        if self.tool_calls:
            message["tool_calls"] = [normalize_tool_call(c) for c in self.tool_calls]
        if self.role == "tool" and self.tool_call_id:
            message["tool_call_id"] = self.tool_call_id
        return message


@dataclass
class WindowResult:
    included: list[WindowMessage] = field(default_factory=list)  # chronological; may hold cut copies
    dropped: list[WindowMessage] = field(default_factory=list)  # older than included, originals
    truncated_ids: list[int] = field(default_factory=list)  # included tool results that were cut
    tokens: int = 0  # sum of message_tokens over included
    orphaned_ids: list[int] = field(default_factory=list)  # tool results whose call is not in the input
    unanswered_call_ids: list[str] = field(default_factory=list)  # calls stripped: no result in the input


class WindowUnit(NamedTuple):
    """A message, or an assistant message with the tool results answering its calls (all in or all
    out), as it goes into the window."""

    messages: list[WindowMessage]  # prepared (a cut tool result, unanswered calls stripped), chronological
    tokens: int  # sum of message_tokens over them
    cut_ids: list[int]  # ids of the tool results that were cut


def message_tokens(message: WindowMessage) -> int:
    return count_message_tokens(message.to_openai())


# ---------------------------------------------------------------------------
# Cutting oversized tool results to their relevant part
# ---------------------------------------------------------------------------


def _omitted_marker(omitted_tokens: int) -> str:
    return f"[… {omitted_tokens:,} tokens of tool output omitted …]"


def _split_pieces(content: str) -> tuple[list[str], bool]:
    """Pieces to score, and whether they are the items of a JSON array.

    A JSON array is cut by item so the kept part is still a valid array; other text by
    line, or by sentence when it is a single line.
    """
    stripped = content.strip()
    if stripped.startswith("["):
        try:
            items = json.loads(stripped)
        except ValueError:
            items = None
        if isinstance(items, list) and len(items) > 1:
            return [json.dumps(i, ensure_ascii=False, separators=(",", ":")) for i in items], True
    lines = [line for line in content.splitlines() if line.strip()]
    return (lines if len(lines) > 1 else split_sentences(content)), False


@dataclass(frozen=True)
class _Pieces:
    """A tool result cut into pieces, priced and indexed once: it is cut again on every turn it stays
    in the window, for a new query each time, and only the scoring depends on the query."""

    texts: tuple[str, ...]
    is_array: bool
    costs: tuple[int, ...]  # tokens of each piece, its separator included
    holders: dict[str, tuple[int, ...]]  # term -> the pieces holding it, in order


@functools.lru_cache(maxsize=256)
def _analysed(content: str) -> _Pieces:
    pieces, is_array = _split_pieces(content)
    holders: dict[str, list[int]] = {}
    for i, piece in enumerate(pieces):
        for term in set(tokenize(piece)):
            holders.setdefault(term, []).append(i)
    return _Pieces(tuple(pieces), is_array, tuple(count_tokens(p) + 1 for p in pieces),  # +1: the separator
                   {term: tuple(at) for term, at in holders.items()})


@functools.lru_cache(maxsize=256)
def _query_terms(query: str) -> frozenset[str]:
    return frozenset(tokenize(query))  # asked once per tool result in the window, for the same query


def _rank_pieces(pieces: _Pieces, query: str) -> list[int] | None:
    """Piece indexes, most relevant first; ties keep the original order. None when no piece holds a
    term of the query (or there is no query): the original order."""
    n = len(pieces.texts)
    scores: dict[int, float] = {}
    for term in _query_terms(query):  # set order: the sums are rounded so equal scores tie in every process
        at = pieces.holders.get(term, ())
        # Rarer terms weigh more: a term found in every piece tells none of them apart.
        weight = 1.0 + (n / len(at)) ** 0.5 if at else 0.0
        for i in at:
            scores[i] = scores.get(i, 0.0) + weight
    if not scores:
        return None
    first = sorted(scores, key=lambda i: (-round(scores[i], 9), i))
    return first + [i for i in range(n) if i not in scores]


def _greedy(pieces: _Pieces, room: int, order) -> tuple[int, ...]:
    chosen: list[int] = []
    used = 2 if pieces.is_array else 0  # the array brackets
    for i in order:
        cost = pieces.costs[i]
        if used + cost <= room:
            chosen.append(i)
            used += cost
    return tuple(sorted(chosen))


@functools.lru_cache(maxsize=1024)
def _chosen_in_order(content: str, room: int) -> tuple[int, ...]:
    pieces = _analysed(content)
    return _greedy(pieces, room, range(len(pieces.texts)))


def _chosen_pieces(content: str, room: int, query: str) -> tuple[int, ...]:
    """The pieces (original order) that fit ``room``, most relevant to ``query`` first; () when the
    content is one piece or none fits (its head is kept instead)."""
    pieces = _analysed(content)
    if len(pieces.texts) <= 1:
        return ()
    order = _rank_pieces(pieces, query)
    return _chosen_in_order(content, room) if order is None else _greedy(pieces, room, order)


@functools.lru_cache(maxsize=1024)
def _cut(content: str, total: int, room: int, chosen: tuple[int, ...]) -> str:
    """The cut made of ``chosen`` pieces, with its marker. Only the choice depends on the query, and
    most new queries choose as an earlier one did (no term in common with the pieces keeps their
    order): the joined text is counted once per choice, not once per turn."""
    if chosen:
        pieces = _analysed(content)
        kept = ("," if pieces.is_array else "\n").join(pieces.texts[i] for i in chosen)
        kept = f"[{kept}]" if pieces.is_array else kept
    else:
        kept = truncate_to_tokens(content, room) if room > 0 else ""  # one huge piece: keep the head
    if count_tokens(kept) > room:
        # Joined pieces can tokenise a little differently from the sum of their parts.
        kept = truncate_to_tokens(kept, room)
    marker = _omitted_marker(total - count_tokens(kept))
    return f"{kept}\n{marker}" if kept else marker


@functools.lru_cache(maxsize=512)
def truncate_tool_result(content: str, max_tokens: int, query: str = "") -> str:
    """``content`` cut to about ``max_tokens`` tokens, keeping the pieces most relevant to ``query``.

    Kept pieces stay in their original order, followed by a marker saying how much was
    left out. With a limit smaller than the marker (~15 tokens) only the marker remains.
    """
    total = count_tokens(content)
    if total <= max_tokens:
        return content
    room = max_tokens - count_tokens(_omitted_marker(total)) - 1  # -1: the newline before it
    return _cut(content, total, room, _chosen_pieces(content, room, query) if room > 0 else ())


# ---------------------------------------------------------------------------
# Units: a plain message, or a tool-call group (all in or all out)
# ---------------------------------------------------------------------------


@dataclass
class _Plan:
    units: list[list[int]]  # contiguous index spans (orphans removed), chronological
    orphans: set[int]
    answered: set[tuple[int, str]]  # (index of the calling message, call id) with a result after it


def _plan_units(messages: list[WindowMessage]) -> _Plan:
    issuer: dict[str, int] = {}  # call id -> index of the latest assistant message that made it
    reach = list(range(len(messages)))  # last index that must travel with message i
    orphans: set[int] = set()
    answered: set[tuple[int, str]] = set()
    for j, message in enumerate(messages):
        if message.role == "tool":
            i = issuer.get(message.tool_call_id or "")
            if i is None:
                orphans.add(j)  # a result without its call would confuse the model: never send it
                continue
            reach[i] = max(reach[i], j)
            answered.add((i, message.tool_call_id or ""))
        for call_id in message.call_ids():
            if call_id:  # a call without an id can never be answered
                issuer[call_id] = j

    units: list[list[int]] = []
    start = 0
    while start < len(messages):
        # A span closes only when no message inside it has a result further on; results
        # that arrive after an unrelated message pull that message into the same unit.
        end, k = reach[start], start
        while k <= end:
            end = max(end, reach[k])
            k += 1
        span = [i for i in range(start, end + 1) if i not in orphans]
        if span:
            units.append(span)
        start = end + 1
    return _Plan(units=units, orphans=orphans, answered=answered)


def _prepare(
    messages: list[WindowMessage], index: int, *, plan: _Plan, query: str, tool_result_max_tokens: int
) -> tuple[WindowMessage, bool]:
    """The form of ``messages[index]`` that goes into the window, and whether its content was cut."""
    message = messages[index]
    if message.tool_calls:
        kept_calls = [c for c in message.tool_calls if (index, tool_call_id(c)) in plan.answered]
        if len(kept_calls) != len(message.tool_calls):
            message = dataclasses.replace(message, tool_calls=kept_calls or None)
    if message.role == "tool" and count_tokens(message.content) > tool_result_max_tokens:
        cut = truncate_tool_result(message.content, tool_result_max_tokens, query)
        return dataclasses.replace(message, content=cut), True
    return message, False


class WindowPlan:
    """The units of ``messages`` (chronological input), newest first, each prepared on first use.

    Context assembly grows the window in several steps (its own share, then whatever the budget
    has left): the plan lets it price one more unit at a time instead of selecting again.
    """

    def __init__(self, messages: list[WindowMessage], *, query: str = "", tool_result_max_tokens: int = 300) -> None:
        self.messages = messages
        self.query = query
        self.tool_result_max_tokens = tool_result_max_tokens
        self._plan = _plan_units(messages)
        self._prepared: list[WindowUnit] = []  # newest first
        # Prepared units by their messages (object identity: the plans hold them, so no id is reused),
        # shared with the plans made by after(): a unit of the same messages is prepared the same in
        # both, since the results answering its calls travel in the unit.
        self._by_messages: dict[tuple[int, ...], WindowUnit] = {}

    def __len__(self) -> int:
        return len(self._plan.units)

    def after(self, seq: int) -> WindowPlan:
        """The plan of the messages after ``seq`` (what a summary up to ``seq`` leaves verbatim),
        reusing the units this plan has already prepared."""
        later = WindowPlan([m for m in self.messages if m.seq > seq], query=self.query,
                           tool_result_max_tokens=self.tool_result_max_tokens)
        later._by_messages = self._by_messages
        return later

    def _unit(self, i: int) -> WindowUnit:
        while len(self._prepared) <= i:
            unit = self._plan.units[len(self._plan.units) - 1 - len(self._prepared)]
            key = tuple(id(self.messages[j]) for j in unit)
            entry = self._by_messages.get(key)
            if entry is None:
                prepared = [_prepare(self.messages, j, plan=self._plan, query=self.query,
                                     tool_result_max_tokens=self.tool_result_max_tokens) for j in unit]
                entry = WindowUnit([m for m, _ in prepared], sum(message_tokens(m) for m, _ in prepared),
                                   [m.id for m, cut in prepared if cut])
                self._by_messages[key] = entry
            self._prepared.append(entry)
        return self._prepared[i]

    def cost(self, i: int) -> int:
        """Tokens of the i-th newest unit (0 = the newest)."""
        return self._unit(i).tokens

    def fitting(self, budget: int) -> int:
        """How many of the newest units fit ``budget`` together (contiguous: never skip one)."""
        n = used = 0
        while budget > 0 and n < len(self) and used + self.cost(n) <= budget:
            used += self.cost(n)
            n += 1
        return n

    def priced(self, budget: int) -> list[WindowUnit]:
        """The newest units, newest first, prepared and priced until together they pass ``budget``: every
        unit a window within ``budget`` can hold, and the first one it cannot."""
        n = self.fitting(budget)
        return [self._unit(i) for i in range(min(n + 1, len(self)))]

    def newest(self, n: int) -> list[WindowMessage]:
        """The messages (prepared, chronological) of the ``n`` newest units."""
        return [m for i in range(n - 1, -1, -1) for m in self._unit(i).messages]

    def newest_dropped_seq(self, n: int) -> int:
        """The seq of the newest message left out when the window is the ``n`` newest units (0: none)."""
        if n >= len(self):
            return 0
        return self.messages[self._plan.units[len(self) - n - 1][-1]].seq

    def result(self, n: int) -> WindowResult:
        """The window made of the ``n`` newest units."""
        result = WindowResult(orphaned_ids=[self.messages[i].id for i in sorted(self._plan.orphans)])
        result.unanswered_call_ids = [
            call_id for i, m in enumerate(self.messages) for call_id in m.call_ids()
            if (i, call_id) not in self._plan.answered
        ]
        units = [self._unit(i) for i in range(n)]
        result.included = [m for unit in reversed(units) for m in unit.messages]
        result.tokens = sum(unit.tokens for unit in units)
        result.truncated_ids = sorted(i for unit in units for i in unit.cut_ids)
        result.dropped = [self.messages[i] for unit in self._plan.units[: len(self) - n] for i in unit]
        return result


def select_window(
    messages: list[WindowMessage],
    budget: int,
    *,
    query: str = "",
    tool_result_max_tokens: int = 300,
) -> WindowResult:
    """The newest contiguous run of ``messages`` (chronological input) that fits ``budget`` tokens.

    Orphaned tool results are in neither ``included`` nor ``dropped`` (see ``orphaned_ids``).
    Calls with no result anywhere in the input are stripped from the included copy of
    their assistant message (see ``unanswered_call_ids``).
    """
    plan = WindowPlan(messages, query=query, tool_result_max_tokens=tool_result_max_tokens)
    return plan.result(plan.fitting(budget))
