"""Redis (cache and broker) restarted empty: the queued extraction tasks are gone. Everything
committed around the outage must still be extracted, within a minute of the restart, with no beat
process: the web process's extraction sweep finds the pending messages (`extracted_at` NULL,
written in each message's own transaction) and queues them again (memory/jobs/scheduler_thread.py).

Service profile only (the embedded default has no broker). The processes are the documented
single-node set: gunicorn (one worker, threads) and one `celery worker -Q celery`; a redis-server
of the test's own is both cache and broker, so the test can SIGKILL it."""
import time
import uuid

import pytest

from tests.faults.conftest import wait_until
from tests.reliability.served import Served

BEFORE, DURING = 16, 8


@pytest.fixture
def served(tmp_path):
    node = Served(tmp_path)
    try:
        node.prepare()
        node.start_worker()
        node.start_web()
        node.wait_ready()
        yield node
    finally:
        node.close()


def append(http, conversation_id: int, ref: str) -> int:
    response = http.post(f"/api/v1/conversations/{conversation_id}/messages",
                         json={"role": "user", "content": f"Remember that pump {ref} is serviced every spring.",
                               "external_ref": ref})
    return response.status_code


@pytest.mark.service_only
@pytest.mark.django_db(transaction=True)
def test_redis_restarted_empty_everything_is_extracted_within_a_minute_without_beat(served, tally):
    t = tally("Redis (broker) restarted empty, no beat: appends")
    prefix = uuid.uuid4().hex[:8]
    codes = {}
    with served.client("lost-queue") as http:
        conversation_id = http.post("/api/v1/conversations", json={"title": "lost queue"}).json()["id"]
        served.stop("worker")  # tasks now wait in the broker's queue
        for i in range(BEFORE):
            codes[f"{prefix}-b{i}"] = append(http, conversation_id, f"{prefix}-b{i}")
        assert served.pending() >= BEFORE
        served.redis.kill()  # the queue with them is gone
        for i in range(DURING):
            started = time.monotonic()
            codes[f"{prefix}-d{i}"] = append(http, conversation_id, f"{prefix}-d{i}")
            t.extra["slowest_during_s"] = round(max(t.extra.get("slowest_during_s", 0), time.monotonic() - started), 2)
        served.redis.start()  # empty: no persistence
        restarted = time.monotonic()
        served.start_worker()

    t.attempted = len(codes)
    t.succeeded = sum(code == 201 for code in codes.values())
    stored = served.stored_refs(prefix)
    assert all(code == 201 for code in codes.values()), codes
    assert wait_until(lambda: served.pending() == 0, timeout=60, interval=0.5), (served.pending(), served.logs())
    t.extra["extracted_within_s"] = round(time.monotonic() - restarted, 1)
    episodes = served.episodes_per_message(prefix)
    t.lost = sum(1 for ref in codes if stored[ref] != 1 or episodes[ref] == 0)
    t.duplicated = sum(stored[ref] - 1 for ref in stored if stored[ref] > 1) + \
        sum(n - 1 for n in episodes.values() if n > 1)
    assert t.lost == 0 and t.duplicated == 0
    code, body = served.readyz()
    assert code == 200 and body["checks"]["extraction"]["messages"] == 0
    assert body["checks"]["maintenance"]["jobs"]["extraction_resume"]["where"].startswith("web:")
