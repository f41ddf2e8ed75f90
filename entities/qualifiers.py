"""Several candidates, and a word of the text that names something related to some of them only.

"201的液相色谱仪" where 液相色谱仪1号 stands in 201实验室 and 液相色谱仪2号 in 305实验室: the skeleton names both,
"201" names neither but names the lab one of them stands in. A part of a name, alias or attribute value
found in the text that names (visible) neighbours of some of the candidates, or some of the candidates
themselves ("外科的张医生" where one 张 is a surgeon), keeps those; several such words keep what all of them
agree on. A word naming every candidate is the one they were found by. Pure Python; the caller's gate decides
visibility.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence

from entities.narrowing import related_to
from entities.surface import normalize

MAX_CANDIDATES = 50  # an ambiguity this wide is a kind, not a set of look-alikes to tell apart
MAX_HOLDERS = 200  # a part this common tells nothing apart
_CJK = re.compile("[\u3400-\u9fff]")


def by_related_words(text: str, candidates: Sequence[int], *, matcher, visible: Callable[[Sequence[int]], list[int]],
                     read: Collection[str] = ()) -> tuple[list[int], list[str]] | None:
    """(the candidates kept, the words that kept them), or None when no word of the text narrows them. `read`: the
    words the rule that found the candidates read (a name it matched whole, the parts and values it used)."""
    if len(candidates) > MAX_CANDIDATES or not hasattr(matcher, "part_hits"):
        return None
    among = set(candidates)
    norm = normalize(text).text
    named: dict[str, set[int]] = {}
    at: dict[str, int] = {}
    for start, part, ids in matcher.part_hits(text):
        if len(ids) <= MAX_HOLDERS:
            named.setdefault(part, set()).update(ids)
            at[part] = min(at.get(part, start), start)
    for value, ids in matcher.attribute_hits(text):
        if len(ids) <= MAX_HOLDERS and (start := norm.find(value)) >= 0:
            named.setdefault(value, set()).update(ids)
            at[value] = min(at.get(value, start), start)
    # A Chinese modifier comes before its head: a word after the first word naming every candidate belongs to what is
    # said about it ("格力空调的清洗多少钱": 清洗 is asked about, not a cleaning order that tells the two apart).
    head = min((at[w] for w, ids in named.items() if among <= ids), default=len(norm))
    # A word inside a longer word found ("201" of "201实验室") is read with it, not alone.
    words = [w for w in named if not any(w != o and w in o for o in named)
             and (at[w] < head or not _CJK.search(norm))]
    kept = set(among)
    used: list[str] = []
    for word in words:
        holders = named[word]
        if among <= holders:
            continue  # the word the candidates were found by
        if holders & among:
            if any(word in r for r in read):
                continue  # "客厅的电器": the room they were found through, whatever some of them also carry
            # A word of some candidates' own texts ("外科的张医生": 外科兽医 is one vet's role; "滨江的彩超": one scanner's
            # site is 滨江分院), which the rule that found them by another word did not read.
            kept &= holders
            used.append(word)
            continue
        seen = set(visible(sorted(holders)))
        related = {c for c in among if any(n[0] in seen for n in matcher.neighbours(c))} \
            or {c for c in among if related_to(c, seen, matcher, visible)}
        if related and related != among:
            kept &= related
            used.append(word)
    if not used or not kept or kept == among:
        return None
    return sorted(kept, key=list(candidates).index), used
