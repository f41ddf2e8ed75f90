"""The real path through a Celery worker: API append → extraction task → memory_write → projection
task. Embedded profile: in-memory broker; service profile: Redis broker and MariaDB. The worker runs
in this process, so it shares the embedded vector shard with the test (one process per shard)."""
import threading
import time

import pytest
from celery.signals import task_postrun
from django.db import OperationalError
from django.db.models import F

from conversations.models import Message
from memory.models import Memory
from memory.vector_index import get_vector_index
from memory.vectors import active_collection
from tenancy.db import is_contention
from tests.conversations.api_helpers import create_conversation

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

TIMEOUT_SECONDS = 60


@pytest.fixture
def index(own_index):
    return own_index


@pytest.fixture
def worker_ran():
    """Names of the tasks that ran on a thread other than the test's: proof the worker did the work."""
    ran: list[str] = []
    main = threading.current_thread()

    def record(sender=None, **kwargs) -> None:
        if threading.current_thread() is not main:
            ran.append(sender.name)

    task_postrun.connect(record, weak=False)
    yield ran
    task_postrun.disconnect(record)


def wait_until(condition, timeout: float = TIMEOUT_SECONDS) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _holds(condition):
            return True
        time.sleep(0.2)
    return condition()


def _holds(condition) -> bool:
    """The embedded profile's test database is shared-cache in-memory SQLite, where a read that meets
    the worker's write transaction fails at once with "table is locked" (no busy timeout in that mode):
    that poll simply has not seen the result yet."""
    try:
        return condition()
    except OperationalError as exc:
        if is_contention(exc):
            return False
        raise


def test_appended_messages_are_extracted_and_projected_by_the_worker(index, celery_worker_session, worker_ran, api,
                                                                     org):
    conversation = create_conversation(api)
    response = api.post(f"/api/v1/conversations/{conversation['id']}/messages/batch", {"messages": [
        {"role": "user", "content": "I prefer short answers with bullet points."},
        {"role": "user", "content": "My harvester is serviced in Harbin every spring."},
    ]}, format="json")
    assert response.status_code == 201, response.content
    message_ids = [m["id"] for m in response.json()]

    def done() -> bool:
        extracted = not Message.objects.filter(id__in=message_ids, extracted_at__isnull=True).exists()
        memories = Memory.objects.filter(org=org, user_id="u1")
        return extracted and memories.exists() and not memories.filter(projected_version__lt=F("version")).exists()

    assert wait_until(done), "the worker did not extract and project the messages in time"
    active = set(Memory.objects.filter(org=org, user_id="u1", status="active").values_list("id", flat=True))
    assert len(active) >= 2  # at least one episode per message
    stored = dict(get_vector_index().scroll(collection=active_collection()))
    assert active <= set(stored)
    versions = dict(Memory.objects.filter(id__in=active).values_list("id", "version"))
    assert all(stored[memory_id]["version"] == versions[memory_id] for memory_id in active)
    assert "memory.tasks.messages_extract" in worker_ran
    # A batch's writes are projected by one memories_sync task (memory/enqueue.py, projections_deferred).
    assert {"memory.tasks.memory_sync", "memory.tasks.memories_sync"} & set(worker_ran)


def test_a_memory_written_through_the_api_is_projected_by_the_worker(index, celery_worker_session, worker_ran, api,
                                                                     org):
    response = api.post("/api/v1/memories", {"kind": "preference", "content": "The user wants invoices as PDF"},
                        format="json")
    assert response.status_code in (200, 201), response.content
    memory_id = response.json()["memory"]["id"]

    assert wait_until(lambda: Memory.objects.filter(id=memory_id, projected_version=F("version")).exists())
    assert memory_id in dict(get_vector_index().scroll(collection=active_collection()))

    updated = api.patch(f"/api/v1/memories/{memory_id}", {"content": "The user wants invoices as PDF by email"},
                        format="json")
    assert updated.status_code == 200 and updated.json()["version"] == 2

    assert wait_until(lambda: Memory.objects.filter(id=memory_id, projected_version=2).exists())
    assert dict(get_vector_index().scroll(collection=active_collection()))[memory_id]["version"] == 2
    assert worker_ran.count("memory.tasks.memory_sync") >= 2
