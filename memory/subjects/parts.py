"""Split a standing statement into its subject (attribute words, predicate, identifiers) and its
value (numbers, names, models, the object after a value marker).

Chinese uses jieba's part-of-speech tags; English uses word shapes (capitals, digits) and snowball
stems. Both work clause by clause: a negated clause ("短信不用了", "not by email") holds old values,
a clause without a marker holds subject words ("提醒方式改一下").
"""
from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache

from common.text import detect_lang, split_speaker
from memory.subjects.parts_en import parse_en
from memory.subjects.parts_zh import parse_zh
from memory.subjects.statement import StatementParts

__all__ = ["StatementParts", "parse", "value_kinds"]


_VALUE_KINDS = [
    ("clock", re.compile(r"[\d一二两三四五六七八九十]+点(?:半|[\d一二三四五六七八九十]+分?)?(?!钟)|\d{1,2}:\d{2}|"
                         r"\b\d{1,2}(?::\d{2})?\s?(?:am|pm|a\.m\.|p\.m\.)|\bo'?clock\b", re.I)),
    ("duration", re.compile(r"[\d一二两三四五六七八九十百千半几]+个?(?:分钟|小时|钟头|天|周|星期|个月|年)|半小时|"
                            r"\b(?:\d+|one|two|three|four|five|six|ten|fifteen|twenty|thirty|half an?)\s+(?:minutes?|hours?|days?|"
                            r"weeks?|months?)\b", re.I)),
    ("temperature", re.compile(r"[\d一二两三四五六七八九十]+(?:度|℃)|\d+\s?(?:degrees?|°)", re.I)),
    ("money", re.compile(r"[\d一二两三四五六七八九十百千万]+(?:元|块钱?)|[$¥€£]\s?\d|\b\d+\s?(?:dollars|yuan|euros?)\b", re.I)),
]


def value_kinds(text: str) -> frozenset[str]:
    return frozenset(kind for kind, pattern in _VALUE_KINDS if pattern.search(text))


@lru_cache(maxsize=8192)
def parse(text: str, subject: str | None = None) -> StatementParts:
    """Parts of one statement; `subject` (from an LLM extractor) names the attribute explicitly and
    replaces the parsed subject words, the values still come from the statement."""
    # The speaker label names whose statement it is, not what it is about: parsed apart, so
    # "Caroline" is neither a subject word nor an attribute head.
    speaker, text = split_speaker((text or "").strip())
    lang = detect_lang(text)
    parts = parse_zh(text) if lang == "zh" else parse_en(text)
    if subject and subject.strip():
        # The named subject adds to what the words say; it never removes a parsed head, so a
        # subject worded unlike the stored statement ("reminder channel") still meets it.
        named = parse(subject.strip())
        words = tuple(dict.fromkeys((named.terms or tuple(named.values)) + parts.terms))
        heads = (named.heads or frozenset(words[:1])) | parts.heads
        parts = StatementParts(lang=parts.lang, terms=words, weak=named.weak | parts.weak, heads=heads,
                               idents=named.idents | parts.idents, values=parts.values, old_values=parts.old_values,
                               preds=parts.preds, cue=parts.cue, masked=parts.masked)
    return replace(parts, value_kinds=value_kinds(text), speaker=speaker.casefold() if speaker else None)
