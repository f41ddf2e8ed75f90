"""Writes under contention, against the served app (gunicorn -w 1 --threads 8, as `make run`):
many clients at once, each its own user and conversation. A write answers 201 if and only if it
committed, each committed message is stored once and extracted once, and lock contention is never
answered as an outage. Runs on both profiles (SQLite file database / MariaDB + Redis + a worker)."""
import uuid

import pytest

from tests.faults.conftest import wait_until
from tests.reliability.served import SERVICE_PROFILE, Served, concurrent_appends

CLIENTS = 8
MESSAGES = 6


@pytest.fixture
def served(tmp_path):
    node = Served(tmp_path)
    try:
        node.prepare()
        node.start_worker()
        node.start_web()
        yield node
    finally:
        node.close()


@pytest.mark.django_db(transaction=True)  # the service profile's processes use the test database
def test_healthz_answers_at_once_and_readyz_waits_for_the_models(served):
    """The port answers while the models load: /healthz 200, /readyz 503 `warmup: loading`."""
    seen = []

    def observe() -> bool:
        import httpx

        try:
            health = httpx.get(f"{served.url}/healthz", timeout=2).status_code
        except httpx.HTTPError:
            return False
        code, body = served.readyz()
        seen.append((health, code, body.get("checks", {}).get("warmup", {}).get("state")))
        return code == 200

    assert wait_until(observe, timeout=120, interval=0.1), served.logs()
    # The first answer came before warm-up finished (loading the models takes seconds).
    assert seen[0][0] == 200 and seen[0][1] == 503 and seen[0][2] == "loading", seen[:3]
    assert seen[-1] == (200, 200, "ready")


@pytest.mark.django_db(transaction=True)  # the service profile's processes use the test database
def test_concurrent_clients_get_201_iff_committed_and_every_message_is_extracted_once(served):
    served.wait_ready()
    prefix = uuid.uuid4().hex[:8]

    load = concurrent_appends(served, clients=CLIENTS, messages=MESSAGES, prefix=prefix)

    assert len(load.outcomes) == CLIENTS * MESSAGES
    server_errors = [o for o in load.outcomes if o.status >= 500 or o.status == 0]
    assert not server_errors, (server_errors[:5], served.logs())
    stored = served.stored_refs(prefix)
    created = {o.ref for o in load.outcomes if o.status == 201}
    refused = {o.ref for o in load.outcomes if o.status != 201}
    assert all(stored[ref] == 1 for ref in created), {r: stored[r] for r in created if stored[r] != 1}
    assert not [ref for ref in refused if stored[ref]], "an error answer committed a message"
    assert set(stored) == created
    # Drained: nothing pending extraction, and each message became exactly one episode.
    assert wait_until(lambda: served.pending() == 0, timeout=90, interval=0.5), (served.pending(), served.logs())
    episodes = served.episodes_per_message(prefix)
    assert {ref: episodes[ref] for ref in created if episodes[ref] != 1} == {}
    code, body = served.readyz()
    assert code == 200 and body["checks"]["extraction"]["messages"] == 0
    assert body["checks"]["extraction"]["oldest_pending_seconds"] is None
    print(f"CONCURRENCY profile={'service' if SERVICE_PROFILE else 'embedded'} clients={CLIENTS} "
          f"codes={dict(load.codes())} committed_but_failed=0 pending_after_drain=0")
