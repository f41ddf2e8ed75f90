"""Resolve which business entity a message is about (DESIGN §8).

Rules, in order; the first that yields a visible candidate decides:
  (a) explicit external id in the text
  (b) exact name / alias
  (c) coreference ("它", "这台", "it") -> the latest entity of the current conversation's window
  (d) long-term cue ("上次", "那台", "last time") -> the latest entity from past conversations
  (e) a type or category word alone ("那台收割机", "the tractor") -> every entity of that kind
One candidate -> "resolved"; several -> "ambiguous" with all of them; none -> "none".

Access: every candidate passes `allowed` before any decision, so an entity the user may not
read behaves exactly as an unregistered one and never appears in the evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from entities.matcher import EntityMatcher, EntityRef, Match, name_contains_any, normalize_key
from entities.typewords import Cue, category_words, scan

__all__ = ["MentionEvidence", "Resolution", "resolve"]


@dataclass
class MentionEvidence:
    entity_id: int
    at: datetime
    conversation_id: int | None = None


@dataclass
class Resolution:
    status: str  # "resolved" | "ambiguous" | "none"
    entity_id: int | None = None  # when resolved
    candidates: list[int] = field(default_factory=list)  # when ambiguous: all of them
    evidence: list[dict] = field(default_factory=list)  # ordered steps used


def resolve(
    text: str,
    *,
    matcher: EntityMatcher,
    entities: Mapping[int, EntityRef],
    recent: Sequence[MentionEvidence] = (),
    past: Sequence[MentionEvidence] = (),
    allowed: Callable[[int], bool] = lambda _id: True,
    allowed_many: Callable[[Collection[int]], Collection[int]] | None = None,
) -> Resolution:
    """Resolve the entity `text` refers to.

    `recent`: mentions in the current conversation's recent window; `past`: mentions across the
    user's conversations (both any order; the latest `at` wins). `allowed_many`, when given, is
    used instead of `allowed` to check a batch of ids in one call (e.g. one HTTP request).
    """
    gate = _Gate(entities, allowed, allowed_many)
    matches = matcher.find(text, keep=gate.visible)
    cues = scan(text)
    # A type word inside a matched surface is part of a name ("S780 联合收割机" is a model, its
    # "收割机" says nothing about the type the user means).
    type_cues = [c for c in cues if c.kind == "type" and not _covered(c, matches)]
    constraint = _Constraint.from_cues(type_cues)
    evidence: list[dict] = []
    if type_cues:
        evidence.append(
            {
                "rule": "type_words",
                "words": [c.word for c in type_cues],
                "types": sorted(constraint.types),
                "categories": sorted({c.category for c in type_cues if c.category}),
            }
        )

    # (a), (b): explicit surfaces. Only the type constrains them; a category word is not asked
    # to appear in an explicitly named entity's name ("M954-07这台拖拉机").
    for rule, hows in (("explicit_id", {"id"}), ("name_alias", {"name", "alias"})):
        steps, ids = _explicit(matches, hows, lambda eid: constraint.type_ok(entities[eid]))
        if ids:
            return _decide(ids, evidence + [{"rule": rule, **step} for step in steps])

    # (c), (d): the latest mention of a matching entity; several in that same turn -> ambiguous.
    windows = (("coreference", "coref", recent), ("long_term", "long_term", past))
    for rule, kind, mentions in windows:
        cue = next((c for c in cues if c.kind == kind), None)
        if cue is None:
            continue
        ids, latest = _latest_turn(
            mentions, gate, lambda eid: eid in entities and constraint.accepts(entities[eid])
        )
        if ids and latest is not None:
            step = {"rule": rule, "cue": cue.word, "entity_ids": ids, "at": latest.at.isoformat()}
            if latest.conversation_id is not None:
                step["conversation_id"] = latest.conversation_id
            return _decide(ids, evidence + [step])

    # (e): type / category word standing alone. Words attached to a number or code ("3号拖拉机",
    # "工单0012") name a specific entity that is not visible: answering with another entity of
    # the same kind would be a silent wrong guess.
    standalone = _Constraint.from_cues([c for c in type_cues if not c.qualified])
    if standalone.types:
        ids = gate.visible_list(
            # enumerate() already applied the name filter; the type check keeps `entities` the
            # authority should the matcher be older than the mapping.
            eid
            for eid in standalone.enumerate(matcher)
            if eid in entities and standalone.type_ok(entities[eid])
        )
        step = {"rule": "type_only", "types": sorted(standalone.types), "entity_ids": ids}
        return _decide(ids, evidence + [step])

    return Resolution(status="none", evidence=evidence)


def _decide(ids: list[int], evidence: list[dict]) -> Resolution:
    if len(ids) == 1:
        return Resolution(status="resolved", entity_id=ids[0], evidence=evidence)
    if ids:
        return Resolution(status="ambiguous", candidates=list(ids), evidence=evidence)
    return Resolution(status="none", evidence=evidence)


class _Gate:
    """Visibility = registered in `entities` and allowed; memoised for one resolution."""

    def __init__(
        self,
        entities: Mapping[int, EntityRef],
        allowed: Callable[[int], bool],
        allowed_many: Callable[[Collection[int]], Collection[int]] | None,
    ):
        self._entities = entities
        self._allowed = allowed
        self._allowed_many = allowed_many
        self._known: dict[int, bool] = {}

    def visible(self, ids: Collection[int]) -> set[int]:
        unknown = {i for i in ids if i not in self._known}
        registered = {i for i in unknown if i in self._entities}
        for i in unknown - registered:
            self._known[i] = False
        if registered:
            if self._allowed_many is not None:
                ok = set(self._allowed_many(registered))
                for i in registered:
                    self._known[i] = i in ok
            else:
                for i in registered:
                    self._known[i] = bool(self._allowed(i))
        return {i for i in ids if self._known[i]}

    def visible_list(self, ids: Iterable[int]) -> list[int]:
        ordered = list(dict.fromkeys(ids))
        ok = self.visible(ordered)
        return [i for i in ordered if i in ok]


@dataclass(frozen=True)
class _Constraint:
    types: frozenset[str]  # empty = no type word, anything goes
    # type -> normalised category words; a type listed here also filters by name.
    names: Mapping[str, tuple[str, ...]]

    @classmethod
    def from_cues(cls, cues: Iterable[Cue]) -> _Constraint:
        types: set[str] = set()
        names: dict[str, set[str]] = {}
        for c in cues:
            if c.type is None:
                continue
            types.add(c.type)
            if c.category:
                words = category_words(c.category)
                names.setdefault(c.type, set()).update(normalize_key(w) for w in words)
        return cls(frozenset(types), {t: tuple(sorted(ws)) for t, ws in names.items()})

    def type_ok(self, ref: EntityRef) -> bool:
        return not self.types or ref.type in self.types

    def accepts(self, ref: EntityRef) -> bool:
        if not self.type_ok(ref):
            return False
        words = self.names.get(ref.type)
        return words is None or name_contains_any(ref, words)

    def enumerate(self, matcher: EntityMatcher) -> list[int]:
        ids: set[int] = set()
        for t in self.types:
            words = self.names.get(t)
            ids.update(matcher.ids_named_like(t, words) if words else matcher.ids_of_type(t))
        return sorted(ids)


def _covered(cue: Cue, matches: Sequence[Match]) -> bool:
    return any(m.start <= cue.start and cue.end <= m.end for m in matches)


def _explicit(
    matches: Sequence[Match], hows: set[str], ok: Callable[[int], bool]
) -> tuple[list[dict], list[int]]:
    steps: dict[tuple[int, str], list[int]] = {}
    ids: list[int] = []
    for m in matches:
        if m.how not in hows or not ok(m.entity_id):
            continue
        steps.setdefault((m.start, m.surface), []).append(m.entity_id)
        if m.entity_id not in ids:
            ids.append(m.entity_id)
    return [{"surface": surface, "entity_ids": eids} for (_, surface), eids in steps.items()], ids


def _latest_turn(
    mentions: Sequence[MentionEvidence], gate: _Gate, ok: Callable[[int], bool]
) -> tuple[list[int], MentionEvidence | None]:
    """Entities of the most recent turn (same `at`) among visible, matching mentions."""
    # Type/category first: cheaper than the access check, which may be a remote call.
    eligible = [m for m in mentions if ok(m.entity_id)]
    visible = gate.visible({m.entity_id for m in eligible})
    eligible = [m for m in eligible if m.entity_id in visible]
    if not eligible:
        return [], None
    latest = max(eligible, key=lambda m: m.at)  # first of equals: stable for "newest last" input
    ids = list(dict.fromkeys(m.entity_id for m in eligible if m.at == latest.at))
    return ids, latest
