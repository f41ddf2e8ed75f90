"""The parts one registered name is said by (DESIGN §8): "那台喷雾机" for 3号喷杆喷雾机, "5号拖拉机" for 5号轮式拖拉机,
"四色机" for 海德堡四色胶印机. Each name and alias is segmented (jieba for Chinese, words for Latin), numerals with
their measure kept whole ("5号"), codes whole. entities/part_index.py indexes these parts over the registry.
Pure Python, no Django.
"""
from __future__ import annotations

import re
from functools import lru_cache

from common.text import EN_STOPWORDS
from entities.partial import skeleton
from entities.surface import normalize_key

__all__ = ["CJK", "CODE", "abbreviations", "initialism", "is_qualifier", "name_parts", "rare_word", "unknown_words",
           "word_frequency"]

MIN_PART_CHARS = 2  # one character ("车", "店") names a kind at most, never an entity
MIN_LATIN_PART_CHARS = 3
MIN_SERIAL_DIGITS = 5  # a number this long names what carries it; a shorter one ("02", "2023") only qualifies
_NUMBERED = re.compile(r"^(?:[0-9]+|[零〇一二三四五六七八九十百千两]+)号$")
CODE = re.compile(r"[a-z0-9]+(?:[\-·./#][a-z0-9]+)+|[a-z]*[0-9][a-z0-9]*")
CJK = re.compile("[\u3400-\u9fff]")
_SEPARATORS = re.compile(r"[\s·\-_/#,，、()（）]+")
_BUILDING_MEASURES = ("号楼", "栋", "幢")
_BUILDING = re.compile(r"^([0-9]+|[零〇一二三四五六七八九十百两]+)(?:号楼|栋|幢)$")


def _jieba():
    from entities.partial import quiet_jieba

    return quiet_jieba()


@lru_cache(maxsize=400_000)
def name_parts(surface: str) -> frozenset[str]:
    """The parts of one name: codes and numbered qualifiers whole, Chinese runs by jieba, Latin words.
    Memoised: a registry change rebuilds the index, and all but the changed names are read again."""
    key = normalize_key(surface)
    parts: set[str] = set()
    for code in CODE.findall(key):
        if len(code) >= MIN_PART_CHARS:
            parts.add(code)
        # The number groups of a code: a long one is a serial people say alone ("container 204135" for MSKU
        # 204135-0), a short one tells siblings apart ("web frontend 02"; a qualifier, see is_qualifier).
        parts.update(g for g in re.findall(r"[0-9]+", code) if len(g) >= 2 and g != code)
    words = _jieba().lcut(key)
    merged: list[str] = []
    for word in words:
        # jieba splits "5号" into "5" / "号": a numbered qualifier is one part.
        after_number = merged and re.fullmatch(r"[0-9零〇一二三四五六七八九十百千两]+", merged[-1])
        if word == "号" and after_number:
            merged[-1] += "号"
        else:
            if word.startswith("号") and after_number:  # "3" / "号楼": the building's number is a qualifier too
                parts.add(merged[-1] + "号")
                if len(word) == 2 and CJK.match(word[1]):
                    parts.add(merged[-1] + word)  # and said with its character: "2号库" of 航材2号库
            merged.append(word)
    # A numbered qualifier with the one character after it is what people say alone ("3号仓" of 城北物流园3号仓).
    parts.update(left + right for left, right in zip(merged, merged[1:])
                 if _NUMBERED.match(left) and len(right) == 1 and CJK.match(right))
    # A building's number is said with any of its measure words: "5栋" and "5幢" are 5号楼 (a closed class).
    parts.update(f"{m.group(1)}{measure}" for part in list(parts) if (m := _BUILDING.match(part))
                 for measure in _BUILDING_MEASURES)
    words = [w for w in (_SEPARATORS.sub("", w) for w in merged) if w]
    # A one-character word is a morpheme of its neighbour, not a word of its own: "治疗台" of 治疗/台, "化学楼",
    # a glued letter ("x光机", "治疗台a": the letter tells 治疗台A from 治疗台B). Never across a separator ("浙A·保温").
    for left, right in zip(merged, merged[1:]):
        if (len(left) == 1 or len(right) == 1) and CJK.search(left + right) and not _SEPARATORS.search(left + right) \
                and not any(ch.isdigit() for ch in left + right):
            parts.add(left + right)
    for word in words:
        if CJK.search(word):
            if len(word) >= MIN_PART_CHARS or _NUMBERED.match(word):
                parts.add(word)
        elif len(word) >= MIN_LATIN_PART_CHARS and not word.isdigit() and word not in EN_STOPWORDS:
            # "the" of The Winter's Tale is in every English sentence: a function word names nothing.
            parts.add(word)
    return frozenset(parts)


def initialism(surface: str) -> str | None:
    """An English name of several words and a number said by its initials with the number ("FC1" for Flow Cytometer
    1, "WL2" for Wet Lab 2), as staff write it on the instrument; None for other names."""
    latin = re.fullmatch(r"((?:[a-z][a-z'-]* ){2,4})([0-9]{1,3})", normalize_key(surface))
    if not latin:
        return None
    initials = "".join(w[0] for w in latin.group(1).split() if w not in EN_STOPWORDS)
    return initials + latin.group(2) if len(initials) >= 2 else None


RARE_WORD_FREQ = 200  # jieba's dictionary counts over ~60M words: below this a word is a name, not everyday speech


def rare_word(part: str) -> bool:
    """A Chinese name part of two characters that everyday language hardly uses ("朗逸", "柯基", "捷达"; not "下午",
    "空调", "电池"): said alone, it names what carries it, as a longer part does. jieba's dictionary frequency is the
    measure of "everyday"."""
    if len(part) != 2 or not _CJK_ONLY.match(part):
        return False
    return (word_frequency(part) or 0) < RARE_WORD_FREQ


def word_frequency(word: str) -> int | None:
    """jieba's dictionary count of `word` (None: not in the dictionary), the dictionary loaded on first use."""
    from entities.partial import quiet_jieba

    jieba = quiet_jieba()
    if not jieba.dt.initialized:
        jieba.dt.initialize()
    return jieba.dt.FREQ.get(word)


def unknown_words(surface: str) -> set[str]:
    """The Chinese parts of a name (three characters or more) that jieba's dictionary does not hold: words its
    model guessed, often a brand cut in the wrong place ("菱宏光" and "五菱宏光" of 白色五菱宏光)."""
    return {p for p in name_parts(surface) if len(p) >= 3 and _CJK_ONLY.match(p) and word_frequency(p) is None}


def abbreviations(surface: str) -> set[str]:
    """A Chinese name's word (two characters or more, not a qualifier, not its head) with the name's last character
    glued after it, where that is not already in the name: "四色机", "对开机" of 海德堡四色胶印机 / 小森对开胶印机."""
    key = skeleton(surface)
    if len(key) < 4 or not CJK.match(key[-1]):
        return set()
    head = key[-1]
    return {part + head for part in name_parts(surface)
            if len(part) >= MIN_PART_CHARS and _CJK_ONLY.match(part) and not is_qualifier(part)
            and not key.endswith(part) and part + head not in key}


_CJK_ONLY = re.compile("^[\u3400-\u9fff]+$")


def is_qualifier(part: str) -> bool:
    """A numbered qualifier or a bare code: tells siblings apart, names nothing on its own. A number with a
    leading zero ("0418" of 工单0418) is no count, year or size: it is the identifier people say alone."""
    if part.isdigit() and part.startswith("0") and len(part) >= 3:
        return False
    return bool(_NUMBERED.match(part)) or (part.isdigit() and len(part) < MIN_SERIAL_DIGITS)
