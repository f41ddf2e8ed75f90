"""Cache isolation for ``bench.context``: every timed call and every timed floor starts from the
process's steady state and sees nothing another timed run left behind.

What a context call caches that depends on its query: the tool-result cut (``truncate_tool_result``,
keyed on the query) and the token counts of those cuts (``count_tokens``, keyed on the text). In
production a turn's query is new, so both miss; in the benchmark the floor repeats the call's
query, so whichever ran second would find the first one's cuts and counts. Steady state is what
the warm-up counted (message contents, tool-result pieces, memory lines): a long-running process
has counted those on earlier turns, and both the call and the floor may use them.

``record()`` wraps the counter during the warm-up and remembers every count; ``fresh()``, before
each timed run, clears the cut cache and gives the counter a new per-run cache over those counts.
"""
from __future__ import annotations

import functools


class CacheIsolation:
    def __init__(self) -> None:
        from conversations import tokens

        self._tokens = tokens
        self._original = tokens._count_cached
        self.steady: dict[str, int] = {}

    def record(self) -> None:
        original, steady = self._original, self.steady

        def recording(text: str) -> int:
            n = steady.get(text)
            if n is None:
                n = steady[text] = original(text)
            return n

        self._tokens._count_cached = recording

    def fresh(self) -> None:
        from conversations.window import truncate_tool_result

        truncate_tool_result.cache_clear()
        get, encode = self.steady.get, self._tokens._encode
        # A non-empty text never counts 0 tokens (count_tokens answers "" itself), so `or` is safe.
        self._tokens._count_cached = functools.lru_cache(maxsize=None)(lambda text: get(text) or len(encode(text)))

    def restore(self) -> None:
        self._tokens._count_cached = self._original
