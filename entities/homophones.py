"""Chinese typed by its sound (DESIGN §8): a pinyin keyboard offers every character of a syllable, and a hurried
user picks the wrong one ("锦秀华庭" for 锦绣华庭, "王师付" for 王师傅, "德望" for 德旺). A word of the text that no name
part holds and everyday language hardly uses, sounding exactly like one registered word (pypinyin, tones dropped),
is read as that word; the resolver tries such a reading only when the text as typed names nothing.
Pure Python, no Django.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

__all__ = ["SoundIndex", "sound"]

_CJK_WORD = re.compile("^[\u3400-\u9fff]{2,4}$")
COMMON_WORD_FREQ = 200  # as entities/name_parts.rare_word: a word used this often is meant as typed


@lru_cache(maxsize=50_000)
def _char_sound(ch: str) -> str:
    from pypinyin import lazy_pinyin

    return lazy_pinyin(ch, errors="ignore")[0] if ch else ""


def sound(word: str) -> str:
    """The syllables of a Chinese word, tones dropped ("锦秀" and "锦绣": "jin xiu"); per character, memoised, so a
    registry of many thousands of names is read in well under a second."""
    return " ".join(_char_sound(ch) for ch in word)


class SoundIndex:
    """Sound → the one registered word (name part, alias part, type word) that has it, over one registry snapshot.
    A sound shared by two registered words reads as neither."""

    def __init__(self, keys: Iterable[str]):
        by_sound: dict[str, set[str]] = {}
        self._keys = set()
        for key in keys:
            if _CJK_WORD.match(key):
                self._keys.add(key)
                by_sound.setdefault(sound(key), set()).add(key)
        self._by_sound = {s: next(iter(ks)) for s, ks in by_sound.items() if len(ks) == 1}

    def readings(self, text: str) -> list[tuple[str, str]]:
        """(word as typed, registered word it sounds like) for the text's words read that way."""
        from entities.partial import quiet_jieba

        jieba = quiet_jieba()
        if not jieba.dt.initialized:
            jieba.dt.initialize()
        out = []
        for word in jieba.lcut(text):
            if not _CJK_WORD.match(word) or word in self._keys or jieba.dt.FREQ.get(word, 0) >= COMMON_WORD_FREQ:
                continue
            meant = self._by_sound.get(sound(word))
            if meant is not None and meant != word:
                out.append((word, meant))
        return out
