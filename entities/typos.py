"""Words typed wrong (DESIGN §8). Chinese is typed by its sound: a pinyin keyboard offers every character of a
syllable, and a hurried user picks the wrong one ("锦秀华庭" for 锦绣华庭, "王师付" for 王师傅, "德望" for 德旺). A word of
the text that no name part holds and everyday language hardly uses, sounding exactly like one registered word
(pypinyin, tones dropped), is read as that word. A long Latin word no name holds, one edit (Damerau-Levenshtein,
rapidfuzz) from exactly one long registered word, is read as that word ("Whittaker" for Whitaker). The resolver tries
such readings only when the text as typed names nothing.
Pure Python, no Django.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

__all__ = ["TypoIndex", "sound"]

_CJK_WORD = re.compile("^[\u3400-\u9fff]{2,4}$")
_LATIN_WORD = re.compile("[a-z]{%d,}" % 6)  # shorter words are one edit from too many others ("case" / "cast")


@lru_cache(maxsize=50_000)
def _char_sound(ch: str) -> str:
    from pypinyin import lazy_pinyin

    return lazy_pinyin(ch, errors="ignore")[0] if ch else ""


def sound(word: str) -> str:
    """The syllables of a Chinese word, tones dropped ("锦秀" and "锦绣": "jin xiu"); per character, memoised, so a
    registry of many thousands of names is read in well under a second."""
    return " ".join(_char_sound(ch) for ch in word)


class TypoIndex:
    """The registered words (name parts, alias parts, type words) of one registry snapshot, by sound for Chinese (a
    sound shared by two registered words reads as neither) and as spelt for Latin."""

    def __init__(self, keys: Iterable[str]):
        by_sound: dict[str, set[str]] = {}
        self._keys = set()
        for key in keys:
            if _CJK_WORD.match(key):
                self._keys.add(key)
                by_sound.setdefault(sound(key), set()).add(key)
        self._by_sound = {s: next(iter(ks)) for s, ks in by_sound.items() if len(ks) == 1}
        self._latin_set = {key for key in keys if _LATIN_WORD.fullmatch(key)}
        self._latin = sorted(self._latin_set)

    def readings(self, text: str) -> list[tuple[str, str]]:
        """(word as typed, registered word it sounds like) for the text's words read that way."""
        from entities.name_parts import RARE_WORD_FREQ, word_frequency
        from entities.partial import quiet_jieba

        out = []
        for word in quiet_jieba().lcut(text):
            # A word used this often (as name_parts.rare_word reads it) is meant as typed.
            if not _CJK_WORD.match(word) or word in self._keys or (word_frequency(word) or 0) >= RARE_WORD_FREQ:
                continue
            meant = self._by_sound.get(sound(word))
            if meant is not None and meant != word:
                out.append((word, meant))
        return out + self._spellings(text)

    def _spellings(self, text: str) -> list[tuple[str, str]]:
        if not self._latin:
            return []
        from rapidfuzz import process
        from rapidfuzz.distance import DamerauLevenshtein

        from common.text.segment import EN_STOPWORDS

        out = []
        for word in dict.fromkeys(_LATIN_WORD.findall(text.casefold())):
            if word in self._latin_set or word in EN_STOPWORDS:
                continue
            near = process.extract(word, self._latin, scorer=DamerauLevenshtein.distance, score_cutoff=1, limit=2)
            if len(near) == 1:
                out.append((word, near[0][0]))
        return out
