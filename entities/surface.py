"""Text primitives of entity matching: the normalised form surfaces are compared in, token
boundaries, and the registry row a matcher is built from. Pure Python, no Django; shared by the
matcher, partial names and type words."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

__all__ = ["EntityRef", "Match", "NormalizedText", "WORD_CHAR_CLASS", "inside_token", "is_word_char", "normalize",
           "normalize_key"]


@dataclass(frozen=True)
class EntityRef:
    id: int
    type: str
    external_id: str
    name: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Match:
    entity_id: int
    start: int
    end: int
    surface: str
    how: str  # "id" | "name" | "alias"


# Scripts written without spaces between words: a surface may start or end anywhere next to
# them. Everything else that is alphanumeric (Latin, digits, Cyrillic, ...) forms tokens, and a
# surface must not start or end inside such a token ("S780" is not in "S7800").
_NO_SPACE_SCRIPTS = (
    "\u2e80-\u2fff"  # CJK radicals, Kangxi
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3100-\u31ff"  # Bopomofo, Hangul compatibility jamo, Katakana ext.
    "\u3400-\u4dbf"  # CJK ext. A
    "\u4e00-\u9fff"  # CJK unified
    "\uac00-\ud7af"  # Hangul syllables (particles attach to nouns without a space)
    "\uf900-\ufaff"  # CJK compatibility
    "\U00020000-\U0003ffff"  # CJK ext. B and later
)
# `\w` minus the scripts above; also used by typewords.py so both agree on what a token is.
WORD_CHAR_CLASS = f"[^\\W{_NO_SPACE_SCRIPTS}]"
_WORD_CHAR = re.compile(WORD_CHAR_CLASS)
# A hyphen between two token characters joins them: "A-1001" is not inside "A-1001-2".
_JOINERS = frozenset("-")
# Whitespace other than a plain space; mapped 1:1 to " " so a line break separates like a space.
_OTHER_SPACE = re.compile(r"[^\S ]")
# Full-width ASCII and the ideographic space: NFKC maps each to one ASCII character.
_FULL_WIDTH = re.compile("[\uff01-\uff5e\u3000]")
# Spaces next to a no-space-script character are optional in writing ("S780 联合收割机").
_OPTIONAL_SPACE = re.compile(f"(?<=[{_NO_SPACE_SCRIPTS}]) | (?=[{_NO_SPACE_SCRIPTS}])")


def is_word_char(ch: str) -> bool:
    return _WORD_CHAR.match(ch) is not None


@dataclass(frozen=True)
class NormalizedText:
    """A normalised copy of `original` that can map its offsets back."""

    original: str
    text: str
    # For each char of `text`: the original [start, end) it came from. None = identity.
    _starts: tuple[int, ...] | None = None
    _ends: tuple[int, ...] | None = None

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        if self._starts is None or self._ends is None:
            return start, end
        return self._starts[start], self._ends[end - 1]


def normalize(text: str) -> NormalizedText:
    """NFKC + case-fold, every whitespace character a plain space.

    Whitespace runs are not collapsed, so that everyday text keeps its offsets.
    """
    nfkc = text
    if not unicodedata.is_normalized("NFKC", nfkc):
        # Chinese text is usually not NFKC only for its full-width punctuation ("，？（）"):
        # narrowing those one for one is 5x cheaper than a full NFKC pass.
        nfkc = _FULL_WIDTH.sub(_narrow, text)
        if not unicodedata.is_normalized("NFKC", nfkc):
            # NFKD not longer than the text means no character expanded; NFKC not shorter means
            # nothing composed: then offsets are unchanged.
            nfkc = unicodedata.normalize("NFKC", text)
            if len(nfkc) != len(text) or len(unicodedata.normalize("NFKD", text)) != len(text):
                return _normalize_slow(text)
    folded = nfkc.casefold()
    if len(folded) != len(text):  # "ß" -> "ss"
        return _normalize_slow(text)
    if _OTHER_SPACE.search(folded):
        folded = _OTHER_SPACE.sub(" ", folded)
    return NormalizedText(text, folded)


def _narrow(m: re.Match[str]) -> str:
    return chr(ord(m[0]) - 0xFEE0) if m[0] != "\u3000" else " "


def _normalize_slow(text: str) -> NormalizedText:
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    i, n = 0, len(text)
    while i < n:
        # Normalise a base character together with its combining marks so "e\u0301" composes
        # to "é" exactly as it would in a whole-string NFKC.
        j = i + 1
        while j < n and unicodedata.combining(text[j]):
            j += 1
        for ch in unicodedata.normalize("NFKC", text[i:j]).casefold():
            out.append(" " if ch.isspace() else ch)
            starts.append(i)
            ends.append(j)
        i = j
    return NormalizedText(text, "".join(out), tuple(starts), tuple(ends))


def normalize_key(surface: str) -> str:
    """The form a surface is stored under (and compared in)."""
    return " ".join(normalize(surface).text.split())


def inside_token(s: str, start: int, end: int) -> bool:
    """True when a hit starts or ends in the middle of a Latin/digit token."""
    if start > 0 and is_word_char(s[start]) and _joined(s, start - 1, -1):
        return True
    if end < len(s) and is_word_char(s[end - 1]) and _joined(s, end, 1):
        return True
    return False


def _joined(s: str, i: int, step: int) -> bool:
    if is_word_char(s[i]):
        return True
    j = i + step
    return s[i] in _JOINERS and 0 <= j < len(s) and is_word_char(s[j])
