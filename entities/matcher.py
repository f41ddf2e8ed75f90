"""Find business entities named in free text (external ids, names, aliases).

Pure Python, no Django: the caller adapts its rows to `EntityRef`, builds one `EntityMatcher`
per registry snapshot and rebuilds it when `version` changes.

Matching runs on a normalised copy of the text (NFKC + case-folded, whitespace as spaces)
and maps offsets back, so `Match.start/end/surface` always refer to the caller's original text.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import TypeVar

import ahocorasick

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


@dataclass(frozen=True)
class EntityRef:
    id: int
    type: str
    external_id: str
    name: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Match:
    entity_id: int
    start: int
    end: int
    surface: str
    how: str  # "id" | "name" | "alias"


# Scripts written without spaces between words: a surface may start or end anywhere next to
# them. Everything else that is alphanumeric (Latin, digits, Cyrillic, ...) forms tokens, and a
# surface must not start or end inside such a token ("S780" is not in "S7800").
_NO_SPACE_SCRIPTS = (
    "\u2e80-\u2fff"  # CJK radicals, Kangxi
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3100-\u31ff"  # Bopomofo, Hangul compatibility jamo, Katakana ext.
    "\u3400-\u4dbf"  # CJK ext. A
    "\u4e00-\u9fff"  # CJK unified
    "\uac00-\ud7af"  # Hangul syllables (particles attach to nouns without a space)
    "\uf900-\ufaff"  # CJK compatibility
    "\U00020000-\U0003ffff"  # CJK ext. B and later
)
# `\w` minus the scripts above; also used by typewords.py so both agree on what a token is.
WORD_CHAR_CLASS = f"[^\\W{_NO_SPACE_SCRIPTS}]"
_WORD_CHAR = re.compile(WORD_CHAR_CLASS)
# A hyphen between two token characters joins them: "A-1001" is not inside "A-1001-2".
_JOINERS = frozenset("-")
# Whitespace other than a plain space; mapped 1:1 to " " so a line break separates like a space.
_OTHER_SPACE = re.compile(r"[^\S ]")
# Full-width ASCII and the ideographic space: NFKC maps each to one ASCII character.
_FULL_WIDTH = re.compile("[\uff01-\uff5e\u3000]")
# Spaces next to a no-space-script character are optional in writing ("S780 联合收割机").
_OPTIONAL_SPACE = re.compile(f"(?<=[{_NO_SPACE_SCRIPTS}]) | (?=[{_NO_SPACE_SCRIPTS}])")


def is_word_char(ch: str) -> bool:
    return _WORD_CHAR.match(ch) is not None


@dataclass(frozen=True)
class NormalizedText:
    """A normalised copy of `original` that can map its offsets back."""

    original: str
    text: str
    # For each char of `text`: the original [start, end) it came from. None = identity.
    _starts: tuple[int, ...] | None = None
    _ends: tuple[int, ...] | None = None

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        if self._starts is None or self._ends is None:
            return start, end
        return self._starts[start], self._ends[end - 1]


def normalize(text: str) -> NormalizedText:
    """NFKC + case-fold, every whitespace character a plain space.

    Whitespace runs are not collapsed, so that everyday text keeps its offsets.
    """
    nfkc = text
    if not unicodedata.is_normalized("NFKC", nfkc):
        # Chinese text is usually not NFKC only for its full-width punctuation ("，？（）"):
        # narrowing those one for one is 5x cheaper than a full NFKC pass.
        nfkc = _FULL_WIDTH.sub(_narrow, text)
        if not unicodedata.is_normalized("NFKC", nfkc):
            # NFKD not longer than the text means no character expanded; NFKC not shorter means
            # nothing composed: then offsets are unchanged.
            nfkc = unicodedata.normalize("NFKC", text)
            if len(nfkc) != len(text) or len(unicodedata.normalize("NFKD", text)) != len(text):
                return _normalize_slow(text)
    folded = nfkc.casefold()
    if len(folded) != len(text):  # "ß" -> "ss"
        return _normalize_slow(text)
    if _OTHER_SPACE.search(folded):
        folded = _OTHER_SPACE.sub(" ", folded)
    return NormalizedText(text, folded)


def _narrow(m: re.Match[str]) -> str:
    return chr(ord(m[0]) - 0xFEE0) if m[0] != "\u3000" else " "


def _normalize_slow(text: str) -> NormalizedText:
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    i, n = 0, len(text)
    while i < n:
        # Normalise a base character together with its combining marks so "e\u0301" composes
        # to "é" exactly as it would in a whole-string NFKC.
        j = i + 1
        while j < n and unicodedata.combining(text[j]):
            j += 1
        for ch in unicodedata.normalize("NFKC", text[i:j]).casefold():
            out.append(" " if ch.isspace() else ch)
            starts.append(i)
            ends.append(j)
        i = j
    return NormalizedText(text, "".join(out), tuple(starts), tuple(ends))


def normalize_key(surface: str) -> str:
    """The form a surface is stored under (and compared in)."""
    return " ".join(normalize(surface).text.split())


def _key_variants(surface: str) -> set[str]:
    key = normalize_key(surface)
    if not key:
        return set()
    return {key, _OPTIONAL_SPACE.sub("", key)}


_HOW_RANK = {"id": 0, "name": 1, "alias": 2}


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
            named = (("id", (ref.external_id,)), ("name", (ref.name,)), ("alias", ref.aliases))
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
        self._type_words: dict[str, str] | None = None

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
            out.extend(Match(eid, o_start, o_end, surface, how) for eid, how in entries)
        return out

    def partial(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """Entities `text` names only partially ("那座烘干塔" → 烘干一号塔, 烘干二号塔), with the spans."""
        return self._partial_index().find(text)

    def registry_type_cues(self, text: str) -> list[tuple[str, str, int, int]]:
        """Registered entity types named in `text` ("which route ..."): (word, type, start, end)."""
        if self._type_words is None:
            from entities.partial import type_words

            self._type_words = type_words(self._by_type)
        from entities.partial import type_cues

        return type_cues(self._type_words, text)

    def _partial_index(self):
        if self._partial is None:
            from entities.partial import PartialIndex

            self._partial = PartialIndex(self._refs.values())
        return self._partial

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


def inside_token(s: str, start: int, end: int) -> bool:
    """True when a hit starts or ends in the middle of a Latin/digit token."""
    if start > 0 and is_word_char(s[start]) and _joined(s, start - 1, -1):
        return True
    if end < len(s) and is_word_char(s[end - 1]) and _joined(s, end, 1):
        return True
    return False


def _joined(s: str, i: int, step: int) -> bool:
    if is_word_char(s[i]):
        return True
    j = i + step
    return s[i] in _JOINERS and 0 <= j < len(s) and is_word_char(s[j])
