"""Partial names: what a mention of a kind of entity looks like, learnt from the registry itself.

People name a registered entity by what it is, without the part that tells it from its siblings:
"那座烘干塔" for 烘干一号塔 / 烘干二号塔, "冷链车" for 冷链11号车, "烘干机" for 1号烘干机. The words are
not contiguous in the names, so substring search on names misses them, and a fixed table of
category words cannot know every business's vocabulary.

From each name and alias the qualifiers — numerals with their measure ("11号", "一号"), Latin/digit
codes and plate prefixes ("浙B·"), joiners — are removed; what remains, joined, is the surface's
*skeleton* ("冷链11号车" → "冷链车", "烘干一号塔" → "烘干塔"). A skeleton found in the text, starting and
ending on jieba word boundaries of the text, is a partial mention of every entity that has it; the
longest skeleton found decides, so "冷链车" (vehicles) wins over "冷链" (a modifier shared with a route).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

import ahocorasick

from entities.surface import EntityRef, inside_token, normalize, normalize_key

MIN_SKELETON_CHARS = 2  # one character ("车", "塔") is a type word at most, never a name
MIN_LATIN_SKELETON_CHARS = 3  # "wo" of WO-2026-0012 is no word
_CJK = "\u3400-\u9fff"
# Qualifiers, on the normalised surface: a plate/code prefix (one CJK character glued to a Latin code,
# "浙b·", "浙b12345"; not a letter that ends or starts a word, "治疗台a", "x光机"), Latin/digit codes with
# their joiners ("s780", "11", "wo-2026-0012"), and numerals with their measure ("11号", "一号", "十二号").
_QUALIFIER = re.compile(
    f"[{_CJK}](?=[a-z]+[0-9·\\-])[a-z]+[·\\-]?"
    "|[a-z]*[0-9][a-z0-9]*(?:[·\\-#][a-z0-9]+)*号?"
    "|[零〇一二三四五六七八九十百千两]+号"
    "|[·\\-#]")


_CODE_AFTER = re.compile(r"#?[A-Za-z]{0,3}[0-9][A-Za-z0-9\-]*\b")
# A Chinese ordinal glued after a word ("科目一的", "科目三考完了", "阶段二"): it names one specific thing, as "科目1"
# or "1号" would. A numeral before a measure word or in a compound counts nothing ("二场地", "三台", "两天"), and
# "一" only before "的" / "号" or a non-Chinese character ("一下", "一直", "一开就跳闸" are adverbial).
_MEASURES = "辆台家个张位间部款条只所座栋件份单艘套批把块根架头场次天年月周日种项遍趟回期楼层区届级类点些样"
_ORDINAL_AFTER = re.compile(f"一(?:(?![\u3400-\u9fff])|(?=[的号]))|[二三四五六七八九十][一二三四五六七八九十]{{0,2}}(?![{_MEASURES}])")


@lru_cache(maxsize=200_000)
def skeleton(surface: str) -> str:
    """The surface without its qualifiers; "" when nothing generic is left. Regular expressions, not a
    segmenter: a registry of 50k entities is skeletonised in well under a second when it changes."""
    return " ".join(_QUALIFIER.sub(" ", normalize_key(surface)).split()).replace(" ", "") \
        if _has_cjk(surface) else " ".join(_QUALIFIER.sub(" ", normalize_key(surface)).split())


def _has_cjk(text: str) -> bool:
    return any("\u3400" <= ch <= "\u9fff" for ch in text)


@lru_cache(maxsize=1)
def quiet_jieba():
    """jieba, its banners silenced once: `setLogLevel` clears every logger's cache in the process (thousands
    of loggers in the service: ~1 ms), so it must not run per call."""
    import jieba

    jieba.setLogLevel(60)
    return jieba


def word_boundaries(text: str) -> set[int]:
    """Word boundaries of the text by jieba: a partial name must start and end on them, so the modifier
    "冷链" is not a mention inside "冷链车的" (jieba: 冷 / 链车 / 的)."""
    jieba = quiet_jieba()
    out, at = {0}, 0
    for word in jieba.lcut(text):
        at += len(word)
        out.add(at)
    return out


def qualified_span(s: str, start: int, end: int) -> bool:
    """Attached to a number or code ("3号拖拉机", "烘干机2"): the text names one specific entity, which
    is not registered or not visible; answering with its siblings would be a silent wrong guess."""
    before = s[start - 1] if start > 0 else ""
    after = s[end] if end < len(s) else ""
    if after == " " and _CODE_AFTER.match(s, end + 1):
        return True  # "Rack B05", "MSKU 204160-2", "web frontend 02": a code after a space names one as well
    if after in ("·", "-") and end + 1 < len(s) and (s[end + 1].isalnum()):
        return True  # "沪D·冷18": a plate or code prefix joined to the rest of one specific code
    return before.isdigit() or before in ("号", "#") or after.isdigit() or after in ("号", "#") \
        or ordinal_after(s, end)


def ordinal_after(s: str, end: int) -> bool:
    """A Chinese ordinal numeral standing as a word right after `end` (see _ORDINAL_AFTER)."""
    return _ORDINAL_AFTER.match(s, end) is not None


def type_words(types: Iterable[str]) -> dict[str, str]:
    """Registered types as their own type words ("route", "routes", "cold store" for cold_store)."""
    words: dict[str, str] = {}
    for type_ in types:
        word = normalize_key(type_.replace("_", " ").replace("-", " "))
        if len(word) >= 3:
            for form in (word, word + "s"):
                words.setdefault(form, type_)
    return words


def type_cues(words: dict[str, str], text: str) -> list[tuple[str, str, int, int]]:
    """(word, type, start, end) for each registered type (see type_words) named as a whole word in `text`."""
    norm = normalize(text)
    out = []
    for word, type_ in words.items():
        start = norm.text.find(word)
        while start >= 0:
            end = start + len(word)
            if not inside_token(norm.text, start, end):
                out.append((word, type_, *norm.original_span(start, end)))
            start = norm.text.find(word, end)
    return out


class PartialIndex:
    """Skeleton → entity ids over one registry snapshot, searched with one automaton."""

    def __init__(self, refs: Iterable[EntityRef]):
        by_skeleton: dict[str, set[int]] = {}
        for ref in refs:
            for surface in (ref.name, *ref.aliases):
                key = skeleton(surface)
                if len(key) >= (MIN_SKELETON_CHARS if _has_cjk(key) else MIN_LATIN_SKELETON_CHARS):
                    by_skeleton.setdefault(key, set()).add(ref.id)
        self._automaton = None
        if by_skeleton:
            automaton = ahocorasick.Automaton()
            for key, ids in by_skeleton.items():
                automaton.add_word(key, (len(key), tuple(sorted(ids))))
            automaton.make_automaton()
            self._automaton = automaton

    def find(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """(entity ids of the longest skeletons found, their spans in the caller's text)."""
        if self._automaton is None or not text:
            return [], []
        norm = normalize(text)
        hits = [(last - length + 1, last + 1, ids) for last, (length, ids) in self._automaton.iter(norm.text)
                if not inside_token(norm.text, last - length + 1, last + 1)
                and not qualified_span(norm.text, last - length + 1, last + 1)]
        if hits:
            cuts = word_boundaries(norm.text)
            hits = [h for h in hits if h[0] in cuts and h[1] in cuts]
        if not hits:
            return [], []
        longest = max(end - start for start, end, _ in hits)
        best = [(start, end, found) for start, end, found in hits if end - start == longest]
        spans = [norm.original_span(start, end) for start, end, _ in best]
        if len({found for _, _, found in best}) == 1:
            return list(best[0][2]), spans  # stored sorted: no set for thousands of siblings
        return sorted({i for _, _, found in best for i in found}), spans
