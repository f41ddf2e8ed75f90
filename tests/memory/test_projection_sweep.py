"""The projection sweep (issue 42, part 3): a row whose projection task was lost (the publish failed,
the broker lost its queue, a kill between commit and publish) keeps projected_version < version, the
durable marker written with the version; `projections_resume` (run by the web process's scheduler
thread, memory/jobs/scheduler_thread.py) queues it again, here eagerly as on the embedded default."""
from datetime import timedelta

import pytest
from django.db.models import F
from django.utils import timezone

from memory import enqueue
from memory.jobs import scheduler_thread as scheduler
from memory.jobs.lost_work_resume import projections_resume
from memory.models import Memory
from memory.projections import memories_sync
from memory.services.memories import MemoryInput, memory_create, memory_invalidate

pytestmark = pytest.mark.django_db


@pytest.fixture
def broker_down(monkeypatch):
    """What the write path sees while the broker refuses publishes: enqueue answers "not queued"."""
    lost: list[tuple] = []

    def refused(name, *args) -> bool:
        lost.append((name, args))
        return False

    monkeypatch.setattr(enqueue, "enqueue", refused)
    yield lost
    monkeypatch.undo()


def write(org, content: str, django_capture_on_commit_callbacks) -> Memory:
    with django_capture_on_commit_callbacks(execute=True):
        outcome = memory_create(MemoryInput(org=org, user_id="u1", kind="fact", content=content))
    return Memory.objects.get(id=outcome.memory.id)


def age(*memory_ids: int, seconds: int = 120) -> None:
    Memory.objects.filter(id__in=memory_ids).update(updated_at=timezone.now() - timedelta(seconds=seconds))


def lagging() -> set[int]:
    return set(Memory.objects.filter(projected_version__lt=F("version")).values_list("id", flat=True))


def test_a_lost_projection_is_queued_again_and_lands(org, own_index, broker_down, django_capture_on_commit_callbacks):
    old = write(org, "The irrigation pump draws water from the river at night", django_capture_on_commit_callbacks)
    young = write(org, "Our greenhouse grows tomatoes and cucumbers all year", django_capture_on_commit_callbacks)
    assert broker_down and lagging() == {old.id, young.id}
    age(old.id)
    broker_down.clear()

    counts = projections_resume(older_than_seconds=30)
    # The broker answers again (the patch only replaced memory.enqueue.enqueue; the sweep's chunks go
    # through memory.jobs.lost_work_resume, whose enqueue is the real one, eager here).
    assert counts["synced"] == 1 and counts["not_queued"] == 0
    assert lagging() == {young.id}  # the young row is left to its own task
    assert own_index.count() == 1
    age(young.id)
    assert projections_resume(older_than_seconds=30)["synced"] == 1
    assert lagging() == set() and own_index.count() == 2


def test_a_row_no_longer_active_loses_its_point_everywhere(org, own_index, django_capture_on_commit_callbacks, monkeypatch):
    memory = write(org, "I keep bees behind the orchard", django_capture_on_commit_callbacks)
    assert own_index.count() == 1 and not lagging()
    monkeypatch.setattr(enqueue, "enqueue", lambda name, *args: False)
    with django_capture_on_commit_callbacks(execute=True):
        memory_invalidate(memory_id=memory.id, reason="test", actor="t")
    monkeypatch.undo()
    assert lagging() == {memory.id} and own_index.count() == 1  # the point of an invalidated memory remains
    age(memory.id)
    assert projections_resume(older_than_seconds=30)["deleted"] == 1
    assert not lagging() and own_index.count() == 0


def test_the_sweep_does_not_queue_the_same_version_twice_within_a_minute(org, own_index, broker_down,
                                                                          django_capture_on_commit_callbacks, monkeypatch):
    memory = write(org, "The seed supplier delivers on Fridays only", django_capture_on_commit_callbacks)
    age(memory.id)
    queued: list[tuple] = []
    monkeypatch.setattr("memory.jobs.lost_work_resume.enqueue", lambda name, *args: queued.append((name, args)) or True)
    scheduler._projections_queued.clear()
    assert scheduler._projection_sweep()["synced"] == 1
    assert scheduler._projection_sweep()["synced"] == 0  # still lagging (nothing ran), but queued moments ago
    assert len(queued) == 1 and queued[0][1][1] is True  # lagging_only
    scheduler._projections_queued.clear()


def test_a_refused_chunk_stays_lagging_for_the_next_sweep(org, own_index, broker_down, django_capture_on_commit_callbacks,
                                                          monkeypatch):
    memory = write(org, "The fuel tank holds three thousand litres", django_capture_on_commit_callbacks)
    age(memory.id)
    monkeypatch.setattr("memory.jobs.lost_work_resume.enqueue", lambda name, *args: False)
    scheduler._projections_queued.clear()
    assert scheduler._projection_sweep() == {"synced": 0, "deleted": 0, "not_queued": 1}
    assert scheduler._projections_queued == {}  # not remembered: the next sweep tries again
    monkeypatch.undo()
    assert scheduler._projection_sweep()["synced"] == 1 and not lagging()
    scheduler._projections_queued.clear()


def test_lagging_only_skips_a_row_its_own_task_already_projected(org, own_index, django_capture_on_commit_callbacks):
    memory = write(org, "My insurance policy renews every March", django_capture_on_commit_callbacks)
    assert not lagging()
    assert memories_sync(pairs=[(memory.id, memory.version)], lagging_only=True) == {"skipped": 1}
    assert memories_sync(pairs=[(memory.id, memory.version)])["upserted"] == 1
