"""The in-process maintenance scheduler (memory/jobs/scheduler_thread.py) and what it reports.

An append whose extraction fails after COMMIT still answers 201 and leaves the message pending
(`extracted_at` NULL); the scheduler's sweep finishes it, records the run, and /readyz and the
console show pending work and the last runs."""
import fcntl

import pytest
from django.db import OperationalError
from django.urls import reverse

from conversations.models import Message
from memory.jobs import scheduler_thread as scheduler
from memory.models import Memory
from tests.faults.conftest import server_client, wait_until


@pytest.fixture
def own_var(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    settings.MAINTENANCE_SCHEDULER = "all"
    settings.MAINTENANCE_REEMBED = False
    yield tmp_path
    scheduler.stop_scheduler()


def failing_extraction(monkeypatch):
    """The fault: extraction after COMMIT hits a locked database (as under write contention)."""
    from memory.services import extraction

    def locked(**kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr(extraction, "messages_extract", locked)
    return lambda: monkeypatch.undo()


@pytest.mark.django_db(transaction=True)
def test_a_failed_extraction_after_commit_answers_201_and_the_sweep_finishes_it(org, own_var, own_index,
                                                                                monkeypatch, settings):
    settings.MAINTENANCE_START_DELAY_SECONDS = 0  # the scans too, at once (they wait two minutes by default)
    client = server_client(org, user="u1")
    conversation = client.post("/api/v1/conversations", {"title": "t"}, format="json").json()["id"]
    heal = failing_extraction(monkeypatch)
    response = client.post(f"/api/v1/conversations/{conversation}/messages",
                           {"role": "user", "content": "I prefer tea over coffee."}, format="json")
    assert response.status_code == 201, response.content
    message = Message.objects.get(id=response.json()["id"])
    assert message.extracted_at is None  # committed, pending
    ready = client.get("/readyz").json()["checks"]["extraction"]
    assert ready["messages"] == 1 and ready["oldest_pending_seconds"] >= 0
    heal()

    assert scheduler.start_scheduler()
    # Generous: the sweep thread may be loading the embedding model on a busy machine.
    assert wait_until(lambda: Message.objects.get(id=message.id).extracted_at is not None, timeout=90)
    assert Memory.objects.filter(kind="episode", sources__message_id=message.id).count() == 1
    checks = client.get("/readyz").json()["checks"]
    assert checks["extraction"] == {"status": "ok", "ms": checks["extraction"]["ms"], "messages": 0,
                                    "oldest_pending_seconds": None}
    assert wait_until(lambda: client.get("/readyz").json()["checks"]["maintenance"]["jobs"]["sqlite_analyze"],
                      timeout=60, interval=0.2)
    jobs = client.get("/readyz").json()["checks"]["maintenance"]["jobs"]
    assert jobs["extraction_resume"]["ok"] and jobs["extraction_resume"]["where"].startswith("web:")
    assert {name for name, run in jobs.items() if run} >= {"extraction_resume", "projections_reconcile",
                                                           "memories_expire", "memories_evict", "sqlite_analyze"}


@pytest.mark.django_db
def test_only_one_process_runs_the_scheduler(own_var):
    with open(own_var / "maintenance-scheduler.lock", "a+") as other:  # another process holds the lock
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert not scheduler.start_scheduler()
        assert scheduler.scheduler_status()["in_this_process"] is False
        fcntl.flock(other, fcntl.LOCK_UN)
    assert scheduler.start_scheduler()
    assert not scheduler.start_scheduler()  # already running here
    assert scheduler.scheduler_status() == {"mode": "all", "in_this_process": True}


@pytest.mark.django_db
def test_scheduler_off_starts_nothing(own_var, settings):
    settings.MAINTENANCE_SCHEDULER = "off"
    assert not scheduler.start_scheduler()


@pytest.mark.django_db
def test_the_console_health_page_shows_pending_extraction_and_job_runs(admin_client, org):
    from memory.jobs.run_records import maintenance_run

    maintenance_run("memories_expire", lambda: 3, where="web:test")
    page = admin_client.get(reverse("console:health")).content.decode()
    section = page[page.index('id="maintenance"'):page.index('id="counts"')]
    assert "Pending extraction: 0 messages" in section
    assert "memories_expire" in section and "web:test" in section and "not run yet" in section


@pytest.mark.django_db(transaction=True)
def test_changing_embedding_model_schedules_a_reembed_on_the_embedded_default(org, own_var, own_index, settings):
    from memory.models import VectorCollection
    from memory.services.memories import MemoryInput, memory_write

    written = memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content="The user's farm is in Qiqihar.")).memory
    old = VectorCollection.live()
    assert old is not None and old.model_name == settings.EMBEDDING_MODEL
    settings.EMBEDDING_MODEL, settings.MAINTENANCE_REEMBED = "minilm", True
    settings.MAINTENANCE_START_DELAY_SECONDS = 0

    assert scheduler.start_scheduler()

    def switched() -> bool:
        VectorCollection.forget_cached_live()
        return VectorCollection.live().id != old.id

    assert wait_until(switched, timeout=120, interval=0.5)
    live = VectorCollection.live()
    assert live.model_id == "st:all-MiniLM-L6-v2"
    assert written.id in {pid for pid, _ in own_index.scroll(collection=live.name, batch=100)}
    assert wait_until(lambda: (scheduler_runs().get("reembed") or {}).get("ok"), timeout=30)


def scheduler_runs() -> dict:
    from memory.jobs.run_records import maintenance_runs

    return maintenance_runs()
