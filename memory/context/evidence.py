"""The caller's retrieval evidence in the context: ranked, numbered [1..n] for citation.

Evidence is what the agent's own retrieval found for this turn (knowledge-base passages, documents).
It goes right after the system prompt ("lost in the middle": the start of the context is read best)
and is the only citable section; long-term memories are background and carry no numbers.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from conversations.tokens import MESSAGE_OVERHEAD_TOKENS, count_prefixed, count_tokens, truncate_to_tokens

__all__ = ["EVIDENCE_HEADER", "Evidence", "EvidenceUnits", "evidence_tokens", "evidence_units", "render_evidence"]

EVIDENCE_HEADER = "Evidence for this turn (cite as [n]):"
CUT_MARKER = " […]"


@dataclass(frozen=True)
class Evidence:
    id: str
    text: str
    source: str
    score: float | None = None


@dataclass
class EvidenceUnits:
    items: list[Evidence] = field(default_factory=list)  # best first, texts already cut to the passage cap
    costs: list[int] = field(default_factory=list)  # tokens of each rendered line, its newline included
    truncated: list[str] = field(default_factory=list)  # ids of passages cut to the passage cap
    spaced: list[int] = field(default_factory=list)  # tokens of " " + each text, as it follows "[n]"


def _ranked(evidence: list[Evidence]) -> list[Evidence]:
    # The caller's order is its ranking; scores, where given, re-rank (items without one keep their
    # place after the scored ones). sorted() is stable, so equal scores keep the caller's order.
    if not any(e.score is not None for e in evidence):
        return list(evidence)
    return sorted(evidence, key=lambda e: (e.score is None, -(e.score or 0.0)))


def _line(number: int, item: Evidence) -> str:
    return f"[{number}] {item.text} (source: {item.source})"


def evidence_units(evidence: list[Evidence], *, max_passage_tokens: int) -> EvidenceUnits:
    """Price every passage once. A line's number depends on how many go in before it, so it is priced
    with the largest number it could get (an upper bound: "[1]" never costs more than "[20]")."""
    units = EvidenceUnits()
    widest = f"[{len(evidence)}] "
    for item in _ranked(evidence):
        tokens = count_tokens(item.text)
        if tokens > max_passage_tokens:
            item = Evidence(id=item.id, text=truncate_to_tokens(item.text, max_passage_tokens) + CUT_MARKER,
                            source=item.source, score=item.score)
            units.truncated.append(item.id)
            tokens = count_tokens(item.text)
        units.items.append(item)
        units.costs.append(count_tokens(widest) + tokens + count_tokens(f" (source: {item.source})") + 1)
        units.spaced.append(count_prefixed(" ", item.text, tokens))
    return units


def render_evidence(units: EvidenceUnits, taken: list[int]) -> str:
    """The evidence message: the included passages, best first, numbered from 1."""
    lines = [_line(n, units.items[i]) for n, i in enumerate(sorted(taken), start=1)]
    return "\n".join([EVIDENCE_HEADER, *lines]) if lines else ""


def evidence_tokens(units: EvidenceUnits, taken: list[int]) -> int:
    """Exactly the tokens of the evidence message ``render_evidence`` makes (its framing included),
    without encoding the passages again.

    The encoder cuts text into pieces and never merges across a cut (``count_prefixed``); the
    message has a cut before every "[" that opens a line (a piece that holds a newline only grows
    by more newlines, whitespace or "/"), after every "]" (a space follows), and before the
    " (source: " that ends a passage's text (a space never joins the piece before it when a
    non-space follows it). So the message costs the sum of those parts, each counted alone, and
    a passage's part is its own count with the leading space re-priced.
    """
    if not taken:
        return 0
    order = sorted(taken)
    total = MESSAGE_OVERHEAD_TOKENS + count_tokens(EVIDENCE_HEADER + "\n")
    for n, i in enumerate(order, start=1):
        newline = "\n" if n < len(order) else ""
        total += (count_tokens(f"[{n}]") + units.spaced[i]
                  + count_tokens(f" (source: {units.items[i].source}){newline}"))
    return total
