"""What the type and category words of a text ask of a candidate (entities/typewords.py finds the words):
the types it must be of and, for a category word ("收割机" among assets), the words its name must hold.
Pure; the resolver's rules (entities/resolution_rules.py) build one from the text's cues.
"""
from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from entities.matcher import EntityMatcher, EntityRef, Match, name_contains_any, normalize_key
from entities.typewords import Cue, category_words

__all__ = ["TypeConstraint", "covered", "type_evidence"]


@dataclass(frozen=True)
class TypeConstraint:
    types: frozenset[str]  # empty = no type word, anything goes
    # type -> normalised category words; a type listed here also filters by name.
    names: Mapping[str, tuple[str, ...]]

    @classmethod
    def from_cues(cls, cues: Iterable[Cue]) -> TypeConstraint:
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

    def iter_ids(self, matcher: EntityMatcher) -> Iterator[int]:
        """Entities of the types (and categories), ascending id, without building the list:
        each per-type tuple is ascending already, so they merge lazily."""
        per_type = []
        for t in sorted(self.types):
            words = self.names.get(t)
            per_type.append(matcher.ids_named_like(t, words) if words else matcher.ids_of_type(t))
        if len(per_type) == 1:
            return iter(per_type[0])
        return _unique_sorted(heapq.merge(*per_type))


def type_evidence(type_cues: list[Cue], constraint: TypeConstraint) -> list[dict]:
    if not type_cues:
        return []
    return [{"rule": "type_words", "words": [c.word for c in type_cues], "types": sorted(constraint.types),
             "categories": sorted({c.category for c in type_cues if c.category})}]


def covered(cue: Cue, matches: Sequence[Match]) -> bool:
    return any(m.start <= cue.start and cue.end <= m.end for m in matches)


def _unique_sorted(ids: Iterable[int]) -> Iterator[int]:
    last = None
    for i in ids:
        if i != last:
            yield i
            last = i
