"""Fault: a Redis that stops answering (SIGSTOP: connections are accepted, nothing is answered).

Without timeouts every call waits for as long as Redis is paused. With them (config/settings.py,
config/redis_guard.py) the first call that times out costs one socket timeout, opens the server's
breaker, and every later call fails at once until a probe finds Redis answering again.
"""
import time

import pytest
from django.conf import settings

from config.celery import app
from config.redis_guard import breaker_clear, breaker_state
from tests.conftest import make_client
from tests.conversations.api_helpers import create_conversation
from tests.faults.conftest import post, wait_until

pytestmark = pytest.mark.django_db

# One socket timeout plus the publish retries (0.1 + 0.2 s) and some scheduling slack on 2 cores.
BOUND = settings.REDIS_SOCKET_TIMEOUT + 0.3 + 0.5


@pytest.fixture
def paused_breakers():
    breaker_clear()
    yield
    breaker_clear()


def test_paused_cache_costs_one_timeout_then_nothing(org, redis_server, cache_on, settings, paused_breakers):
    settings.REDIS_BREAKER_SECONDS = 2.0
    cache_on(redis_server.url(1))
    api = make_client(org, "u1")
    conversation = create_conversation(api)
    path = f"/api/v1/conversations/{conversation['id']}/messages"
    assert post(api, path, {"role": "user", "content": "I keep bees behind the orchard"}).status_code == 201
    redis_server.pause()
    try:
        times = []
        for i in range(6):
            started = time.monotonic()
            response = post(api, path, {"role": "user", "content": f"The seed supplier delivers on day {i}"})
            times.append(time.monotonic() - started)
            assert response.status_code == 201
        assert f"127.0.0.1:{redis_server.port}" in breaker_state()
        assert max(times) < BOUND, times
        assert sum(times[1:]) < max(times[0], 0.2) + 1.0, times  # after the first, no call waits
    finally:
        redis_server.resume()
    time.sleep(settings.REDIS_BREAKER_SECONDS)
    from django.core.cache import cache

    assert wait_until(lambda: cache.set("probe", 1) is not False and cache.get("probe") == 1, timeout=5)
    assert breaker_state() == {}


def test_paused_broker_publish_gives_up_within_the_bound(redis_server, paused_breakers, monkeypatch):
    """A publish to a paused broker, with the app's own transport options and retry policy, gives up
    within the bound (memory.enqueue turns the error into "not queued": the write still answers)."""
    from kombu.exceptions import OperationalError

    from memory.tasks import memory_touch

    monkeypatch.setitem(app.conf, "task_always_eager", False)

    with app.connection_for_write(redis_server.url(2)) as conn:
        memory_touch.apply_async(([1], "2026-01-01T00:00:00"), connection=conn)  # warm: connected
        redis_server.pause()
        try:
            for _ in range(3):
                started = time.monotonic()
                with pytest.raises(OperationalError):
                    memory_touch.apply_async(([1], "2026-01-01T00:00:00"), connection=conn)
                assert time.monotonic() - started < BOUND
        finally:
            redis_server.resume()
