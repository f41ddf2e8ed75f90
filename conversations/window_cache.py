"""Recent-window cache: a conversation's messages as context assembly needs them, kept in Redis.

Layout (service profile): a Redis list per conversation and window version,
`mem:win:{conversation_id}:{window_version}`, one JSON item per message in seq order. An append
pushes its new messages onto an existing list (never rewrites it). Redaction bumps the
conversation's window_version in MySQL, in the redacting transaction, so the old list is never read
again even when Redis cannot be reached to delete it. The embedded profile keeps the same list in
the local-memory cache.

The list is trusted only when it is exactly messages 1..message_count of the conversation row just
read from MySQL: a lost push, a push that raced a refill, or a Redis restart all show up as a gap or
a short list and read MySQL instead, so a stale window is never served. Redis down → MySQL.
"""
from __future__ import annotations

import json
import logging
import threading
from datetime import datetime

from cachetools import LRUCache
from django.conf import settings
from django.core.cache import cache
from django.utils.dateparse import parse_datetime

from conversations.models import Conversation, Message
from conversations.window import WindowMessage

logger = logging.getLogger(__name__)


def _key(conversation_id: int, window_version: int) -> str:
    return f"mem:win:{conversation_id}:{window_version}"


def _redis():
    if not settings.CACHES["default"]["BACKEND"].endswith("RedisCache"):
        return None
    from django_redis import get_redis_connection

    return get_redis_connection("default")


def _item(message: Message) -> str:
    return json.dumps({
        "id": message.id, "seq": message.seq, "role": message.role, "content": message.content,
        "tool_call_id": message.tool_call_id, "tool_calls": message.tool_calls, "redacted": message.redacted,
        "occurred_at": message.occurred_at.isoformat() if message.occurred_at else None,
    }, ensure_ascii=False)


def _window_message(item: dict) -> WindowMessage:
    return WindowMessage(id=item["id"], role=item["role"], content=item["content"],
                         tool_call_id=item["tool_call_id"], tool_calls=item["tool_calls"],
                         occurred_at=parse_datetime(item["occurred_at"]) if item["occurred_at"] else None,
                         seq=item["seq"])


def _read_from(key: str, start: int) -> list[str] | None:
    """Items start.. of the list (0-based); None on a miss or when Redis is down."""
    client = _redis()
    try:
        if client is None:
            items = cache.get(key)
            return items[start:] if items is not None else None
        raw = client.lrange(key, start, -1)
        if not raw and not client.exists(key):
            return None
        return [r.decode() if isinstance(r, bytes) else r for r in raw]
    except Exception as exc:  # Redis down: only slower
        logger.warning("window cache read failed key=%s: %s", key, type(exc).__name__)
        return None


def _fill(key: str, items: list[str]) -> None:
    client = _redis()
    try:
        if client is None:
            cache.set(key, items, settings.CACHE_WINDOW_TTL_SECONDS)
            return
        pipe = client.pipeline()  # MULTI: readers never see the list half-written
        pipe.delete(key)
        pipe.rpush(key, *items)
        pipe.expire(key, settings.CACHE_WINDOW_TTL_SECONDS)
        pipe.execute()
    except Exception as exc:
        logger.warning("window cache fill failed key=%s: %s", key, type(exc).__name__)


# This process's parsed lists, by the same key: messages 1..n of a window version never change, so
# a parsed list whose length is the row's message_count is exact, and a shorter one needs only the
# newer items. Parsing 300 JSON items per context call cost more than reading them.
_PARSED_MAX = 256
_parsed: LRUCache[str, list[tuple[WindowMessage, bool]]] = LRUCache(maxsize=_PARSED_MAX)
_parsed_lock = threading.Lock()  # cachetools caches are not thread-safe


def clear_local() -> None:
    """Forget this process's parsed lists (tests; after a database restore, which can reuse ids)."""
    with _parsed_lock:
        _parsed.clear()


def _parse(raw: list[str], first_seq: int) -> list[tuple[WindowMessage, bool]] | None:
    items = [json.loads(r) for r in raw]
    if any(item["seq"] != n for n, item in enumerate(items, start=first_seq)):
        return None
    return [(_window_message(i), bool(i["redacted"])) for i in items]


def _remember(key: str, parsed: list[tuple[WindowMessage, bool]]) -> None:
    with _parsed_lock:
        _parsed[key] = parsed  # the least recently used list goes once the cache is full


def _cached(key: str, count: int) -> list[tuple[WindowMessage, bool]] | None:
    with _parsed_lock:
        local = _parsed.get(key)
    if local is not None and len(local) == count:
        return local
    start = len(local) if local is not None and len(local) < count else 0
    raw = _read_from(key, start)
    if raw is None or start + len(raw) != count:
        return None
    parsed = _parse(raw, start + 1)
    if parsed is None:
        return None
    parsed = (local[:start] if start else []) + parsed
    _remember(key, parsed)
    return parsed


def window_messages(conversation: Conversation, at: datetime | None = None) -> list[WindowMessage]:
    """The conversation's unredacted messages in seq order (as of `at` when given).

    `conversation` must come from a fresh read: its message_count and window_version validate the cache."""
    count = conversation.message_count
    key = _key(conversation.id, conversation.window_version)
    parsed = _cached(key, count) if count else None
    if parsed is None:
        rows = list(Message.objects.filter(conversation_id=conversation.id).order_by("seq"))
        parsed = [(WindowMessage(id=m.id, role=m.role, content=m.content, tool_call_id=m.tool_call_id,
                                 tool_calls=m.tool_calls, occurred_at=m.occurred_at, seq=m.seq), m.redacted)
                  for m in rows]
        if rows and len(rows) <= settings.CACHE_WINDOW_MAX_MESSAGES and rows[-1].seq == len(rows):
            _fill(key, [_item(m) for m in rows])
            _remember(key, parsed)
    out = [message for message, redacted in parsed if not redacted]
    if at is not None:
        out = [m for m in out if m.occurred_at is None or m.occurred_at <= at]
    return out


def window_cache_append(conversation_id: int, window_version: int, messages: list[Message]) -> None:
    """After COMMIT: extend an existing list; a missing one is filled whole on the next read."""
    if not messages:
        return
    key = _key(conversation_id, window_version)
    client = _redis()
    items = [_item(m) for m in messages]
    try:
        if client is None:
            current = cache.get(key)
            if current is not None and len(current) + len(items) <= settings.CACHE_WINDOW_MAX_MESSAGES:
                cache.set(key, current + items, settings.CACHE_WINDOW_TTL_SECONDS)
            elif current is not None:
                cache.delete(key)
            return
        # RPUSHX pushes only onto an existing list: no partial list is ever started here.
        length = client.rpushx(key, *items)
        if length > settings.CACHE_WINDOW_MAX_MESSAGES:
            client.delete(key)
    except Exception as exc:
        logger.warning("window cache append failed key=%s: %s", key, type(exc).__name__)


def window_cache_drop(conversation_id: int, window_version: int) -> None:
    """Free a superseded list early; correctness never depends on it (the version moved on)."""
    key = _key(conversation_id, window_version)
    client = _redis()
    try:
        cache.delete(key) if client is None else client.delete(key)
    except Exception as exc:
        logger.warning("window cache drop failed key=%s: %s", key, type(exc).__name__)
