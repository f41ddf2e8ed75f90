"""Words of a text: the one jieba loader, content terms (jieba for Chinese runs, lowercase words for
Latin ones), part-of-speech tags and the small-talk verdict built on them.

Compound identifiers such as ``A-1001`` or ``2026-03-10`` are kept whole (plus their parts) because
identifiers are exactly what the user asks about later.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
import unicodedata

from common.text.lang import CJK, CJK_RUN, cjk_ratio

_TERM = re.compile(rf"[{CJK}]+|[A-Za-z0-9]+(?:[-_.:/][A-Za-z0-9]+)*")
_LATIN_PARTS = re.compile(r"[A-Za-z0-9]+")

_ZH_STOPWORDS = frozenset(
    "的 地 得 了 着 过 是 在 和 与 及 或 也 都 就 而 又 把 被 让 给 对 向 从 到 这 那 这个 那个 这是 那是 "
    "一 一个 一下 一些 有 没有 我 你 您 他 她 它 我们 你们 他们 咱们 吗 呢 吧 啊 呀 哦 嗯 么 "
    "什么 怎么 如何 请 帮 帮我 个 些 之 其 为 以 于 将 还 很 再 才 呢 嘛 哈".split()
)
EN_STOPWORDS = frozenset(
    "a an the and or but if then so of to in on at by for with from as is are was were be been being "
    "it its this that these those i you he she we they me him her us them my your our their "
    "do does did have has had not no yes can could would should will shall may might must "
    "what which who whom how when where why please just also very".split()
)

_jieba_lock = threading.Lock()
_jieba_ready = False


def ensure_jieba() -> None:
    """Load jieba's dictionary once per process (~0.5-0.7 s), quietly."""
    global _jieba_ready
    if _jieba_ready:
        return
    with _jieba_lock:  # two threads must not both build the prefix dict
        if _jieba_ready:
            return
        import jieba

        jieba.setLogLevel(logging.WARNING)  # jieba prints build banners at INFO
        jieba.initialize()
        _jieba_ready = True


def _segment_cjk(run: str) -> list[str]:
    ensure_jieba()
    import jieba

    return jieba.lcut(run)


def tokenize(text: str) -> list[str]:
    """Content terms of ``text`` in order: jieba words for Chinese, lowercase words for Latin."""
    terms: list[str] = []
    for match in _TERM.finditer(unicodedata.normalize("NFKC", text)):
        chunk = match.group(0)
        if CJK_RUN.fullmatch(chunk):
            terms.extend(w for w in _segment_cjk(chunk) if w.strip() and w not in _ZH_STOPWORDS)
            continue
        word = chunk.lower()
        if word in EN_STOPWORDS:
            continue
        terms.append(word)
        parts = _LATIN_PARTS.findall(word)
        if len(parts) > 1:  # "a-1001" should also match a query that says "1001"
            terms.extend(p for p in parts if p not in EN_STOPWORDS)
    return terms


def term_set(text: str) -> set[str]:
    return set(tokenize(text))


def jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def overlap(a: set[str], b: set[str]) -> float:
    """Overlap coefficient: 1.0 when one set contains the other (a sentence and its padded copy)."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


@functools.lru_cache(maxsize=4096)  # the summariser asks twice per sentence (names, places)
def pos_tag(text: str) -> tuple[tuple[str, str], ...]:
    """jieba part-of-speech pairs (word, flag), e.g. ("东区", "ns"), ("明天", "t")."""
    ensure_jieba()
    import jieba.posseg

    return tuple((p.word, p.flag) for p in jieba.posseg.cut(text))


def pos_cut(text: str) -> list[tuple[str, str]]:
    """pos_tag as a list (the extraction rules' form)."""
    return list(pos_tag(text))


# Part-of-speech flags (jieba) of words that carry content: nouns and names of every kind, verbal
# nouns, numerals and Latin/digit tokens (codes, products, quantities).
_CONTENT_FLAGS = ("n", "vn", "m", "eng")
# Small talk is judged on texts at least half Chinese, a stricter share than `is_cjk`'s: jieba tags
# every Latin word alike ("eng"), so on a mixed text the verdict would rest on the Latin words.
_SMALL_TALK_MIN_CJK = 0.5


def is_small_talk(text: str) -> bool:
    """A mostly Chinese text with no content word by part of speech ("谢谢，最近老忘", "好的"). English
    is never judged: jieba tags every Latin word alike. Episodes store this verdict beside their terms
    (memory/recall/keyword.py), so recall does not run the tagger (~0.3 ms a text) on its candidates."""
    if not text or cjk_ratio(text) < _SMALL_TALK_MIN_CJK:
        return False
    return not any(flag.startswith(_CONTENT_FLAGS) for word, flag in pos_tag(text) if word.strip())
