"""Find business entities named in free text (external ids, names, aliases).

Pure Python, no Django: the caller adapts its rows to `EntityRef`, builds one `EntityMatcher`
per registry snapshot and rebuilds it when `version` changes.

Matching runs on a normalised copy of the text (NFKC + case-folded, whitespace as spaces)
and maps offsets back, so `Match.start/end/surface` always refer to the caller's original text.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Iterable
from typing import TypeVar

import ahocorasick

from entities.partial import PartialIndex, type_cues, type_words
from entities.person_forms import person_forms
from entities.surface import (
    _OPTIONAL_SPACE,
    EntityRef,
    Match,
    NormalizedText,
    inside_token,
    is_word_char,
    normalize,
    normalize_key,
)
from entities.typenouns import kinds_of_type, works_here

__all__ = [
    "EntityMatcher",
    "EntityRef",
    "Match",
    "NormalizedText",
    "inside_token",
    "is_word_char",
    "leftmost_longest",
    "normalize",
    "normalize_key",
]


def _key_variants(surface: str) -> set[str]:
    key = normalize_key(surface)
    if not key:
        return set()
    return {key, _OPTIONAL_SPACE.sub("", key)}


# "form": a person's generated forms (王工, 老李), weaker than any registered surface.
_HOW_RANK = {"id": 0, "name": 1, "alias": 2, "form": 3}


class EntityMatcher:
    """Aho-Corasick automaton over external ids, names and aliases of an entity set."""

    version: str

    def __init__(self, entities: Iterable[EntityRef]):
        refs: dict[int, EntityRef] = {}
        for ref in entities:
            refs[ref.id] = ref
        self._refs = refs

        # key -> {entity_id: how}; one surface may name several entities (shared alias).
        index: dict[str, dict[int, str]] = {}
        by_type: dict[str, list[int]] = {}
        digest = hashlib.blake2b(digest_size=16)
        for eid in sorted(refs):
            ref = refs[eid]
            by_type.setdefault(ref.type, []).append(eid)
            digest.update(
                "\x1f".join((str(eid), ref.type, ref.external_id, ref.name, *ref.aliases)).encode()
                + b"\x1e"
            )
            forms = sorted(person_forms(ref.name, staff=works_here(ref.type))) if "person" in kinds_of_type(ref.type) else ()
            # "王工", "老李", "王晓": how a person is said (person_forms.py)
            named = (("id", (ref.external_id,)), ("name", (ref.name,)), ("alias", ref.aliases), ("form", forms))
            for how, surfaces in named:
                for surface in surfaces:
                    for key in _key_variants(surface):
                        slot = index.setdefault(key, {})
                        # Reachable twice: keep the strongest kind (id > name > alias).
                        if eid not in slot or _HOW_RANK[how] < _HOW_RANK[slot[eid]]:
                            slot[eid] = how
        self.version = digest.hexdigest()
        self._by_type = {t: tuple(ids) for t, ids in by_type.items()}
        self._name_filter_cache: dict[tuple[str, tuple[str, ...]], tuple[int, ...]] = {}
        self._partial = None  # entities.partial.PartialIndex, built on first use
        self._parts = None  # entities.part_index.PartIndex, built on first use
        self._attribute_index = None  # entities.part_index.AttributeIndex, built on first use
        # Set by the snapshot that built this matcher (entities/selectors.py): attribute dicts by entity
        # id, and the relations in force as adjacency (entity id → ((other id, type, direction), ...)).
        self.attributes: dict[int, dict] = {}
        self.graph: dict[int, tuple[tuple[int, str, str], ...]] = {}
        # Ended relations between active entities ((other id, type, direction, valid_to), newest end first),
        # and when the relations in force next change (epoch seconds; selectors.relation_graph).
        self.history: dict[int, tuple] = {}
        self.changes_at: float | None = None
        self._type_words: dict[str, str] | None = None
        self._kinds: dict[str, tuple[str, ...]] | None = None
        self._known: tuple[str, frozenset[str]] | None = None

        self._automaton: ahocorasick.Automaton | None = None
        if index:
            automaton = ahocorasick.Automaton()
            for key, slot in index.items():
                automaton.add_word(key, (len(key), tuple(sorted(slot.items()))))
            automaton.make_automaton()
            self._automaton = automaton

    def __len__(self) -> int:
        return len(self._refs)

    def get(self, entity_id: int) -> EntityRef | None:
        return self._refs.get(entity_id)

    def find(
        self,
        text: str,
        *,
        keep: Callable[[set[int]], Collection[int]] | None = None,
    ) -> list[Match]:
        """Leftmost-longest, non-overlapping matches; one `Match` per entity behind a surface.

        `keep` receives every entity id that occurs and returns the ids that may be seen (one
        batched call). It runs BEFORE overlaps are resolved, so an invisible entity can neither
        be returned nor shadow a visible shorter match: the result is the same as if the hidden
        entities were not registered at all.
        """
        if self._automaton is None or not text:
            return []
        norm = normalize(text)
        s = norm.text
        hits: list[tuple[int, int, tuple[tuple[int, str], ...]]] = []
        for last, (length, entries) in self._automaton.iter(s):
            start, end = last - length + 1, last + 1
            if inside_token(s, start, end):
                continue
            hits.append((start, end, entries))
        if not hits:
            return []
        if keep is not None:
            visible = set(keep({eid for _, _, entries in hits for eid, _ in entries}))
            hits = [
                (start, end, kept)
                for start, end, entries in hits
                if (kept := tuple(e for e in entries if e[0] in visible))
            ]
        out: list[Match] = []
        for start, end, entries in leftmost_longest(hits):
            o_start, o_end = norm.original_span(start, end)
            surface = text[o_start:o_end]
            # "老张" registered as one person's alias names that person, not every 张 whose form it also is.
            if any(how != "form" for _eid, how in entries):
                entries = tuple(e for e in entries if e[1] != "form")
            out.extend(Match(eid, o_start, o_end, surface, "alias" if how == "form" else how) for eid, how in entries)
        return out

    def partial(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """Entities `text` names only partially ("那座烘干塔" → 烘干一号塔, 烘干二号塔), with the spans."""
        return self._partial_index().find(text)

    def registry_type_cues(self, text: str) -> list[tuple[str, str, int, int]]:
        """Registered entity types named in `text` ("which route ..."), and the labels every name of a type
        carries ("工单" of 工单0231 / 工单0238): (word, type, start, end)."""
        if self._type_words is None:
            self._type_words = type_words(self._by_type)
        return type_cues(self._type_words, text) + self._part_index().type_cues(text)

    def name_part_candidates(self, text: str) -> tuple[list[int], list[str]]:
        """Entities `text` names by parts of their names ("那台喷雾机" → 3号喷杆喷雾机), with the parts found."""
        return self._part_index().best(text)

    def knows(self, word: str) -> bool:
        """`word` may occur in a name, an alias, a string attribute value or a type name of this registry.
        Read by character pairs: every pair of the word occurs in some such text (exact for two characters;
        for longer words a pair may come from different texts, which errs towards "known", i.e. towards the
        other rules deciding). The lexicon's words (entities/typewords.py) are its caller's to add."""
        if self._known is None:
            texts = [normalize_key(s) for ref in self._refs.values() for s in (ref.name, *ref.aliases)]
            texts += [normalize_key(v) for attrs in self.attributes.values() for v in (attrs or {}).values()
                      if isinstance(v, str)]
            texts += [normalize_key(t) for t in self._by_type]
            self._known = frozenset(t[i:i + 2] for t in texts for i in range(len(t) - 1))
        key = normalize_key(word)
        return len(key) >= 2 and all(key[i:i + 2] in self._known for i in range(len(key) - 1))

    def counted(self, text: str) -> list[tuple[frozenset[str], int]]:
        """The numbers of `text` that count registered words, with those words ("7号泊位" → ({泊位}, 7))."""
        return self._part_index().counted(text)

    def numbered(self, number: int) -> frozenset[int]:
        """The entities a name or alias of which carries `number`."""
        return self._part_index().numbered(number)

    def carries_number(self, entity_id: int, words: Iterable[str], number: int) -> bool | None:
        """Whether a name or value of the entity holding one of `words` carries `number`; None when none holds them."""
        return self._part_index().carries(entity_id, words, number)

    def part_hits(self, text: str) -> list[tuple[int, str, tuple[int, ...]]]:
        """(start in the normalised text, part, entity ids) for each part of a name, alias or attribute value
        named in `text`."""
        return self._part_index().hits(text)

    def part_holders(self, text: str, limit: int) -> set[int]:
        """Entities with a part of a name, an alias or an attribute value (or a learnt type label) in `text`."""
        return self._part_index().holders(text, limit)

    def value_holders(self, part: str) -> tuple[int, ...]:
        return self._part_index().value_holders(part)

    def name_heads(self) -> frozenset[str]:
        """The last characters of the registry's names of things ("机", "间"): how a name for a thing ends here."""
        return self._part_index().name_heads

    def is_name_part(self, part: str) -> bool:
        """`part` is a part of some name or alias, not only of attribute values."""
        return part in self._part_index().name_keys

    def attribute_hits(self, text: str) -> list[tuple[str, tuple[int, ...]]]:
        """(value, entity ids) for each attribute value named in `text` ("VMS-V300", "北场")."""
        if self._attribute_index is None:
            from entities.part_index import AttributeIndex

            self._attribute_index = AttributeIndex(self.attributes)
        return self._attribute_index.find(text)

    def neighbours(self, entity_id: int) -> tuple[tuple[int, str, str], ...]:
        return self.graph.get(entity_id, ())

    def past_neighbours(self, entity_id: int) -> tuple[tuple[int, str, str, object], ...]:
        return self.history.get(entity_id, ())

    def misread(self, text: str) -> list[tuple[str, str]]:
        """(word as typed, registered word meant) for the text's words typed wrong: a pinyin keyboard's wrong
        character, a Latin word one edit off (entities/typos.py)."""
        return self._part_index().typo_index().readings(text)

    def _part_index(self):
        if self._parts is None:
            from entities.part_index import PartIndex

            self._parts = PartIndex(self._refs.values(), self.attributes)
        return self._parts

    def _partial_index(self):
        if self._partial is None:
            self._partial = PartialIndex(self._refs.values())
        return self._partial

    def types(self) -> frozenset[str]:
        return frozenset(self._by_type)

    def types_of_kind(self, kind: str) -> tuple[str, ...]:
        """The registered types a generic noun's kind stands for ("车" → `vehicle`, `truck`; entities/typenouns.py)."""
        if self._kinds is None:
            from entities.typenouns import types_by_kind

            self._kinds = types_by_kind(self._by_type)
        return self._kinds.get(kind, ())

    def ids_of_type(self, type_: str) -> tuple[int, ...]:
        return self._by_type.get(type_, ())

    def ids_named_like(self, type_: str, words: Iterable[str]) -> tuple[int, ...]:
        """Entities of `type_` whose name or an alias contains one of `words` (normalised).

        Memoised per matcher: category lookups ("那台收割机") repeat, the registry does not change
        under a given matcher.
        """
        keys = tuple(sorted({normalize_key(w) for w in words} - {""}))
        cache_key = (type_, keys)
        found = self._name_filter_cache.get(cache_key)
        if found is None:
            found = tuple(
                eid for eid in self.ids_of_type(type_) if name_contains_any(self._refs[eid], keys)
            )
            self._name_filter_cache[cache_key] = found
        return found


_Hit = TypeVar("_Hit", bound=tuple)


def leftmost_longest(hits: Iterable[_Hit]) -> list[_Hit]:
    """Non-overlapping (start, end, ...) hits, taking the earliest start, then the longest."""
    out: list[_Hit] = []
    taken = 0
    for hit in sorted(hits, key=lambda h: (h[0], -h[1])):
        if hit[0] >= taken:
            out.append(hit)
            taken = hit[1]
    return out


def name_contains_any(ref: EntityRef, normalized_words: Iterable[str]) -> bool:
    names = [normalize_key(n) for n in (ref.name, *ref.aliases)]
    return any(w in n for w in normalized_words for n in names)
