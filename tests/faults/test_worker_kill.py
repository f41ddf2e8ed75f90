"""Fault 3: a Celery worker process is SIGKILLed mid-extraction and mid-projection, several times.

Service profile only: real `celery worker` subprocesses (solo pool, one at a time) consume a queue on
a redis-server this test owns, against the test database. The test appends messages through the
API (their extraction tasks go to that broker), kills each worker once it is busy (after a short
random delay), starts the next, and lets a last worker drain the queue. Celery's Redis transport
redelivers the unacknowledged task (acks_late) once its visibility timeout (5 s here) has passed.

The subprocess workers own their embedded vector shard (a path of their own; one process per
shard), so only the system of record is checked: every message extracted, exactly one episode per
message, exactly one memory per fact, every expected fact there, and projected_version == version
everywhere once the reconcile job has run in the workers' topology.

A second test replays the redelivery deterministically (no processes): extraction that crashed
after writing a memory but before marking the message extracted runs again.
"""
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.db.models import Count, F

from conversations.models import Message
from memory.models import Memory, MemorySource
from tests.conversations.api_helpers import create_conversation
from tests.faults.conftest import FACTS, die_with_parent, env_for_subprocess, post, server_client, wait_until

ROOT = Path(settings.BASE_DIR)
KILLS = 3
BATCH = 3  # messages per append (one extraction task each)
VISIBILITY_TIMEOUT = 5


def database_url() -> str:
    s = connection.settings_dict
    return f"mysql://{s['USER']}:{s['PASSWORD'] or ''}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 3306}/{s['NAME']}"


class Workers:
    """Celery worker subprocesses pointed at the test database and the test's broker."""

    def __init__(self, tmp: Path, broker: str, cache: str) -> None:
        self.tmp = tmp
        self.env = env_for_subprocess(
            DJANGO_SETTINGS_MODULE="config.settings", DATABASE_URL=database_url(), CELERY_BROKER_URL=broker,
            REDIS_URL=cache, CELERY_VISIBILITY_TIMEOUT=str(VISIBILITY_TIMEOUT), MEMORY_VAR_DIR=str(tmp / "var"),
            VECTOR_INDEX_PATH=str(tmp / "worker-qdrant"), TIKTOKEN_CACHE_DIR=str(settings.TIKTOKEN_CACHE_DIR),
            # The multilingual USE model alone loads in ~1 s instead of ~10 s for the default composite model
            # (torch): each restarted worker loads it again, and what is under test is the kill, not the model.
            EMBEDDING_MODEL="use-multilingual", LOG_LEVEL="WARNING", PYTHONUNBUFFERED="1",
            # These workers own their shard (no web process here): projections stay on their one queue.
            CELERY_VECTOR_QUEUE="")
        for name in ("QDRANT_URL", "LLM_BASE_URL", "CELERY_TASK_ALWAYS_EAGER"):
            self.env.pop(name, None)
        self.procs: list[subprocess.Popen] = []
        self.logs: list[Path] = []

    def start(self) -> subprocess.Popen:
        log = self.tmp / f"worker-{len(self.procs)}.log"
        self.logs.append(log)
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo", "--concurrency", "1",
             "-Q", "celery", "-l", os.environ.get("FAULTS_WORKER_LOGLEVEL", "WARNING"),
             "--without-gossip", "--without-mingle", "--without-heartbeat",
             "-n", f"faults{len(self.procs)}@%h"],
            cwd=ROOT, env=self.env, stdout=open(log, "wb"), stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=die_with_parent)
        self.procs.append(proc)
        return proc

    def run(self, *args: str) -> str:
        """A management command in the workers' topology (same shard path, worker stopped)."""
        out = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True,
                             text=True, timeout=180)
        assert out.returncode == 0, out.stderr[-3000:]
        return out.stdout

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)

    def tail(self) -> str:
        return "\n".join(f"--- {log.name}\n" + log.read_text(errors="replace")[-2000:]
                         for log in self.logs if log.exists())


@pytest.fixture
def workers(tmp_path, redis_server):
    w = Workers(tmp_path, broker=redis_server.url(0), cache=redis_server.url(1))
    yield w
    w.stop_all()
    if os.environ.get("FAULTS_SHOW_WORKER_LOGS"):
        print(w.tail())


def progress() -> tuple[int, int]:
    return (Message.objects.filter(extracted_at__isnull=False).count(),
            Memory.objects.filter(projected_version=F("version")).count())


def queue_depth(broker) -> int:
    return int(broker.llen("celery")) + int(broker.hlen("unacked"))


def queued_syncs(broker) -> set[tuple[int, int]]:
    """(memory id, version) of every memory_sync waiting in the broker, queued or unacknowledged."""
    import ast
    import json

    messages = [json.loads(raw) for raw in broker.lrange("celery", 0, -1)]
    messages += [json.loads(raw)[0] for raw in broker.hvals("unacked")]
    return {tuple(ast.literal_eval(m["headers"]["argsrepr"])[:2]) for m in messages
            if m["headers"].get("task") == "memory.tasks.memory_sync"}


def syncs_lost(broker) -> list[int]:
    """Rows waiting for a projection that no queued task will ever bring."""
    waiting = Memory.objects.filter(projected_version__lt=F("version")).values_list("id", "version")
    queued = queued_syncs(broker)
    return sorted(memory_id for memory_id, version in waiting if (memory_id, version) not in queued)


@pytest.mark.service_only
@pytest.mark.django_db(transaction=True)
def test_worker_killed_mid_extraction_and_projection_loses_and_duplicates_nothing(
        org, workers, redis_server, monkeypatch, tally):
    import redis
    from celery import Celery

    from memory.extraction import ExtractionInput
    from memory.extraction.rules import RuleExtractor

    broker = redis.Redis.from_url(redis_server.url(0))
    publisher = Celery("faults-publisher", set_as_current=False)
    # An explicit connection: Celery prefers the CELERY_BROKER_URL environment variable to broker=...
    broker_connection = publisher.connection_for_write(redis_server.url(0))
    published: list[list[int]] = []

    def enqueue(name, *args) -> bool:  # the API's enqueue, to the test's broker instead of in-process
        publisher.send_task(name, args=list(args), connection=broker_connection)
        published.append(list(args[0]) if name.endswith("messages_extract") else [])
        return True

    monkeypatch.setattr("memory.enqueue.enqueue", enqueue)
    seed = int(os.environ.get("FAULTS_SEED", time.time_ns() % 100_000))
    rng = random.Random(seed)
    api = server_client(org)
    conversation = create_conversation(api)
    contents = FACTS[:42]
    for start in range(0, len(contents), BATCH):
        batch = [{"role": "user", "content": c, "external_ref": f"kill-{start + i}"}
                 for i, c in enumerate(contents[start:start + BATCH])]
        response = post(api, f"/api/v1/conversations/{conversation['id']}/messages/batch", {"messages": batch})
        assert response.status_code == 201, response.content
    assert len(published) == len(contents) // BATCH and Message.objects.count() == len(contents)
    assert broker.llen("celery") == len(published)

    t = tally("celery worker SIGKILL mid-task (x3), then a fresh worker")
    kills = []
    for round_ in range(KILLS):
        before = progress()
        proc = workers.start()
        # The first kills land mid-extraction (a message of the batch marked, the batch's task unacked); the
        # last one once projection tasks run (they queue behind every extraction task).
        part = 1 if round_ == KILLS - 1 else 0
        busy = wait_until(lambda: progress()[part] != before[part] or proc.poll() is not None, timeout=60,
                          interval=0.02)
        assert busy and proc.poll() is None, "the worker made no progress\n" + workers.tail()
        time.sleep(rng.uniform(0.0, 0.4))
        partial = Message.objects.filter(extracted_at__isnull=True, id__in=Memory.objects.filter(
            kind="episode").values("sources__message_id")).count()
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        kills.append({"phase": "projection" if part else "extraction", "progress": progress(),
                      "in_flight": int(broker.hlen("unacked")), "messages_half_extracted": partial,
                      "lagging_projections": Memory.objects.filter(projected_version__lt=F("version")).count(),
                      "syncs_lost": syncs_lost(broker)})
    time.sleep(VISIBILITY_TIMEOUT + 1)  # the unacked tasks are now past their visibility timeout
    final = workers.start()
    drained = wait_until(lambda: queue_depth(broker) == 0 and not Message.objects.filter(extracted_at__isnull=True)
                         .exists(), timeout=120, interval=0.2)
    wait_until(lambda: not Memory.objects.filter(projected_version__lt=F("version")).exists(), timeout=10)
    assert drained, (f"queue={broker.llen('celery')} unacked={broker.hgetall('unacked')} unextracted="
                     f"{list(Message.objects.filter(extracted_at__isnull=True).values_list('id', flat=True))}\n"
                     + workers.tail())
    assert final.poll() is None, workers.tail()
    os.killpg(final.pid, signal.SIGTERM)  # a clean stop: the shard is released for reconcile
    final.wait(timeout=30)
    lag_after_drain = Memory.objects.filter(projected_version__lt=F("version")).count()
    lag_rows = list(Memory.objects.filter(projected_version__lt=F("version")).values_list(
        "id", "kind", "status", "version", "projected_version", "sources__message_id"))
    reconcile = workers.run("reconcile_projections") if lag_after_drain else ""

    # ---------------------------------------------------------------- end state (MySQL)
    messages = list(Message.objects.filter(conversation_id=conversation["id"]).order_by("seq"))
    unextracted = sum(m.extracted_at is None for m in messages)
    episodes = dict(Memory.objects.filter(kind="episode").exclude(status="forgotten").values("sources__message_id")
                    .annotate(n=Count("id", distinct=True)).values_list("sources__message_id", "n"))
    missing_facts = 0
    for message in messages:
        expected = RuleExtractor().extract(ExtractionInput(role="user", content=message.content,
                                                           occurred_at=message.occurred_at, existing=[], recent=[]))
        for candidate in expected.candidates:
            missing_facts += not Memory.objects.filter(content=candidate.content, status="active").exists()
    dup_memories = (Memory.objects.filter(status="active").exclude(kind="episode").values("kind", "content_hash")
                    .annotate(n=Count("id")).filter(n__gt=1))
    dup_sources = (MemorySource.objects.filter(message__isnull=False).values("memory_id", "message_id")
                   .annotate(n=Count("id")).filter(n__gt=1))
    t.attempted = len(messages)
    t.succeeded = len(messages) - unextracted
    t.lost = unextracted + sum(1 for m in messages if m.id not in episodes) + missing_facts
    t.duplicated = sum(n - 1 for n in episodes.values()) + sum(r["n"] - 1 for r in dup_memories)
    lagging = Memory.objects.filter(projected_version__lt=F("version")).count()
    t.extra.update(seed=seed, kills=len(kills), tasks=len(published),
                   half_extracted_at_kill=sum(k["messages_half_extracted"] for k in kills),
                   unacked_at_kill=sum(k["in_flight"] for k in kills),
                   lagging_projections_at_kill=sum(k["lagging_projections"] for k in kills),
                   syncs_lost_at_kill=len({i for k in kills for i in k["syncs_lost"]}),
                   lag_after_drain=lag_after_drain, lag_after_reconcile=lagging,
                   duplicate_source_rows=sum(r["n"] - 1 for r in dup_sources))
    print("kills:", kills, "\nlagging after the drain:", lag_rows, "\n" + reconcile)

    assert len(kills) == KILLS
    assert t.lost == 0 and t.duplicated == 0, t.line()
    assert lagging == 0, t.line()


@pytest.mark.django_db
def test_redelivered_extraction_after_a_crash_adds_nothing(org, own_index, django_capture_on_commit_callbacks, tally):
    from conversations.services import conversation_create, messages_append
    from memory.services.extraction import messages_extract

    conversation, _ = conversation_create(org=org, owner_user="u1", title="redelivery")
    with django_capture_on_commit_callbacks(execute=False):  # extraction is run by hand below
        [message] = messages_append(conversation=conversation, user_id="u1", messages=[
            {"role": "user", "content": "I prefer meetings before ten in the morning"}])
    with django_capture_on_commit_callbacks(execute=True):
        messages_extract(message_ids=[message.id])
    fact = Memory.objects.exclude(kind="episode").get()
    before = (MemorySource.objects.count(), fact.access_count, Memory.objects.count())

    # The crash: everything up to the last memory_write committed, the message was never marked.
    Message.objects.filter(id=message.id).update(extracted_at=None)
    with django_capture_on_commit_callbacks(execute=True):
        messages_extract(message_ids=[message.id])  # the redelivered task
    fact.refresh_from_db()
    after = (MemorySource.objects.count(), fact.access_count, Memory.objects.count())
    t = tally("redelivered extraction (replayed)")
    t.attempted, t.succeeded = 1, 1
    t.duplicated = (after[0] - before[0]) + (after[2] - before[2])
    t.extra.update(source_rows=f"{before[0]}->{after[0]}", access_count=f"{before[1]}->{after[1]}")
    assert after == before
