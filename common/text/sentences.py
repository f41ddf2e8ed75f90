"""Sentences of a text, and the speaker label of a transcript line.

Two splitters, because their callers need different pieces (docs/decisions.md, D24):
`split_sentences` cuts the window's and the summariser's pieces (closing quotes stay with their
sentence, half-width marks inside Chinese end one, pieces without a word are dropped);
`split_message_sentences` cuts the statements extraction reads ("No. 1", "e.g. this" and "Mr. Li"
do not end a sentence, every non-blank piece is kept). Merging them would move the summary's and the
extractor's sentence boundaries at once.
"""

from __future__ import annotations

import re

from common.text.lang import CJK
from common.text.normalize import normalize_for_compare

_SENTENCE_END = re.compile(
    rf"[。！？；]+[”’」』）)]*"
    r"|\n+"
    r"|[.!?]+[\"')\]]*(?=\s|$)"
    rf"|[!?;]+(?=[{CJK}])"  # half-width marks inside Chinese text
)

_ZH_SPLIT = re.compile(r"(?<=[。！？!?；;\n])")
# A period ends an English sentence only before whitespace or the end: "MySQL 8.0" stays whole.
_EN_SPLIT = re.compile(r"(?<=[.!?;])\s+|\n+")
# "No. 1", "e.g. this", "Mr. Li": a period after these does not end the sentence.
_EN_ABBREV = re.compile(r"(?:\b(?:no|nos|mr|mrs|ms|dr|st|vs|etc|e\.g|i\.e|approx|dept|inc|ltd|co|jr|sr)|\b[A-Z])\.$", re.I)

# A multi-party transcript prefixes each line with its speaker ("Caroline: ..."): a Latin name of up
# to three words and a colon. Words that open an ordinary sentence the same way ("Note: ...") are not
# names.
_SPEAKER = re.compile(r"^(?P<name>[A-Z][A-Za-z'.-]*(?: [A-Z][A-Za-z'.-]*){0,2}):\s+(?=\S)")
_NOT_SPEAKERS = {"note", "correction", "actually", "remember", "update", "fyi", "ps", "p.s", "reminder", "important",
                 "warning", "question", "answer", "summary", "re", "subject", "todo", "btw", "also", "edit", "info",
                 "context", "background", "request", "task", "plan", "status", "result", "error", "hint", "tip"}


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
