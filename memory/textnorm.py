import hashlib
import re
import unicodedata

_SPACE = re.compile(r"\s+")
_TRAILING_PUNCT = re.compile(r"[。．.！!？?；;，,、\s]+$")


def normalize(text: str) -> str:
    """NFKC, case-folded, whitespace removed, trailing punctuation dropped: the form that decides
    whether two contents are 'the same' (exact dedup, forget fingerprints)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _TRAILING_PUNCT.sub("", _SPACE.sub("", folded))


def content_hash(text: str) -> str:
    return hashlib.sha256(normalize(text).encode()).hexdigest()
