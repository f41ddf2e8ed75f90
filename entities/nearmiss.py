"""A demonstrative that points with a description the registry does not know ("那辆双层观光巴士", "那辆氢能公交",
"那个沙袋"): the user means something that is not registered (or not visible), so the answer is none, never the
entity just discussed that happens to be of a similar kind.

The description is the noun phrase right after the demonstrative, read with jieba's part-of-speech tags (its
dictionary only, no HMM: 0.1 ms, where the HMM costs 2 ms for words no dictionary has): its
nominal words up to the first one the registry knows (a word of a name, alias or attribute value, a type word, a
generic noun). A word of two or more Chinese characters before that head that the registry does not know makes
the description unknown. Latin words and codes end the check: they are matched by the other rules. Pure Python.
"""
from __future__ import annotations

import re
from collections.abc import Callable

_CJK_WORD = re.compile("^[\u3400-\u9fff]{2,}$")
_NOMINAL = ("n", "a", "b", "j", "vn", "an")  # nouns of every kind, adjectives, distinguishing words, abbreviations
MAX_DESCRIPTION_WORDS = 5


def unknown_description(text: str, after: int, knows: Callable[[str], bool]) -> list[str]:
    """The words of the noun phrase starting at `after` that the registry does not know; [] when the phrase is
    known, empty, or not Chinese."""
    head = text[after:after + 2]
    if not _CJK_WORD.match(head) or knows(head):
        return []  # the phrase starts with a word the registry knows (the common case) or is not Chinese: no tagging
    import jieba.posseg

    from entities.partial import quiet_jieba

    quiet_jieba()
    unknown: list[str] = []
    for n, (word, flag) in enumerate(_glued(jieba.posseg.lcut(text[after:after + 24], HMM=False))):
        if n >= MAX_DESCRIPTION_WORDS or not flag.startswith(_NOMINAL) or not _CJK_WORD.match(word) and len(word) > 1:
            break  # the phrase ended (a verb, a time word, punctuation) or a Latin word / code follows
        if knows(word):
            break  # the head (or a known word of the phrase): what came before it must be known as well
        if _CJK_WORD.match(word):
            unknown.append(word)
    return unknown


def _glued(tokens) -> list[tuple[str, str]]:
    """The phrase's first word with a lone character jieba's dictionary split off it ("充电|桩", "边|牧"):
    without the HMM an unknown compound falls apart into a verb or adverb and a noun or classifier."""
    pairs = [(t.word, t.flag) for t in tokens]
    if len(pairs) >= 2 and len(pairs[1][0]) == 1 and pairs[1][1].startswith(("n", "q")) \
            and pairs[0][1].startswith(("v", "d", "n", "a")) and _CJK_WORD.match(pairs[0][0] + pairs[1][0]) \
            and len(pairs[0][0]) <= 2:
        return [(pairs[0][0] + pairs[1][0], "n"), *pairs[2:]]
    # ... or a lone character split off before a noun ("堆|高车"): the same unknown compound, cut the other way.
    if len(pairs) >= 2 and len(pairs[0][0]) == 1 and pairs[0][1].startswith(("v", "d", "n", "a")) \
            and pairs[1][1].startswith("n") and _CJK_WORD.match(pairs[0][0] + pairs[1][0]) and len(pairs[1][0]) <= 3:
        return [(pairs[0][0] + pairs[1][0], "n"), *pairs[2:]]
    return pairs
