"""The text vocabulary (zh + en) of the window, the summariser and memory's write and read paths:
tokenising, sentence splitting, normalising, language detection and the one jieba loader.

Chinese runs are segmented with jieba; Latin runs become lowercase words, and
compound identifiers such as ``A-1001`` or ``2026-03-10`` are kept whole (plus
their parts) because identifiers are exactly what the user asks about later.

Where two helpers answer a similar question by different rules they are kept apart on purpose and
named for their use (docs/decisions.md, "One text module"): `split_sentences` (window and summary
pieces) and `split_message_sentences` (extraction's statements, with abbreviations); `cjk_ratio` (a
share, compared with thresholds) and `detect_lang` (which rule set reads a statement);
`normalize_for_compare`, `normalize_content` (dedup hashes) and `clean` (stored content).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import threading
import unicodedata

__all__ = [
    "cjk_ratio",
    "clean",
    "content_hash",
    "detect_lang",
    "ensure_jieba",
    "jaccard",
    "normalize_content",
    "normalize_for_compare",
    "overlap",
    "pos_cut",
    "pos_tag",
    "split_message_sentences",
    "split_sentences",
    "is_cjk",
    "is_small_talk",
    "split_speaker",
    "term_set",
    "tokenize",
]

# CJK Unified Ideographs + Extension A + compatibility ideographs.
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_TERM = re.compile(rf"[{_CJK}]+|[A-Za-z0-9]+(?:[-_.:/][A-Za-z0-9]+)*")
_LATIN_PARTS = re.compile(r"[A-Za-z0-9]+")

_ZH_STOPWORDS = frozenset(
    "的 地 得 了 着 过 是 在 和 与 及 或 也 都 就 而 又 把 被 让 给 对 向 从 到 这 那 这个 那个 这是 那是 "
    "一 一个 一下 一些 有 没有 我 你 您 他 她 它 我们 你们 他们 咱们 吗 呢 吧 啊 呀 哦 嗯 么 "
    "什么 怎么 如何 请 帮 帮我 个 些 之 其 为 以 于 将 还 很 再 才 呢 嘛 哈".split()
)
_EN_STOPWORDS = frozenset(
    "a an the and or but if then so of to in on at by for with from as is are was were be been being "
    "it its this that these those i you he she we they me him her us them my your our their "
    "do does did have has had not no yes can could would should will shall may might must "
    "what which who whom how when where why please just also very".split()
)

_SENTENCE_END = re.compile(
    rf"[。！？；]+[”’」』）)]*"
    r"|\n+"
    r"|[.!?]+[\"')\]]*(?=\s|$)"
    rf"|[!?;]+(?=[{_CJK}])"  # half-width marks inside Chinese text
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
        if _CJK_RUN.fullmatch(chunk):
            terms.extend(w for w in _segment_cjk(chunk) if w.strip() and w not in _ZH_STOPWORDS)
            continue
        word = chunk.lower()
        if word in _EN_STOPWORDS:
            continue
        terms.append(word)
        parts = _LATIN_PARTS.findall(word)
        if len(parts) > 1:  # "a-1001" should also match a query that says "1001"
            terms.extend(p for p in parts if p not in _EN_STOPWORDS)
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


def normalize_for_compare(text: str) -> str:
    """NFKC, case-folded, without whitespace or punctuation: equal strings mean "same words"."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in text if not (ch.isspace() or unicodedata.category(ch)[0] in "PS"))


def cjk_ratio(text: str) -> float:
    """Share of CJK ideographs among letters/ideographs (0.0 for text without any)."""
    cjk = latin = 0
    for ch in text:
        if _CJK_RUN.match(ch):
            cjk += 1
        elif ch.isalpha():
            latin += 1
    total = cjk + latin
    return cjk / total if total else 0.0


@functools.lru_cache(maxsize=4096)  # the summariser asks twice per sentence (names, places)
def pos_tag(text: str) -> tuple[tuple[str, str], ...]:
    """jieba part-of-speech pairs (word, flag), e.g. ("东区", "ns"), ("明天", "t")."""
    ensure_jieba()
    import jieba.posseg

    return tuple((p.word, p.flag) for p in jieba.posseg.cut(text))


def is_cjk(text: str) -> bool:
    """Mostly Chinese (cjk_ratio ≥ 0.3): the read path scores such a text with the multilingual half of
    a composite vector only (MiniLM turns most Chinese into [UNK])."""
    return cjk_ratio(text) >= 0.3


# Part-of-speech flags (jieba) of words that carry content: nouns and names of every kind, verbal
# nouns, numerals and Latin/digit tokens (codes, products, quantities).
_CONTENT_FLAGS = ("n", "vn", "m", "eng")


def is_small_talk(text: str) -> bool:
    """A mostly Chinese text with no content word by part of speech ("谢谢，最近老忘", "好的"). English
    is never judged: jieba tags every Latin word alike. Episodes store this verdict beside their terms
    (memory/keyword.py), so recall does not run the tagger (~0.3 ms a text) on its candidates."""
    if not text or cjk_ratio(text) < 0.5:
        return False
    return not any(flag.startswith(_CONTENT_FLAGS) for word, flag in pos_tag(text) if word.strip())


def split_sentences(text: str) -> list[str]:
    """Sentences of mixed zh/en text, terminators kept, blanks dropped.

    Chinese ends at 。！？； or a newline; English at . ! ? followed by a space or the
    end, so "3.5", "v1.2" and "A.1" stay whole.
    """
    sentences: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        sentences.append(text[start : match.end()])
        start = match.end()
    sentences.append(text[start:])
    return [s.strip() for s in sentences if normalize_for_compare(s)]


def pos_cut(text: str) -> list[tuple[str, str]]:
    """pos_tag as a list (the extraction rules' form)."""
    return list(pos_tag(text))


# ---------------------------------------------------------------------------- statements (write path)
_CJK_CHAR = re.compile(f"[{_CJK}]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")
_ZH_SPLIT = re.compile(r"(?<=[。！？!?；;\n])")
# A period ends an English sentence only before whitespace or the end: "MySQL 8.0" stays whole.
_EN_SPLIT = re.compile(r"(?<=[.!?;])\s+|\n+")
_SPACES = re.compile(r"[ \t\u3000]+")
# "No. 1", "e.g. this", "Mr. Li": a period after these does not end the sentence.
_EN_ABBREV = re.compile(r"(?:\b(?:no|nos|mr|mrs|ms|dr|st|vs|etc|e\.g|i\.e|approx|dept|inc|ltd|co|jr|sr)|\b[A-Z])\.$", re.I)

# Transcripts prefix each line with its speaker ("Caroline: ..."): a Latin name of up to three
# words and a colon. Words that open an ordinary sentence the same way ("Note: ...") are not names.
_SPEAKER = re.compile(r"^(?P<name>[A-Z][A-Za-z'.-]*(?: [A-Z][A-Za-z'.-]*){0,2}):\s+(?=\S)")
_NOT_SPEAKERS = {"note", "correction", "actually", "remember", "update", "fyi", "ps", "p.s", "reminder", "important",
                 "warning", "question", "answer", "summary", "re", "subject", "todo", "btw", "also", "edit", "info",
                 "context", "background", "request", "task", "plan", "status", "result", "error", "hint", "tip"}


def detect_lang(text: str) -> str:
    """'zh' when Chinese characters are at least as many as Latin words: a Chinese sentence that
    names "MySQL" stays Chinese, an English one that names "佳木斯" stays English."""
    cjk = len(_CJK_CHAR.findall(text))
    return "zh" if cjk and cjk >= len(_LATIN_WORD.findall(text)) else "en"


def clean(text: str) -> str:
    """Fold full-width letters and digits ("ＭｙＳＱＬ８") but keep Chinese punctuation as written,
    so stored content reads like the user's own words."""
    folded = "".join(unicodedata.normalize("NFKC", ch) if ch.isalnum() else ch for ch in text)
    return _SPACES.sub(" ", folded).strip()


def split_message_sentences(text: str) -> list[str]:
    """Sentences of a message in either language (or both: "OK. 我们农场在佳木斯。"), as extraction
    reads them: "No. 1" and "e.g. this" do not end a sentence."""
    parts: list[str] = []
    for zh_piece in _ZH_SPLIT.split(text):
        for piece in _EN_SPLIT.split(zh_piece):
            if parts and _EN_ABBREV.search(parts[-1]):
                parts[-1] = f"{parts[-1]} {piece}"
            else:
                parts.append(piece)
    return [p.strip() for p in parts if p and p.strip()]


def split_speaker(text: str) -> tuple[str | None, str]:
    """("Caroline", "I moved to Boston") for "Caroline: I moved to Boston"; (None, text) without a label."""
    match = _SPEAKER.match(text)
    if not match or match.group("name").lower() in _NOT_SPEAKERS:
        return None, text
    return match.group("name"), text[match.end():]


# ---------------------------------------------------------------------------- content identity
_WHITESPACE = re.compile(r"\s+")
_TRAILING_PUNCT = re.compile(r"[。．.！!？?；;，,、\s]+$")


def normalize_content(text: str) -> str:
    """NFKC, case-folded, whitespace removed, trailing punctuation dropped: the form that decides
    whether two contents are 'the same' (exact dedup, forget fingerprints)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _TRAILING_PUNCT.sub("", _WHITESPACE.sub("", folded))


def content_hash(text: str) -> str:
    return hashlib.sha256(normalize_content(text).encode()).hexdigest()
