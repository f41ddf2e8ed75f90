"""Fail fast on a Redis that stopped answering: a per-server circuit breaker under redis-py.

A Redis that is paused (a partition, a stalled host, SIGSTOP) still accepts TCP connections, so
every command waits for its socket timeout. One request touches Redis several times (rate limit,
recent-window push, generation counter, task publish), and each would pay the timeout again. So
the first command that times out on a server opens that server's breaker in this process: for
REDIS_BREAKER_SECONDS every command to it fails at once with a ConnectionError, which every caller
already treats as "Redis down" (django-redis IGNORE_EXCEPTIONS, the window and memory caches,
memory.enqueue for the broker). After that period one command goes through as a probe; if it
answers the breaker closes, if it times out the breaker opens again. A refused connection (Redis
restarting) fails at once by itself and does not open the breaker.

Used by the Django cache (CONNECTION_POOL_KWARGS in config/settings.py) and by kombu's Redis
transport (config/celery.py), so the cache and the broker on one server share one breaker.
"""
from __future__ import annotations

import logging
import threading
import time

import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from common.setting import setting

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_open_until: dict[tuple[str, int], float] = {}


def _period() -> float:
    return float(setting("REDIS_BREAKER_SECONDS", 5.0))  # the default in a bare redis client of a script


def breaker_allows(server: tuple[str, int]) -> bool:
    """False while the server's breaker is open. Once the period is over the first caller is let
    through as the probe and the breaker stays open for everyone else until the probe ends."""
    until = _open_until.get(server)
    if until is None:
        return True
    now = time.monotonic()
    if now < until:
        return False
    with _lock:
        if _open_until.get(server) != until:  # another thread took the probe
            return False
        _open_until[server] = now + _period()
    return True


def breaker_trip(server: tuple[str, int]) -> None:
    with _lock:
        already = server in _open_until
        _open_until[server] = time.monotonic() + _period()
    if not already:
        logger.warning("redis %s:%s timed out; failing fast for %.1fs", server[0], server[1], _period())


def breaker_reset(server: tuple[str, int]) -> None:
    if server in _open_until:
        with _lock:
            _open_until.pop(server, None)
        logger.warning("redis %s:%s answers again", server[0], server[1])


def breaker_state() -> dict[str, float]:
    """Open breakers of this process: "host:port" -> seconds until the next probe."""
    now = time.monotonic()
    return {f"{h}:{p}": round(max(0.0, until - now), 2) for (h, p), until in list(_open_until.items())}


def breaker_clear() -> None:
    """Close every breaker (tests that pause and resume their own Redis)."""
    with _lock:
        _open_until.clear()


class GuardedConnection(redis.Connection):
    """redis.Connection that consults and feeds its server's breaker."""

    def _server(self) -> tuple[str, int]:
        return (str(self.host), int(self.port))

    _probing = False  # this connection carries the probe: its own commands are let through

    def _refuse_if_open(self) -> None:
        if self._probing:
            return
        server = self._server()
        if server not in _open_until:
            return
        if not breaker_allows(server):
            raise RedisConnectionError(f"Redis {self.host}:{self.port} is not answering (circuit open)")
        self._probing = True

    def connect_check_health(self, *args, **kwargs):
        if self._sock is None:
            self._refuse_if_open()
        try:
            return super().connect_check_health(*args, **kwargs)
        except RedisTimeoutError:
            self._trip()
            raise

    def send_packed_command(self, command, check_health=True):
        self._refuse_if_open()
        try:
            return super().send_packed_command(command, check_health=check_health)
        except RedisTimeoutError:
            self._trip()
            raise

    def read_response(self, *args, **kwargs):
        try:
            response = super().read_response(*args, **kwargs)
        except RedisTimeoutError:
            self._trip()
            raise
        if self._probing:
            self._probing = False
            breaker_reset(self._server())
        return response

    def _trip(self) -> None:
        self._probing = False
        breaker_trip(self._server())

    def disconnect(self, *args, **kwargs):
        self._probing = False  # a probe that ended without an answer leaves the breaker open
        return super().disconnect(*args, **kwargs)
