"""Fault: a Redis that stops answering (SIGSTOP: connections are accepted, nothing is answered).

Without timeouts every call waits for as long as Redis is paused. With them (config/settings.py,
config/redis_guard.py) the first call that times out costs one socket timeout, opens the server's
breaker, and every later call fails at once until a probe finds Redis answering again.
"""
import subprocess
import sys
import threading
import time

import pytest
from django.conf import settings

from common.redis_guard import breaker_clear, breaker_state
from config.celery import app
from tests.conftest import make_client
from tests.conversations.api_helpers import create_conversation
from tests.faults.conftest import post, wait_until

pytestmark = pytest.mark.django_db
ROOT = settings.BASE_DIR

# A liveness bound, not a latency figure (those come from bench/): a call that waited for the paused
# Redis would wait for as long as it stays paused. Figures in docs/reliability.md are not from tests.
LIVENESS_SECONDS = 10.0


@pytest.fixture
def paused_breakers():
    breaker_clear()
    yield
    breaker_clear()


def test_paused_cache_costs_one_timeout_then_nothing(org, redis_server, cache_on, settings, paused_breakers, monkeypatch):
    """Which calls waited is counted, not timed: a call waits only when a socket timeout trips the breaker."""
    from common import redis_guard

    settings.REDIS_BREAKER_SECONDS = 60.0  # no probe while the six calls run, however loaded the machine
    trips: list[tuple] = []
    real_trip = redis_guard.breaker_trip
    monkeypatch.setattr(redis_guard, "breaker_trip", lambda server: (trips.append(server), real_trip(server)))
    cache_on(redis_server.url(1))
    api = make_client(org, "u1")
    conversation = create_conversation(api)
    path = f"/api/v1/conversations/{conversation['id']}/messages"
    assert post(api, path, {"role": "user", "content": "I keep bees behind the orchard"}).status_code == 201
    redis_server.pause()
    try:
        waited, started = [], time.monotonic()
        for i in range(6):
            before = len(trips)
            response = post(api, path, {"role": "user", "content": f"The seed supplier delivers on day {i}"})
            waited.append(len(trips) - before)
            assert response.status_code == 201
        assert time.monotonic() - started < LIVENESS_SECONDS
        assert f"127.0.0.1:{redis_server.port}" in breaker_state()
        assert waited[0] >= 1 and waited[1:] == [0] * 5, waited  # the first pays a timeout, no later call waits
    finally:
        redis_server.resume()
    # Recovery through the probe: trip again with a short period instead of sleeping out the long one.
    settings.REDIS_BREAKER_SECONDS = 0.5
    real_trip(("127.0.0.1", redis_server.port))
    time.sleep(settings.REDIS_BREAKER_SECONDS)
    from django.core.cache import cache

    assert wait_until(lambda: cache.set("probe", 1) is not False and cache.get("probe") == 1, timeout=LIVENESS_SECONDS)
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
                assert time.monotonic() - started < LIVENESS_SECONDS  # gives up, never waits out the pause
        finally:
            redis_server.resume()


# ------------------------------------------------------------------------- the served app, paused Redis

PAUSE_SECONDS = 15
CLIENTS = 4
# The client gives up and retries (same Idempotency-Key) after this long: a liveness bound below the
# pause, so a request that waited for the paused Redis is caught; latency is for bench/, not this test.
CLIENT_TIMEOUT = LIVENESS_SECONDS


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else 0.0


@pytest.mark.service_only
@pytest.mark.django_db(transaction=True)
def test_appends_answer_within_the_bound_while_redis_is_paused(org, tmp_path, tally):
    """gunicorn (web, vector consumer) and a `celery worker -Q celery` on a redis-server of the test's
    own, which is both cache and broker. CLIENTS threads append messages; each client retries on a
    timeout, a connection error or a 5xx with the same Idempotency-Key, and every fourth message it
    also sends a second time as if the first answer had been lost. Redis is SIGSTOPped for
    PAUSE_SECONDS in the middle. Then: every attempt answered (none hit the client timeout) within
    LIVENESS_SECONDS (none waited for the pause), every message is stored exactly once, the repeats got the first answer, and after
    Redis resumes nothing is left pending extraction. What the paused broker did not take is queued
    again by the extraction-resume service, run here directly (`extraction_resume(older_than_seconds=0)`
    in the node's topology) instead of waiting for a beat or an embedded scheduler."""
    import httpx

    from conversations.models import Message
    from tenancy.services import api_key_create
    from tests.faults.conftest import RedisServer, duplicates
    from tests.memory.test_topology import Node

    redis_server = RedisServer(tmp_path / "redis").start()
    node = Node(tmp_path, broker=redis_server.url(0), cache=redis_server.url(1))
    node.env["CELERY_VISIBILITY_TIMEOUT"] = "5"
    counts = tally("redis paused 15s under appends (served app, client retries)")
    try:
        node.start("web", [sys.executable, "-m", "gunicorn", "config.wsgi", "-b", f"127.0.0.1:{node.port}", "-w", "1",
                           "--threads", "8", "--timeout", "120", "--no-control-socket"])
        node.start("worker", [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "celery", "--pool", "solo",
                              "-l", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat",
                              "-n", "stall@%h"])
        base = f"http://127.0.0.1:{node.port}"

        def ready() -> bool:
            try:
                body = httpx.get(f"{base}/readyz", timeout=2).json()
            except (httpx.HTTPError, ValueError):
                return False
            return body["checks"]["vector_consumer"]["status"] == "ok"

        assert wait_until(ready, timeout=120, interval=0.3), node.log("web")[-3000:]
        _, key = api_key_create(org=org, name="stall")
        phase = {"paused": False}
        attempts: list[dict] = []
        acknowledged: dict[str, int] = {}  # external_ref -> message id of the first 201
        replays_differing: list[str] = []
        errors: list[str] = []
        stop = threading.Event()

        def client(n: int) -> None:
            http = httpx.Client(base_url=base, timeout=CLIENT_TIMEOUT,
                                headers={"Authorization": f"Bearer {key}", "X-Memory-User": f"stall-{n}"})
            conversation = http.post("/api/v1/conversations", json={"external_id": f"stall-{n}"}).json()
            path = f"/api/v1/conversations/{conversation['id']}/messages"
            i = 0
            while not stop.is_set():
                ref = f"stall-{n}-{i}"
                body = {"role": "user", "content": f"{FACTS_FOR_STALL[(n + i) % len(FACTS_FOR_STALL)]} ({ref})",
                        "external_ref": ref}
                sends = 2 if i % 4 == 3 else 1  # the second send: the client never saw the first answer
                first_id = None
                for _ in range(sends):
                    for _try in range(6):
                        started = time.monotonic()
                        paused = phase["paused"]
                        try:
                            response = http.post(path, json=body, headers={"Idempotency-Key": ref})
                            status = response.status_code
                        except httpx.HTTPError as exc:
                            status = type(exc).__name__
                        attempts.append({"ms": (time.monotonic() - started) * 1000, "paused": paused, "status": status})
                        if status == 201:
                            message_id = response.json()["id"]
                            if first_id is None:
                                first_id = message_id
                            elif message_id != first_id:
                                replays_differing.append(ref)
                            break
                        if isinstance(status, int) and status < 500:
                            errors.append(f"{ref}: {status} {response.text[:200]}")
                            break
                        time.sleep(0.2)
                if first_id is not None:
                    acknowledged[ref] = first_id
                i += 1
            http.close()

        threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(CLIENTS)]
        for t in threads:
            t.start()
        time.sleep(4)
        redis_server.pause()
        phase["paused"] = True
        paused_at = time.monotonic()
        time.sleep(PAUSE_SECONDS)
        redis_server.resume()
        phase["paused"] = False
        paused_for = time.monotonic() - paused_at
        time.sleep(5)
        stop.set()
        for t in threads:
            t.join(timeout=30)

        # Recovery: the worker drains what was queued; what the paused broker never took is queued
        # again by the resume service (older_than_seconds=0: everything not yet extracted).
        resume = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c",
             "from memory.jobs.lost_work_resume import extraction_resume; print(extraction_resume(older_than_seconds=0))"],
            cwd=ROOT, env=node.env, capture_output=True, text=True, timeout=120)
        assert resume.returncode == 0, resume.stderr[-2000:]
        refs = list(acknowledged)
        pending = lambda: Message.objects.filter(org=org, external_ref__in=refs, extracted_at__isnull=True).count()  # noqa: E731
        drained = wait_until(lambda: pending() == 0, timeout=90, interval=0.5)

        during = [a["ms"] for a in attempts if a["paused"]]
        stored = Message.objects.filter(org=org, external_ref__isnull=False).count()
        counts.attempted = len(attempts)
        counts.succeeded = sum(a["status"] == 201 for a in attempts)
        counts.lost = len(set(refs) - set(Message.objects.filter(org=org, external_ref__in=refs)
                                          .values_list("external_ref", flat=True)))
        counts.duplicated = sum(duplicates(org, f"stall-{n}") for n in range(CLIENTS))
        counts.extra.update(
            paused_s=round(paused_for, 1), messages=len(refs), stored=stored,
            requests_while_paused=len(during), p50_ms_paused=round(_percentile(during, 0.5)),
            p95_ms_paused=round(_percentile(during, 0.95)), max_ms_paused=round(max(during, default=0)),
            max_ms_all=round(max(a["ms"] for a in attempts)),
            client_timeouts=sum(isinstance(a["status"], str) for a in attempts),
            non_201=sum(a["status"] != 201 for a in attempts), resume_requeued=resume.stdout.strip().splitlines()[-1],
            pending_after=pending())
        assert not errors, errors[:5]
        assert len(during) >= 20, "too few requests while Redis was paused to show anything"
        assert counts.extra["client_timeouts"] == 0 and counts.extra["non_201"] == 0, counts.line()
        assert counts.extra["max_ms_all"] < LIVENESS_SECONDS * 1000, counts.line()
        assert not replays_differing, replays_differing
        assert stored == len(refs) and counts.lost == 0 and counts.duplicated == 0, counts.line()
        assert drained, f"{pending()} messages still pending extraction\n" + node.log("worker")[-3000:]
    finally:
        node.stop()
        redis_server.close()


FACTS_FOR_STALL = [
    "The irrigation pump draws water from the river at night",
    "我们的拖拉机每年秋天在哈尔滨保养",
    "The seed supplier delivers on Fridays only",
    "我喜欢用微信接收通知",
    "Our greenhouse grows tomatoes and cucumbers all year",
    "The fuel tank holds three thousand litres",
]
