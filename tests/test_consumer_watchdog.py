"""The vector consumer's watchdog (config/consumer_watchdog.py): when a consumer counts as stalled, what
it does about it, and what /readyz and the console say. The consumer thread itself is replaced by its
observable state here; tests/faults/test_vector_consumer_stall.py runs the real one against a paused Redis."""
import pytest
from django.urls import reverse

from config import consumer_watchdog, vector_consumer

STALL = 30.0


@pytest.fixture
def watched(monkeypatch, settings):
    """A consumer that is enabled and alive, a queue whose depth the test sets, restarts recorded."""
    settings.VECTOR_CONSUMER_STALL_SECONDS = STALL
    state = {"depth": 0, "restarts": []}

    def read_depth() -> int:
        if isinstance(state["depth"], Exception):
            raise state["depth"]
        return state["depth"]

    def restart(reason: str, **kwargs) -> None:
        state["restarts"].append(reason)
        vector_consumer.progress.update(restarts=vector_consumer.progress["restarts"] + 1,
                                        last_restart={"reason": reason})

    monkeypatch.setattr(vector_consumer, "vector_consumer_enabled", lambda: True)
    monkeypatch.setattr(vector_consumer, "consumer_alive", lambda: True)
    monkeypatch.setattr(vector_consumer, "restart_vector_consumer", restart)
    monkeypatch.setattr(consumer_watchdog, "_read_depth", read_depth)
    monkeypatch.setattr(vector_consumer, "progress", {"at": 0.0, "running_since": None, "task": None, "restarts": 0,
                                                       "last_restart": None})
    monkeypatch.setattr(consumer_watchdog, "sample", {"depth": None, "at": None, "waiting_since": None, "error": None})

    class Alive:
        def is_alive(self) -> bool:
            return True

    monkeypatch.setattr(consumer_watchdog, "_thread", Alive())
    return state


def health_at(monkeypatch, now: float) -> dict:
    monkeypatch.setattr(consumer_watchdog.time, "monotonic", lambda: now)
    return consumer_watchdog.vector_consumer_health()


def test_messages_waiting_without_a_delivery_for_the_stall_time_restart_the_consumer(watched, monkeypatch):
    watched["depth"] = 4
    vector_consumer.progress["at"] = 1000.0
    assert consumer_watchdog.watchdog_tick(now=1001.0) is None
    assert consumer_watchdog.watchdog_tick(now=1000.0 + STALL) is None  # not yet
    assert health_at(monkeypatch, 1000.0 + STALL).get("status") != "degraded"
    report = health_at(monkeypatch, 1002.0 + STALL)
    assert report["status"] == "degraded" and "4 message(s)" in report["reason"]
    reason = consumer_watchdog.watchdog_tick(now=1002.0 + STALL)
    assert reason and watched["restarts"] == [reason]


def test_work_arriving_after_a_long_idle_is_not_a_stall(watched):
    vector_consumer.progress["at"] = 0.0  # nothing consumed for an hour: the queue was empty
    watched["depth"] = 0
    consumer_watchdog.watchdog_tick(now=3600.0)
    watched["depth"] = 2
    assert consumer_watchdog.watchdog_tick(now=3602.0) is None
    assert consumer_watchdog.watchdog_tick(now=3602.0 + STALL - 1) is None
    assert watched["restarts"] == []
    assert consumer_watchdog.watchdog_tick(now=3603.0 + STALL)  # still nothing delivered: stalled


def test_deliveries_keep_it_alive_and_a_long_task_is_busy_not_stalled(watched):
    watched["depth"] = 5
    for now in range(0, 200, 10):
        vector_consumer.progress["at"] = float(now)  # a delivery every 10 s
        assert consumer_watchdog.watchdog_tick(now=float(now) + 5) is None
    vector_consumer.progress.update(running_since=200.0, task="memory.tasks.reembed_task")
    assert consumer_watchdog.watchdog_tick(now=200.0 + 10 * STALL) is None
    assert watched["restarts"] == []


def test_an_unreadable_broker_is_degraded_but_not_a_reason_to_restart(watched, monkeypatch):
    watched["depth"] = ConnectionError("circuit open")
    vector_consumer.progress["at"] = 0.0
    assert consumer_watchdog.watchdog_tick(now=500.0) is None
    report = health_at(monkeypatch, 500.5)
    assert report["status"] == "degraded" and report["reason"].startswith("broker unreachable")
    assert watched["restarts"] == []


def test_a_dead_consumer_thread_is_restarted(watched, monkeypatch):
    monkeypatch.setattr(vector_consumer, "consumer_alive", lambda: False)
    assert consumer_watchdog.watchdog_tick(now=10.0) == "consumer thread not running"
    with pytest.raises(RuntimeError):
        consumer_watchdog.vector_consumer_health()


def test_readyz_and_the_console_show_a_stalled_consumer(watched, monkeypatch, client, admin_client, db):
    watched["depth"] = 7
    vector_consumer.progress["at"] = 100.0
    consumer_watchdog.watchdog_tick(now=101.0)
    monkeypatch.setattr(consumer_watchdog.time, "monotonic", lambda: 102.0 + STALL)
    consumer_watchdog.sample["at"] = 102.0 + STALL  # sampled just now
    body = client.get("/readyz").json()
    assert body["checks"]["vector_consumer"]["status"] == "degraded"
    assert body["checks"]["vector_consumer"]["depth"] == 7
    page = admin_client.get(reverse("console:health")).content.decode()
    row = page[page.index("vector consumer"):]
    assert "degraded" in row[:400] and "holds 7 message(s)" in row[:1200]
