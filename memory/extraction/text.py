"""Text helpers shared by the zh and en rules: language, sentence split, jieba access."""
from __future__ import annotations

import re
import threading
import unicodedata
from functools import lru_cache

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")
_ZH_SPLIT = re.compile(r"(?<=[。！？!?；;\n])")
# A period ends an English sentence only before whitespace or the end: "MySQL 8.0" stays whole.
_EN_SPLIT = re.compile(r"(?<=[.!?;])\s+|\n+")
_SPACES = re.compile(r"[ \t\u3000]+")

# Transcripts prefix each line with its speaker ("Caroline: ..."): a Latin name of up to three
# words and a colon. Words that open an ordinary sentence the same way ("Note: ...") are not names.
_SPEAKER = re.compile(r"^(?P<name>[A-Z][A-Za-z'.-]*(?: [A-Z][A-Za-z'.-]*){0,2}):\s+(?=\S)")
_NOT_SPEAKERS = {"note", "correction", "actually", "remember", "update", "fyi", "ps", "p.s", "reminder", "important",
                 "warning", "question", "answer", "summary", "re", "subject", "todo", "btw", "also", "edit", "info",
                 "context", "background", "request", "task", "plan", "status", "result", "error", "hint", "tip"}

_jieba_lock = threading.Lock()
_jieba_ready = False


def detect_lang(text: str) -> str:
    """'zh' when Chinese characters are at least as many as Latin words: a Chinese sentence that
    names "MySQL" stays Chinese, an English one that names "佳木斯" stays English."""
    cjk = len(_CJK.findall(text))
    return "zh" if cjk and cjk >= len(_LATIN_WORD.findall(text)) else "en"


def clean(text: str) -> str:
    """Fold full-width letters and digits ("ＭｙＳＱＬ８") but keep Chinese punctuation as written,
    so stored content reads like the user's own words."""
    folded = "".join(unicodedata.normalize("NFKC", ch) if ch.isalnum() else ch for ch in text)
    return _SPACES.sub(" ", folded).strip()


# "No. 1", "e.g. this", "Mr. Li": a period after these does not end the sentence.
_EN_ABBREV = re.compile(r"(?:\b(?:no|nos|mr|mrs|ms|dr|st|vs|etc|e\.g|i\.e|approx|dept|inc|ltd|co|jr|sr)|\b[A-Z])\.$", re.I)


def split_sentences(text: str) -> list[str]:
    """Sentences of a message in either language (or both: "OK. 我们农场在佳木斯。")."""
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


def strip_end(text: str) -> str:
    """Drop trailing sentence punctuation and spaces (content is stored without them)."""
    return text.strip().rstrip("。！!？?；;，,.、：: ").strip()


def strip_leading(pattern: re.Pattern, text: str) -> str:
    """Remove `pattern` (anchored at the start) again and again until nothing changes: stacked
    leads such as "no, actually, ..." go one by one."""
    while True:
        stripped = pattern.sub("", text, count=1)
        if stripped == text:
            return text
        text = stripped


def pos_cut(text: str) -> list[tuple[str, str]]:
    """jieba part-of-speech tokens; jieba is imported and initialised once, on first use."""
    global _jieba_ready
    if not _jieba_ready:
        with _jieba_lock:
            if not _jieba_ready:
                import jieba

                jieba.setLogLevel(60)
                jieba.initialize()
                _jieba_ready = True
    return _cut_cached(text)


@lru_cache(maxsize=4096)
def _cut_cached(text: str) -> list[tuple[str, str]]:
    import jieba.posseg as pseg

    return [(p.word, p.flag) for p in pseg.lcut(text)]
