"""Three normal forms of a text, for three different questions (docs/decisions.md, D24). They are not
merged because they disagree by design, and one of them is stored:

- `normalize_content` (and `content_hash`): whether two contents are "the same" memory. Whitespace
  and *trailing* punctuation go, inner punctuation stays ("A-1001" is not "A1001"). Its hash is written
  to `Memory.active_hash` and forget fingerprints, so changing it would orphan every stored hash.
- `normalize_for_compare`: whether two sentences say "the same words", all punctuation and symbols
  dropped (the window and summary pieces: a sentence and its re-punctuated copy are one).
- `clean`: the form content is *stored* in: full-width letters and digits folded, Chinese punctuation
  kept as written, runs of spaces collapsed, so it still reads like the user's own words.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

_SPACES = re.compile(r"[ \t\u3000]+")
_WHITESPACE = re.compile(r"\s+")
_TRAILING_PUNCT = re.compile(r"[。．.！!？?；;，,、\s]+$")


def normalize_for_compare(text: str) -> str:
    """NFKC, case-folded, without whitespace or punctuation: equal strings mean "same words"."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in text if not (ch.isspace() or unicodedata.category(ch)[0] in "PS"))


def clean(text: str) -> str:
    """Fold full-width letters and digits ("ＭｙＳＱＬ８") but keep Chinese punctuation as written,
    so stored content reads like the user's own words."""
    folded = "".join(unicodedata.normalize("NFKC", ch) if ch.isalnum() else ch for ch in text)
    return _SPACES.sub(" ", folded).strip()


def normalize_content(text: str) -> str:
    """NFKC, case-folded, whitespace removed, trailing punctuation dropped: the form that decides
    whether two contents are 'the same' (exact dedup, forget fingerprints)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _TRAILING_PUNCT.sub("", _WHITESPACE.sub("", folded))


def content_hash(text: str) -> str:
    return hashlib.sha256(normalize_content(text).encode()).hexdigest()
