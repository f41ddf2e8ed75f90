"""The LLM reviewer (D28) against the local chat-completions stub: possible conflicts and the gate's
uncertain band go to the LLM in batches of one user's items; its decisions go through the services
an operator's would; whatever it cannot decide stays with the operator."""
import json
import logging

import pytest

from conversations.services import conversation_create
from memory.enqueue import llm_review_enqueue
from memory.jobs.beat_schedule import LLM_REVIEW_JOB_NAME, beat_jobs
from memory.models import Memory, MemoryConflict
from memory.services import MemoryInput, memory_write
from memory.services.conflicts import conflict_record
from memory.services.llm_review import llm_review_run
from memory.services.llm_review.client import PROMPTS_DIR
from tenancy.models import AuditEvent
from tests.memory.extraction.stub_llm_server import Reply, StubLLMServer, review_answer

pytestmark = pytest.mark.django_db

ACTOR = "llm-review:stub-model"


@pytest.fixture
def stub():
    with StubLLMServer() as server:
        server.answer_reviews()
        yield server


@pytest.fixture
def llm(stub, settings):
    settings.LLM_BASE_URL, settings.LLM_MODEL, settings.LLM_REVIEW_TIMEOUT = stub.base_url, "stub-model", 2.0
    settings.LLM_REVIEW_BATCH_SIZE, settings.LLM_REVIEW_MAX_PER_RUN = 20, 200
    return stub


def write(org, content, *, user="u1", kind="fact", gate_p=None, conversation_id=None):
    metadata = {"gate": {"p": gate_p, "model": "gate-test"}} if gate_p is not None else {}
    return memory_write(MemoryInput(org=org, user_id=user, kind=kind, content=content, created_by="extractor",
                                    actor="test", metadata=metadata, conversation_id=conversation_id),
                        dedup=False).memory


def conflict(org, older, newer, *, user="u1", kind="fact"):
    return conflict_record(older=write(org, older, user=user, kind=kind), newer=write(org, newer, user=user, kind=kind),
                           score=0.6)


def review(conflict_row):
    conflict_row.refresh_from_db()
    return conflict_row.signals.get("llm_review") or {}


def test_pairs_are_decided_in_one_batch_and_applied_through_the_conflict_service(org, llm):
    replaces = conflict(org, "Our staging server runs Ubuntu 20.04", "Staging now runs Ubuntu 24.04 since the upgrade")
    coexists = conflict(org, "We have a warehouse in Lyon", "We also have a warehouse in Porto")
    duplicate = conflict(org, "I take the train to work", "I take the train to work.", kind="preference")
    unsure = conflict(org, "My manager is Alice", "Bob leads the team")

    counts = llm_review_run()

    assert len(llm.requests) == 1 and counts["batches"] == 1 and counts["items"] == 4
    request = llm.requests[0]
    assert request.body["model"] == "stub-model" and request.body["response_format"] == {"type": "json_object"}
    assert request.messages[0]["content"] == (PROMPTS_DIR / "review_v1.md").read_text(encoding="utf-8")
    pairs = request.user_payload["pairs"]
    assert [p["id"] for p in pairs] == [1, 2, 3, 4]  # short ids, never database ids
    assert pairs[0]["older"] == {"kind": "fact", "content": "Our staging server runs Ubuntu 20.04",
                                 "date": replaces.older.created_at.isoformat()}

    for row, status in ((replaces, "superseded"), (coexists, "kept_both"), (duplicate, "superseded"), (unsure, "open")):
        row.refresh_from_db()
        assert row.status == status, (row.id, row.status)
    assert [review(r)["verdict"] for r in (replaces, coexists, duplicate, unsure)] == [
        "replaces", "coexists", "duplicate", "unsure"]
    older = Memory.objects.get(id=replaces.older_id)
    assert older.status == "superseded" and older.superseded_by_id == replaces.newer_id and older.version == 2
    assert replaces.resolved_by == ACTOR and unsure.resolved_by == ""
    assert set(Memory.objects.filter(id__in=[coexists.older_id, coexists.newer_id]).values_list("status", flat=True)) == {
        "active"}
    actions = set(AuditEvent.objects.filter(actor=ACTOR, actor_kind="system").values_list("action", flat=True))
    assert {"memory.supersede", "conflict.supersede", "conflict.keep_both", "conflict.llm_review"} <= actions

    # Idempotent: every pair is settled (the unsure one is the operator's), nothing is sent again.
    assert llm_review_run() == {"items": 0}
    assert len(llm.requests) == 1


def test_gate_band_keep_task_only_and_drop(org, llm):
    conv, _ = conversation_create(org=org, owner_user="u1")
    kept = write(org, "I prefer answers in bullet points", gate_p=0.5)
    task = write(org, "This time only list the overdue invoices", gate_p=0.4, conversation_id=conv.id)
    homeless_task = write(org, "Just for now skip the weekly summary", gate_p=0.6)
    dropped = write(org, "Thanks, that helps a lot", gate_p=0.45)
    sure = write(org, "Thanks for nothing", gate_p=0.9)  # outside the band: the gate was sure
    no_gate = write(org, "Hello there")  # not written by the gate

    counts = llm_review_run()

    sent = [s["content"] for s in llm.requests[0].user_payload["statements"]]
    assert sorted(sent) == sorted(m.content for m in (kept, task, homeless_task, dropped))
    assert counts["gate_keep"] == 1 and counts["gate_drop"] == 1 and counts["gate_task_only"] == 2
    kept.refresh_from_db()
    assert kept.status == "active" and kept.kind == "preference"  # the model corrected the kind
    assert kept.metadata["gate"]["reviewed"] == "llm" and kept.metadata["gate"]["p"] == 0.5
    assert kept.metadata["gate"]["llm_review"]["verdict"] == "keep" and kept.version == 2
    task.refresh_from_db()
    assert (task.status, task.scope, task.metadata["gate"]["reviewed"]) == ("active", "task", "llm-task-only")
    assert task.valid_to is not None
    homeless_task.refresh_from_db()
    assert (homeless_task.status, homeless_task.invalid_reason) == ("invalidated", "llm_review:task_only")
    dropped.refresh_from_db()
    assert (dropped.status, dropped.invalid_reason) == ("invalidated", "llm_review:drop")
    assert dropped.versions.count() == 1 and dropped.content  # history kept
    for untouched in (sure, no_gate):
        untouched.refresh_from_db()
        assert untouched.status == "active" and untouched.version == 1
    assert AuditEvent.objects.filter(actor=ACTOR, action="memory.invalidated", target_id=str(dropped.id)).exists()

    assert llm_review_run() == {"items": 0}


def test_unsure_leaves_the_memory_as_the_gate_kept_it_and_marks_it_reviewed(org, llm):
    memory = write(org, "Maybe we move the office next year", gate_p=0.5)
    llm_review_run()
    memory.refresh_from_db()
    assert memory.status == "active" and memory.metadata["gate"]["reviewed"] == "llm-unsure"
    assert llm_review_run() == {"items": 0}


def test_batches_hold_one_users_items_and_respect_the_limits(org, other_org, llm, settings):
    settings.LLM_REVIEW_BATCH_SIZE = 2
    for n in range(3):
        conflict(org, f"u1 machine {n} runs firmware 1", f"u1 machine {n} now runs firmware 2")
    write(org, "u1 I prefer calls in the morning", gate_p=0.5)
    conflict(org, "u2 desk is on floor 3", "u2 desk moved to floor 5", user="u2")
    conflict(other_org, "globex u1 car is a Golf", "globex u1 car switched to a Seal")

    counts = llm_review_run()

    assert counts["items"] == 6 and counts["batches"] == 4 and len(llm.requests) == 4
    owners = []
    for request in llm.requests:
        payload = request.user_payload
        texts = [p["older"]["content"] for p in payload["pairs"]] + [s["content"] for s in payload["statements"]]
        assert 1 <= len(texts) <= 2
        owners.append({t.split(" ", 2)[0] if not t.startswith("globex") else "globex" for t in texts})
    assert all(len(o) == 1 for o in owners)  # never two users (or orgs) in one batch
    assert sorted(next(iter(o)) for o in owners) == ["globex", "u1", "u1", "u2"]
    assert MemoryConflict.objects.filter(status="superseded").count() == 5


def test_max_per_run_leaves_the_rest_for_the_next_run(org, llm, settings):
    settings.LLM_REVIEW_MAX_PER_RUN, settings.LLM_REVIEW_BATCH_SIZE = 3, 2
    for n in range(5):
        conflict(org, f"line {n} speed is 10", f"line {n} speed now 12")
    assert llm_review_run()["items"] == 3
    assert MemoryConflict.objects.filter(status="open").count() == 2
    assert llm_review_run()["items"] == 2
    assert MemoryConflict.objects.filter(status="open").count() == 0


def test_a_malformed_answer_counts_an_attempt_and_is_given_up_after_the_limit(org, llm, settings):
    settings.LLM_REVIEW_MAX_ATTEMPTS = 2
    pair = conflict(org, "Our CRM is Salesforce", "We now use HubSpot as CRM")
    memory = write(org, "I like short meetings", gate_p=0.5)
    llm.answer_text("Sure! Here is my review: the first one replaces the older.")

    counts = llm_review_run()
    assert counts["pair_unanswered"] == 1 and counts["gate_unanswered"] == 1
    assert review(pair) == {"attempts": 1, "error": "invalid:not_json"}
    pair.refresh_from_db()
    assert pair.status == "open"
    memory.refresh_from_db()
    assert memory.status == "active" and "reviewed" not in memory.metadata["gate"]

    counts = llm_review_run()
    assert counts["pair_gave_up"] == 1 and counts["gate_gave_up"] == 1
    assert review(pair)["verdict"] == "no_answer" and pair.status == "open"
    memory.refresh_from_db()
    assert memory.metadata["gate"]["reviewed"] == "llm-no-answer" and memory.status == "active"
    sent = len(llm.requests)
    assert llm_review_run() == {"items": 0} and len(llm.requests) == sent  # the operator's now


@pytest.mark.parametrize("bad", [
    {"pairs": [{"id": 99, "decision": "replaces"}]},  # an id that was not shown
    {"pairs": [{"id": 1, "decision": "merge"}]},  # outside the vocabulary
    {"pairs": [{"id": 1, "decision": "replaces"}, {"id": 1, "decision": "coexists"}]},  # answered twice
    {"statements": [{"id": 1, "decision": "keep"}]},  # a pair answered as a statement
    {"pairs": {"1": "replaces"}},
    ["replaces"],
])
def test_an_invalid_answer_applies_nothing(org, llm, bad):
    pair = conflict(org, "The boiler is serviced by Acme", "Now Zenith services the boiler")
    llm.answer(bad)
    counts = llm_review_run()
    assert counts["pair_unanswered"] == 1
    pair.refresh_from_db()
    assert pair.status == "open" and review(pair)["error"].startswith("invalid:")
    assert Memory.objects.filter(status="active").count() == 2


def test_an_item_left_out_of_a_valid_answer_is_unanswered_and_the_rest_applied(org, llm):
    first = conflict(org, "Payroll runs on the 25th", "Payroll now runs on the 28th")
    second = conflict(org, "The kiln fires at 1200 degrees", "The kiln now fires at 1250 degrees")

    def answer_all_but_the_last(body):
        answer = review_answer(json.loads(body["messages"][-1]["content"]))
        answer["pairs"] = answer["pairs"][:-1]
        return json.dumps(answer)

    llm.respond(answer_all_but_the_last)
    counts = llm_review_run()
    assert counts["pair_replaces"] == 1 and counts["pair_unanswered"] == 1
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.status == "superseded" and second.status == "open" and review(second)["error"] == "missing"


@pytest.mark.parametrize("failure", ["slow", "500", "429", "drop"])
def test_a_down_or_slow_llm_stops_the_run_and_leaves_everything(org, llm, settings, failure):
    settings.LLM_REVIEW_TIMEOUT, settings.LLM_REVIEW_BATCH_SIZE = 0.3, 1
    pairs = [conflict(org, f"Site {n} opens at 8", f"Site {n} now opens at 9") for n in range(3)]
    memory = write(org, "I prefer tea", gate_p=0.5)
    {"slow": lambda: llm.slow(2.0), "500": lambda: llm.fail(500), "429": lambda: llm.fail(429),
     "drop": llm.drop}[failure]()

    counts = llm_review_run()

    assert counts["unavailable"] == 1 and len(llm.requests) == 1  # stopped at the first batch
    for pair in pairs:
        pair.refresh_from_db()
        assert pair.status == "open" and "llm_review" not in pair.signals  # no attempt counted
    memory.refresh_from_db()
    assert memory.version == 1 and "llm_review" not in memory.metadata["gate"]

    llm.answer_reviews()  # back up: the next run decides everything
    assert llm_review_run()["pair_replaces"] == 3
    memory.refresh_from_db()
    assert memory.metadata["gate"]["reviewed"] == "llm"


def test_a_4xx_rejection_counts_an_attempt_and_the_run_goes_on(org, llm, settings):
    settings.LLM_REVIEW_BATCH_SIZE = 1
    conflict(org, "Gate code is 1234", "Gate code now 5678")
    conflict(org, "Wifi is on channel 6", "Wifi now on channel 11")
    llm.enqueue(Reply(status=400))
    counts = llm_review_run()
    assert counts["pair_unanswered"] == 1 and counts["pair_replaces"] == 1 and len(llm.requests) == 2


def test_a_memory_changed_after_the_batch_was_formed_is_not_decided(org, llm):
    from memory.services import memory_update
    from memory.services.llm_review.client import ReviewClient

    pair = conflict(org, "Our bank is Chase", "We now bank with Citi")

    class EditWhileAsking(ReviewClient):
        def complete(self, payload):  # an operator edits the newer memory while the model thinks
            memory_update(memory_id=pair.newer_id, content="We now bank with Wells Fargo", actor="op")
            return super().complete(payload)

    counts = llm_review_run(client=EditWhileAsking.from_settings())
    assert counts["pair_stale"] == 1
    pair.refresh_from_db()
    assert pair.status == "open" and "llm_review" not in pair.signals  # the next run sends the new text
    assert llm_review_run()["pair_replaces"] == 1


def test_logs_carry_ids_never_text(org, llm, settings, caplog):
    settings.LLM_REVIEW_BATCH_SIZE = 1
    texts = ["Secret project Nightingale ships in May", "Secret project Nightingale now ships in June",
             "I prefer my diagnosis kept private", "Thanks, Dr Moreau"]
    conflict(org, texts[0], texts[1])
    write(org, texts[2], gate_p=0.5)
    write(org, texts[3], gate_p=0.5)
    caplog.set_level(logging.DEBUG)
    llm.enqueue(Reply(content="not json: " + texts[0]), Reply(status=400))
    llm_review_run()
    llm.slow(2.0)
    settings.LLM_REVIEW_TIMEOUT = 0.2
    conflict(org, "Vault code is 1111", "Vault code now 2222")
    llm_review_run()
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "llm review" in logged
    for text in texts + ["Vault code"]:
        assert text not in logged and "Nightingale" not in logged and "Moreau" not in logged


def test_without_an_llm_nothing_is_read_sent_or_queued(org, stub, settings, django_capture_on_commit_callbacks):
    from celery.signals import before_task_publish

    from memory.jobs import scheduler_thread as scheduler
    from memory.tasks import llm_review_task

    settings.LLM_BASE_URL = ""
    conflict(org, "Our CRM is Salesforce", "We now use HubSpot as CRM")
    write(org, "I like short meetings", gate_p=0.5)
    published = []
    before_task_publish.connect(lambda sender=None, **kw: published.append(sender), weak=False)
    try:
        assert llm_review_run() == {"skipped": "no_llm"}
        assert llm_review_task.delay().get() == {"skipped": "no_llm"}
        assert llm_review_enqueue() is False
    finally:
        before_task_publish.receivers.clear()
    assert stub.requests == [] and published == []
    assert LLM_REVIEW_JOB_NAME not in {job.name for job in beat_jobs()}
    assert "llm_review" not in {job.name for job in scheduler._jobs("all")}
    assert not MemoryConflict.objects.exclude(signals={}).exists()

    settings.LLM_BASE_URL = stub.base_url
    assert LLM_REVIEW_JOB_NAME in {job.name for job in beat_jobs()}
    assert "llm_review" in {job.name for job in scheduler._jobs("all")}


def test_the_beat_row_exists_only_with_an_llm(db, settings, stub):
    from django_celery_beat.models import PeriodicTask

    from memory.jobs.beat_schedule import ensure_beat_schedule

    settings.LLM_BASE_URL = stub.base_url
    ensure_beat_schedule()
    row = PeriodicTask.objects.get(name=LLM_REVIEW_JOB_NAME)
    assert row.task == "memory.tasks.llm_review_task" and row.interval.every == settings.LLM_REVIEW_EVERY_MINUTES
    settings.LLM_BASE_URL = ""
    ensure_beat_schedule()
    assert not PeriodicTask.objects.filter(name=LLM_REVIEW_JOB_NAME).exists()


def test_the_task_runs_the_review(org, llm):
    from memory.tasks import llm_review_task

    pair = conflict(org, "The lab opens at 7", "The lab now opens at 8")
    result = llm_review_task.delay().get()
    assert result["pair_replaces"] == 1
    pair.refresh_from_db()
    assert pair.status == "superseded"


def test_the_command_and_the_enqueue_by_name(org, llm, settings):
    from io import StringIO

    from django.core.management import call_command

    first = conflict(org, "The lab opens at 7", "The lab now opens at 8")
    assert llm_review_enqueue() is True  # eager here: the queued run has already decided
    first.refresh_from_db()
    assert first.status == "superseded"

    second = conflict(org, "The van is white", "The van is now blue")
    out = StringIO()
    call_command("llm_review", stdout=out)
    assert "pair_replaces: 1" in out.getvalue()
    second.refresh_from_db()
    assert second.status == "superseded"

    settings.LLM_BASE_URL = ""
    out = StringIO()
    call_command("llm_review", stdout=out)
    assert "no LLM configured" in out.getvalue()


def test_one_run_at_a_time(org, llm):
    from django.core.cache import cache

    from memory.services.llm_review.run import RUN_LOCK_KEY

    conflict(org, "The gym opens at 6", "The gym now opens at 5")
    cache.add(RUN_LOCK_KEY, 1, timeout=60)  # another run holds it
    assert llm_review_run() == {"skipped": "running"} and llm.requests == []
    cache.delete(RUN_LOCK_KEY)
    assert llm_review_run()["pair_replaces"] == 1
