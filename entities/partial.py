"""Partial names: what a mention of a kind of entity looks like, learnt from the registry itself.

People name a registered entity by what it is, without the part that tells it from its siblings:
"那座烘干塔" for 烘干一号塔 / 烘干二号塔, "冷链车" for 冷链11号车, "烘干机" for 1号烘干机. The words are
not contiguous in the names, so substring search on names misses them, and a fixed table of
category words cannot know every business's vocabulary.

Each name and alias is segmented with jieba (part of speech); the qualifier tokens — numerals
("11", "一号"), codes and plate prefixes ("浙B"), punctuation — and the measure "号" after them are
removed. What remains, joined, is the surface's *skeleton* ("冷链11号车" → "冷链车", "烘干一号塔" →
"烘干塔"). A skeleton found in the text is a partial mention of every entity that has it; the
longest skeleton found decides, so "冷链车" (vehicles) wins over "冷链" (a modifier shared with a route).
"""
from __future__ import annotations

from collections.abc import Iterable

import ahocorasick

from entities.matcher import EntityRef, inside_token, normalize, normalize_key

MIN_SKELETON_CHARS = 2  # one character ("车", "塔") is a type word at most, never a name
QUALIFIER_FLAGS = {"m", "eng", "x"}  # numerals, Latin/digit codes, punctuation
_MEASURE = "号"


def _posseg():
    import jieba
    import jieba.posseg

    jieba.setLogLevel(60)
    return jieba.posseg


def skeleton(surface: str) -> str:
    """The surface without its qualifiers; "" when nothing generic is left."""
    tokens = [(w, f) for w, f in _posseg().cut(surface) if w.strip()]
    kept: list[str] = []
    after_qualifier = False
    for i, (word, flag) in enumerate(tokens):
        qualifier = flag in QUALIFIER_FLAGS or word.isdigit()
        # A single character glued to a code is part of it ("浙" in 浙B·冷链11, a plate prefix).
        if not qualifier and len(word) == 1 and i + 1 < len(tokens) and tokens[i + 1][1] == "eng":
            qualifier = True
        if qualifier:
            after_qualifier = True
            continue
        if after_qualifier and word.startswith(_MEASURE):
            word = word[len(_MEASURE):]  # "号车" after "11": the measure belongs to the number
        after_qualifier = False
        if word:
            kept.append(word)
    return normalize_key("".join(kept))


def _qualified(s: str, start: int, end: int) -> bool:
    """Attached to a number or code ("3号拖拉机", "烘干机2"): the text names one specific entity, which
    is not registered or not visible; answering with its siblings would be a silent wrong guess."""
    before = s[start - 1] if start > 0 else ""
    after = s[end] if end < len(s) else ""
    return before.isdigit() or before in (_MEASURE, "#") or after.isdigit() or after in (_MEASURE, "#")


def type_words(types: Iterable[str]) -> dict[str, str]:
    """Registered types as their own type words ("route", "routes", "cold store" for cold_store)."""
    words: dict[str, str] = {}
    for type_ in types:
        word = normalize_key(type_.replace("_", " ").replace("-", " "))
        if len(word) >= 3:
            for form in (word, word + "s"):
                words.setdefault(form, type_)
    return words


class PartialIndex:
    """Skeleton → entity ids over one registry snapshot, searched with one automaton."""

    def __init__(self, refs: Iterable[EntityRef]):
        refs = list(refs)
        self.type_words = type_words({ref.type for ref in refs})
        by_skeleton: dict[str, set[int]] = {}
        for ref in refs:
            for surface in (ref.name, *ref.aliases):
                key = skeleton(surface)
                if len(key) >= MIN_SKELETON_CHARS:
                    by_skeleton.setdefault(key, set()).add(ref.id)
        self._automaton = None
        if by_skeleton:
            automaton = ahocorasick.Automaton()
            for key, ids in by_skeleton.items():
                automaton.add_word(key, (len(key), tuple(sorted(ids))))
            automaton.make_automaton()
            self._automaton = automaton

    def type_cues(self, text: str) -> list[tuple[str, str, int, int]]:
        """(word, type, start, end) for each registered type named as a whole word in `text`."""
        norm = normalize(text)
        out = []
        for word, type_ in self.type_words.items():
            start = norm.text.find(word)
            while start >= 0:
                end = start + len(word)
                if not inside_token(norm.text, start, end):
                    out.append((word, type_, *norm.original_span(start, end)))
                start = norm.text.find(word, end)
        return out

    def find(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """(entity ids of the longest skeletons found, their spans in the caller's text)."""
        if self._automaton is None or not text:
            return [], []
        norm = normalize(text)
        hits = [(last - length + 1, last + 1, ids) for last, (length, ids) in self._automaton.iter(norm.text)
                if not inside_token(norm.text, last - length + 1, last + 1)
                and not _qualified(norm.text, last - length + 1, last + 1)]
        if not hits:
            return [], []
        longest = max(end - start for start, end, _ in hits)
        ids: list[int] = []
        spans = []
        for start, end, found in hits:
            if end - start == longest:
                ids.extend(i for i in found if i not in ids)
                spans.append(norm.original_span(start, end))
        return sorted(ids), spans
