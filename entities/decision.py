"""The resolver's answer (entities/resolver.py) and how a list of visible candidates becomes one: one is
"resolved", several "ambiguous" (the first `limit` of them, saying `truncated`), none "none". Every rule ends
here, so an answer is built in one place whichever rule decided it.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from entities.typewords import DEMONSTRATIVES, Cue
from entities.windows import Gate, MentionEvidence, latest_turn, mention_step

__all__ = ["Mentions", "Resolution", "decide", "narrowed_decision", "recent_tie"]


@dataclass
class Resolution:
    status: str  # "resolved" | "ambiguous" | "none"
    entity_id: int | None = None  # when resolved
    candidates: list[int] = field(default_factory=list)  # when ambiguous: all of them, or the first max_candidates
    evidence: list[dict] = field(default_factory=list)  # ordered steps used
    truncated: bool = False  # ambiguous, and more visible candidates exist than `candidates` holds


Mentions = Sequence[MentionEvidence] | Callable[[], Sequence[MentionEvidence]]


def decide(ids: list[int], evidence: list[dict], limit: int | None = None) -> Resolution:
    if len(ids) == 1:
        return Resolution(status="resolved", entity_id=ids[0], evidence=evidence)
    if ids:
        truncated = limit is not None and len(ids) > limit
        candidates = list(ids[:limit]) if truncated else list(ids)
        return Resolution(status="ambiguous", candidates=candidates, evidence=evidence, truncated=truncated)
    return Resolution(status="none", evidence=evidence)


def narrowed_decision(ids: list[int], evidence: list[dict], cues: list[Cue], windows, gate: Gate,
                      limit: int | None) -> Resolution:
    """Several entities named by values or parts: "那台" means the one of them just discussed in this
    conversation; "上次" the one discussed last in any."""
    if len(ids) > 1:
        among = set(ids)
        for rule, kind, mentions in windows:
            if kind == "coref":
                cue = next((c for c in cues if c.kind == "coref" or c.word in DEMONSTRATIVES), None)
            else:
                cue = next((c for c in cues if c.kind == kind and c.word not in DEMONSTRATIVES), None)
            if cue is None:
                continue
            latest_ids, latest = latest_turn(mentions() if callable(mentions) else mentions, gate, lambda eid: eid in among)
            if latest_ids and latest is not None:
                return decide(latest_ids, evidence + [mention_step(rule, cue, latest_ids, latest)], limit)
    return decide(ids, evidence, limit)


def recent_tie(ids: list[int], evidence: list[dict], recent: Mentions, gate: Gate,
               max_candidates: int | None) -> Resolution:
    """Several entities fit the mention ("张师傅" of two technicians Zhang, "the confocal" of two microscopes): when this
    conversation's recent window discussed only one of them, that one is meant, as a listener would take it; with
    none or several of them discussed, all of them."""
    among = set(ids)
    mentions = recent() if callable(recent) else recent
    latest_ids, latest = latest_turn(mentions, gate, lambda eid: eid in among)
    if not latest_ids or latest is None or len(latest_ids) == len(ids) \
            or latest_turn(mentions, gate, lambda eid: eid in among and eid not in latest_ids)[0]:
        return decide(ids, evidence, max_candidates)
    return decide(latest_ids, evidence + [mention_step("recent_tie", None, latest_ids, latest)], max_candidates)
