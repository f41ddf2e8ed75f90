"""memory/jobs/lost_work_resume.py: reconcile, rebuild, re-embed, resume of lost work, beat schedule, commands."""
from datetime import timedelta
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.db.models import F
from django.utils import timezone

from conversations.models import Message
from conversations.services import conversation_create, messages_append
from memory.jobs.lost_work_resume import extraction_resume
from memory.models import ForgetRequest, Memory, MemoryEmbedding, VectorCollection
from memory.projections.batch import DimensionMismatch, single_flight
from memory.projections.rebuild import projections_rebuild
from memory.projections.reconcile import projections_reconcile
from memory.projections.reembed import reembed
from memory.recall import RecallQuery, recall
from memory.services.memories import MemoryInput, memory_invalidate, memory_update, memory_write
from memory.vector_index import VectorPoint
from memory.vectors import active_collection, active_embedder, to_bytes

pytestmark = pytest.mark.django_db

MINILM_COLLECTION = "memories__st-all-minilm-l6-v2__384"
FACTS = [
    "The user's harvester is serviced every spring in Harbin",
    "The user prefers maintenance reports sorted by urgency",
    "The user's tractor fleet has twelve machines",
    "The user works night shifts on weekends",
    "The user's dealer for spare parts is in Changchun",
    "The user wants invoices sent as PDF",
]


@pytest.fixture
def index(own_index):
    return own_index


@pytest.fixture
def write(org, django_capture_on_commit_callbacks):
    def _write(content: str, *, user: str = "u1", kind: str = "fact", project: bool = True) -> Memory:
        inp = MemoryInput(org=org, user_id=user, kind=kind, content=content)
        if project:
            with django_capture_on_commit_callbacks(execute=True):
                outcome = memory_write(inp)
        else:
            outcome = memory_write(inp)
        assert outcome.action == "added", outcome.action
        return Memory.objects.get(id=outcome.memory.id)

    return _write


def points(index, collection: str | None = None) -> dict[int, dict]:
    return dict(index.scroll(collection=collection or active_collection()))


def bogus_point(point_id: int, dim: int) -> VectorPoint:
    vector = np.ones(dim, dtype=np.float32) / np.sqrt(dim)
    return VectorPoint(point_id=point_id, vector=vector, payload={"org": "1", "user_id": "u1", "version": 1})


# ---------------------------------------------------------------------------------- reconcile


def test_reconcile_finds_and_fixes_missing_stale_and_orphan_points(index, write):
    a, b, c, d = (write(text) for text in FACTS[:4])
    live = active_collection()
    dim = VectorCollection.live().dim
    index.delete([a.id], collection=live)  # missing
    Memory.objects.filter(id=b.id).update(version=F("version") + 1)  # stale: a write whose sync was lost
    index.upsert([bogus_point(987_654, dim)], collection=live)  # orphan: no such memory
    old_payload = {**points(index)[c.id], "version": 0}  # stale: an old point written over a newer one
    index.upsert([VectorPoint(point_id=c.id, vector=bogus_point(c.id, dim).vector, payload=old_payload)], collection=live)
    Memory.objects.filter(id=d.id).update(status="forgotten", content="", active_hash=None, version=F("version") + 1)

    report = projections_reconcile(fix=False)

    assert {k: report[k] for k in ("checked", "points", "missing", "stale", "orphan", "fixed")} == {
        "checked": 3, "points": 4, "missing": 1, "stale": 2, "orphan": 2, "fixed": 0}
    assert set(points(index)) == {b.id, c.id, d.id, 987_654}  # a dry run changes nothing

    fixed = projections_reconcile(fix=True)

    assert fixed["fixed"] == 5
    assert set(points(index)) == {a.id, b.id, c.id}
    assert points(index)[b.id]["version"] == 2 and points(index)[c.id]["version"] == 1
    assert {m.id: m.projected_version == m.version for m in Memory.objects.all()} == {
        a.id: True, b.id: True, c.id: True, d.id: True}
    again = projections_reconcile(fix=True)
    assert (again["missing"], again["stale"], again["orphan"], again["fixed"]) == (0, 0, 0, 0)


def test_reconcile_leaves_rows_inside_the_grace_period_to_their_own_tasks(index, write):
    pending = write(FACTS[0], project=False)
    updated = write(FACTS[1])
    memory_update(memory_id=updated.id, content=FACTS[1] + " too", actor="test")  # v2, its sync not yet run

    graced = projections_reconcile(fix=True, grace_seconds=60)

    assert (graced["missing"], graced["stale"], graced["fixed"]) == (0, 0, 0)
    assert pending.id not in points(index) and points(index)[updated.id]["version"] == 1
    report = projections_reconcile(fix=False)
    assert (report["missing"], report["stale"]) == (1, 1)


def test_reconcile_points_the_index_back_at_the_live_collection(index, write):
    write(FACTS[0])
    live = active_collection()
    index.ensure_collection("memories__other__8", 8)
    index.set_live("memories__other__8")

    projections_reconcile(fix=True)

    assert index.live_collection() == live


def test_reconcile_command_dry_run_prints_counts_and_changes_nothing(index, write):
    memory = write(FACTS[0])
    index.delete([memory.id], collection=active_collection())
    out = StringIO()

    call_command("reconcile_projections", "--dry-run", stdout=out)

    lines = dict(line.split(maxsplit=1) for line in out.getvalue().splitlines() if " " in line and ":" not in line)
    assert lines["missing"] == "1" and lines["fixed"] == "0"
    assert memory.id not in points(index)
    call_command("reconcile_projections", stdout=StringIO())
    assert memory.id in points(index)


def test_reconcile_task_skips_a_run_while_another_holds_the_lock(index, write):
    from memory.tasks import projections_reconcile_task

    memory = write(FACTS[0])
    index.delete([memory.id], collection=active_collection())
    with single_flight("projections_reconcile", timeout=60) as acquired:
        assert acquired
        assert projections_reconcile_task.apply().get() == {"skipped": "already running"}
    # Rows written in the last 30 s are left to their own tasks, so age this one first.
    Memory.objects.filter(id=memory.id).update(updated_at=timezone.now() - timedelta(minutes=5))

    result = projections_reconcile_task.apply().get()

    assert result["missing"] == 1 and result["fixed"] == 1
    assert memory.id in points(index)


# ---------------------------------------------------------------------------------- rebuild


def test_rebuild_from_an_empty_collection_restores_every_point(index, write):
    memories = [write(text) for text in FACTS[:5]]
    gone = memories.pop()
    memory_invalidate(memory_id=gone.id, reason="wrong", actor="test")  # not active, still lagging
    MemoryEmbedding.objects.filter(memory_id=memories[0].id).delete()  # its vector must be encoded again
    live = active_collection()
    index.drop_collection(live)
    index.ensure_collection(live, VectorCollection.live().dim)
    index.upsert([bogus_point(987_654, VectorCollection.live().dim)], collection=live)
    calls = []

    report = projections_rebuild(progress=lambda done, total: calls.append((done, total)), batch=2, optimize=False)

    assert report["total"] == 4 and report["upserted"] == 4 and report["encoded"] == 1
    assert report["orphans_deleted"] == 1 and report["settled"] == 1
    assert calls == [(2, 4), (4, 4)]
    stored = points(index)
    assert set(stored) == {m.id for m in memories}
    assert all(stored[m.id]["version"] == m.version for m in memories)
    assert not Memory.objects.filter(projected_version__lt=F("version")).exists()
    assert MemoryEmbedding.objects.filter(memory_id=memories[0].id).exists()
    report = projections_reconcile(fix=False)
    assert (report["missing"], report["stale"], report["orphan"]) == (0, 0, 0)


def test_rebuild_twice_gives_the_same_points(index, write):
    for text in FACTS[:3]:
        write(text)
    projections_rebuild(optimize=False)
    first = points(index)

    report = projections_rebuild(optimize=True)

    assert points(index) == first and report["encoded"] == 0 and report["orphans_deleted"] == 0


def test_rebuild_command_runs_with_a_progress_bar(index, write):
    memory = write(FACTS[0])
    index.delete([memory.id], collection=active_collection())
    out, err = StringIO(), StringIO()

    call_command("rebuild_projections", "--no-optimize", stdout=out, stderr=err)

    assert memory.id in points(index)
    assert "upserted" in out.getvalue() and "1/1" in err.getvalue()


# ---------------------------------------------------------------------------------- re-embed


def test_reembed_builds_a_new_collection_and_switches_while_recall_keeps_answering(index, write, org,
                                                                                  django_capture_on_commit_callbacks):
    memories = [write(text) for text in FACTS]
    old = active_collection()
    during = []
    added = []

    def progress(done: int, total: int) -> None:
        # Between batches: recall still answers from the old collection, and writes keep coming.
        result = recall(RecallQuery(org=org, user_id="u1", query="where is the harvester serviced"))
        during.append((done, total, VectorCollection.live().name, result.degraded, result.items[0].memory.id,
                       result.items[0].parts["semantic"]))
        if not added:
            # memories[0] and [1] are already in the new collection: only the catch-up can bring these in.
            added.append(write("The user's combine needs new tires"))
            with django_capture_on_commit_callbacks(execute=True):
                memory_invalidate(memory_id=memories[1].id, reason="wrong", actor="test")
                memory_update(memory_id=memories[0].id, content=FACTS[0] + " and in Daqing", actor="test")

    report = reembed(model="minilm", progress=progress, batch=2, optimize=False)

    assert report["collection"] == MINILM_COLLECTION and report["previous"] == old
    assert [row[:2] for row in during] == [(2, 6), (4, 6), (6, 6), (7, 7)]  # the 7th was written during the build
    assert all(name == old and not degraded and top == memories[0].id and semantic > 0
               for _, _, name, degraded, top, semantic in during)
    states = dict(VectorCollection.objects.values_list("name", "state"))
    assert states == {old: "retired", MINILM_COLLECTION: "live"}
    assert index.live_collection() == MINILM_COLLECTION and active_embedder().model_id == "st:all-MiniLM-L6-v2"
    expected = {m.id for m in memories if m.id != memories[1].id} | {added[0].id}  # caught up with the changes
    assert set(points(index, MINILM_COLLECTION)) == expected
    assert points(index, MINILM_COLLECTION)[memories[0].id]["version"] == 2
    assert MemoryEmbedding.objects.filter(model_id="st:all-MiniLM-L6-v2", memory_id__in=expected).count() == len(expected)
    assert index.count(collection=old) > 0  # retired, kept for a rollback

    after = recall(RecallQuery(org=org, user_id="u1", query="where is the harvester serviced"))
    assert not after.degraded and after.items[0].memory.id == memories[0].id and after.items[0].parts["semantic"] > 0
    fresh = write("The user's irrigation pumps are checked monthly")  # projected into the new collection
    assert points(index, MINILM_COLLECTION)[fresh.id]["model_id"] == "st:all-MiniLM-L6-v2"
    report = projections_reconcile(fix=False)
    assert report["collection"] == MINILM_COLLECTION and (report["missing"], report["stale"], report["orphan"]) == (0, 0, 0)


def _assert_live_untouched(index, old: str, count: int) -> None:
    assert VectorCollection.live().name == old and index.live_collection() == old
    assert index.count(collection=old) == count


def test_reembed_refuses_a_collection_whose_dimension_does_not_match(index, write):
    for text in FACTS[:3]:
        write(text)
    old = active_collection()
    VectorCollection.objects.create(name=MINILM_COLLECTION, model_name="minilm", model_id="st:all-MiniLM-L6-v2",
                                    dim=512, state="retired")

    with pytest.raises(DimensionMismatch):
        reembed(model="minilm", optimize=False)

    _assert_live_untouched(index, old, 3)
    assert MINILM_COLLECTION not in index.collections()
    assert VectorCollection.objects.get(name=MINILM_COLLECTION).state == "retired"


def test_reembed_checks_stored_vectors_before_any_upsert(index, write):
    memories = [write(text) for text in FACTS[:3]]
    old = active_collection()
    MemoryEmbedding.objects.create(memory=memories[1], model_id="st:all-MiniLM-L6-v2", version=memories[1].version,
                                   vector=to_bytes(np.ones(512, dtype=np.float32)))  # a vector of another model

    with pytest.raises(DimensionMismatch):
        reembed(model="minilm", optimize=False)

    _assert_live_untouched(index, old, 3)
    assert index.count(collection=MINILM_COLLECTION) == 0


def test_reembed_command_switches_and_reports(index, write):
    memory = write(FACTS[0])
    out = StringIO()

    call_command("reembed", "--model", "minilm", "--batch", "8", stdout=out, stderr=StringIO())

    assert f"collection {MINILM_COLLECTION}" in " ".join(out.getvalue().split())
    assert VectorCollection.live().name == MINILM_COLLECTION
    assert set(points(index, MINILM_COLLECTION)) == {memory.id}


def test_reembed_to_the_live_model_is_refused(index, write, settings):
    write(FACTS[0])

    with pytest.raises(ValueError, match="already live"):
        reembed(model=settings.EMBEDDING_MODEL)


# ---------------------------------------------------------------------------------- lost work


def test_extraction_resume_queues_unextracted_messages_and_unexecuted_forget_requests(index, org, write):
    conversation, _ = conversation_create(org=org, owner_user="u1")
    message = messages_append(conversation=conversation, user_id="u1",
                              messages=[{"role": "user", "content": "I prefer short answers."}])[0]
    forget_me = write(FACTS[0])
    request = ForgetRequest.objects.create(org=org, subject_user="u1", requested_by="u1", target="memory",
                                           memory=forget_me, matched_ids=[forget_me.id], status="approved",
                                           decided_at=timezone.now() - timedelta(minutes=30))
    just_approved = ForgetRequest.objects.create(org=org, subject_user="u1", requested_by="u1", target="memory",
                                                 matched_ids=[], status="approved", decided_at=timezone.now())
    assert extraction_resume() == 1  # only the old forget request: younger work may still be in the queue
    Message.objects.filter(id=message.id).update(created_at=timezone.now() - timedelta(minutes=30))

    queued = extraction_resume()

    assert queued == 1
    assert Message.objects.get(id=message.id).extracted_at is not None
    assert Memory.objects.filter(sources__message_id=message.id).exists()
    assert ForgetRequest.objects.get(id=request.id).status == "executed"
    assert Memory.objects.get(id=forget_me.id).status == "forgotten"
    assert extraction_resume() == 0
    assert ForgetRequest.objects.get(id=just_approved.id).status == "approved"


def test_ensure_beat_schedule_is_idempotent_and_keeps_an_operators_pause(db):
    from django_celery_beat.models import IntervalSchedule, PeriodicTask

    from memory.jobs.beat_schedule import BEAT_JOBS, ensure_beat_schedule

    names = ensure_beat_schedule()
    ensure_beat_schedule()

    tasks = {t.task: t for t in PeriodicTask.objects.filter(name__in=names)}
    assert len(tasks) == len(BEAT_JOBS) and PeriodicTask.objects.filter(name__in=names).count() == len(BEAT_JOBS)
    assert "tenancy.tasks.idempotency_records_purge_task" in tasks
    assert set(tasks) >= {"memory.tasks.memories_expire_task", "memory.tasks.memories_evict_task"}
    from config.celery import app

    app.loader.import_default_modules()
    assert set(tasks) <= set(app.tasks)  # every scheduled name is a registered task
    reconcile = tasks["memory.tasks.projections_reconcile_task"]
    resume = tasks["memory.tasks.extraction_resume_task"]
    assert (reconcile.interval.every, reconcile.interval.period) == (5, IntervalSchedule.MINUTES)
    assert (resume.interval.every, resume.interval.period) == (2, IntervalSchedule.MINUTES)
    assert reconcile.enabled and reconcile.expire_seconds == 300
    PeriodicTask.objects.filter(id=reconcile.id).update(enabled=False)
    ensure_beat_schedule()
    assert not PeriodicTask.objects.get(id=reconcile.id).enabled
