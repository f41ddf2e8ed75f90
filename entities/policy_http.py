"""Entity access policy that asks the business service over HTTP (DESIGN §8).

The business service owns who may read which asset / work order; memory never grants access.
Protocol (one POST per batch):
    request  {"org": "...", "user": "...", "entities": [{"type": "asset", "id": "A-1001"}, ...]}
    response {"allowed": [{"type": "asset", "id": "A-1001"}, ...]}
Anything else — timeout, connection error, non-200, malformed body — denies the whole batch and
caches nothing, so a flaky callback can never widen access (fail closed).

Decisions from a good answer are cached per (org, user, type, external id) for `cache_ttl`
seconds; a revocation in the business service therefore takes effect within `cache_ttl`, or
at once when the caller calls `invalidate`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

import httpx
from cachetools import LRUCache

__all__ = ["HttpCallbackPolicy"]

logger = logging.getLogger(__name__)

_CacheKey = tuple[str, str, str, str]  # org, user, type, external id


class HttpCallbackPolicy:
    def __init__(
        self,
        url: str,
        *,
        timeout: float = 0.5,
        cache_ttl: float = 5.0,
        api_key: str | None = None,
        max_batch: int = 500,
        max_cache_entries: int = 100_000,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.url = url
        self.cache_ttl = cache_ttl
        self._max_batch = max(1, max_batch)
        self._clock = clock
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # One pooled client: the callback sits on the recall path, reconnecting per call costs more
        # than the lookup itself. Redirects are not followed: a 3xx is a failure, so we deny.
        self._client = httpx.Client(timeout=timeout, headers=headers, transport=transport)
        self._cache: LRUCache[_CacheKey, tuple[bool, float]] = LRUCache(maxsize=max(0, max_cache_entries))
        self._lock = threading.Lock()

    def allowed_ids(
        self,
        org: str,
        user_id: str,
        entity_ids: Collection[int],
        external: Mapping[int, tuple[str, str]],
    ) -> set[int]:
        """The subset of `entity_ids` the user may read now.

        `external` maps entity id -> (type, external id); an id missing from it is denied.
        """
        allowed: set[int] = set()
        ask: dict[tuple[str, str], list[int]] = {}
        now = self._clock()
        for eid in set(entity_ids):
            ref = external.get(eid)
            if ref is None:
                continue  # cannot be named to the business service -> cannot be allowed
            cached = self._cache_get((org, user_id, ref[0], ref[1]), now)
            if cached is None:
                ask.setdefault((ref[0], ref[1]), []).append(eid)
            elif cached:
                allowed.add(eid)
        refs = list(ask)
        for i in range(0, len(refs), self._max_batch):
            batch = refs[i : i + self._max_batch]
            granted = self._ask(org, user_id, batch)
            if granted is None:
                continue  # failed: denied, and nothing cached
            expires = self._clock() + self.cache_ttl
            with self._lock:
                for ref in batch:
                    ok = ref in granted
                    self._cache_put((org, user_id, ref[0], ref[1]), ok, expires)
                    if ok:
                        allowed.update(ask[ref])
        return allowed

    def invalidate(self, org: str | None = None, user_id: str | None = None) -> None:
        """Forget cached decisions (all, one org, or one user), e.g. after a grant/revoke event."""
        with self._lock:
            if org is None and user_id is None:
                self._cache.clear()
                return
            for key in [
                k
                for k in self._cache
                if (org is None or k[0] == org) and (user_id is None or k[1] == user_id)
            ]:
                del self._cache[key]

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> HttpCallbackPolicy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------------

    def _ask(
        self, org: str, user_id: str, refs: list[tuple[str, str]]
    ) -> set[tuple[str, str]] | None:
        """The granted subset of `refs`, or None when the answer cannot be trusted."""
        body = {"org": org, "user": user_id, "entities": [{"type": t, "id": x} for t, x in refs]}
        try:
            response = self._client.post(self.url, json=body)
        except httpx.HTTPError as exc:
            # Log the failure kind only: ids and org/user stay out of logs.
            logger.warning(
                "entity access callback failed: %s; denying %d entities",
                type(exc).__name__,
                len(refs),
            )
            return None
        if response.status_code != 200:
            logger.warning(
                "entity access callback answered HTTP %d; denying %d entities",
                response.status_code,
                len(refs),
            )
            return None
        try:
            granted = _parse_allowed(response.json())
        except ValueError:
            granted = None
        if granted is None:
            logger.warning(
                "entity access callback answered a malformed body; denying %d entities", len(refs)
            )
            return None
        # Only what we asked about can be granted; extra entries in the answer are ignored.
        return granted & set(refs)

    def _cache_get(self, key: _CacheKey, now: float) -> bool | None:
        with self._lock:
            entry = self._cache.get(key)
            if entry is None:
                return None
            ok, expires = entry
            if now >= expires:
                del self._cache[key]
                return None
            return ok

    def _cache_put(self, key: _CacheKey, ok: bool, expires: float) -> None:
        # Caller holds the lock. The least recently used entries go first once the cache is full; they are
        # mostly the ones closest to expiry.
        if self._cache.maxsize:  # a cache of size 0 keeps nothing (cachetools would refuse the item)
            self._cache[key] = (ok, expires)


def _parse_allowed(payload: Any) -> set[tuple[str, str]] | None:
    if not isinstance(payload, dict) or not isinstance(payload.get("allowed"), list):
        return None
    out: set[tuple[str, str]] = set()
    for item in payload["allowed"]:
        if not isinstance(item, dict):
            return None
        type_, id_ = item.get("type"), item.get("id")
        if not isinstance(type_, str) or not isinstance(id_, str):
            return None
        out.add((type_, id_))
    return out
