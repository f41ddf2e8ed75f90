"""The answer of one chat-completions call (any OpenAI-compatible endpoint), read the same way by
every LLM caller: each keeps its own transport (a pooled client with one retry, or a plain POST) and
its own error type, so each decides what a failure means for its work."""
from __future__ import annotations

from collections.abc import Callable

import httpx

__all__ = ["RETRY_LATER_STATUSES", "completion_content"]

# Statuses that say "not now" rather than "not this": the endpoint is busy, the request was fine.
RETRY_LATER_STATUSES = frozenset({408, 429})


def completion_content(post: Callable[[], httpx.Response], error: Callable[..., Exception], *,
                       unavailable: Callable[..., Exception] | None = None) -> str:
    """`choices[0].message.content` of the response `post()` returns.

    Every failure raises `error(reason, **details)`, `reason` being one of "timeout", "transport"
    (`error`: the exception's class name), "http_status" (`status`) or "bad_envelope"
    (`response_chars`: the body's length, never its text). Given `unavailable`, a failure that says the
    endpoint is down or busy (a timeout, a transport error, a 5xx, 408 or 429) raises that instead.
    """
    busy = unavailable or error
    try:
        response = post()
    except httpx.TimeoutException as exc:
        raise busy("timeout") from exc
    except httpx.TransportError as exc:
        raise busy("transport", error=type(exc).__name__) from exc
    if response.status_code >= 500 or response.status_code in RETRY_LATER_STATUSES:
        raise busy("http_status", status=response.status_code)
    if response.status_code != 200:
        raise error("http_status", status=response.status_code)
    try:
        content = response.json()["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise error("bad_envelope", response_chars=len(response.content)) from exc
    if not isinstance(content, str):
        raise error("bad_envelope", response_chars=len(response.content))
    return content
