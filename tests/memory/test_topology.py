"""Single-node topology (docs/architecture.md, Topologies): the embedded shard opens in one process
only, so every task that touches vectors goes to CELERY_VECTOR_QUEUE, consumed by the web process
that owns the shard; Celery workers on the default queue never open it.

The last test runs the topology for real (service profile): gunicorn (one worker, threads, the vector
consumer on a thread) and a `celery worker -Q celery` subprocess on a redis-server of the test's own,
against the test database.
"""
import json
import os
import re
import runpy
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from django.conf import settings
from django.db import connection
from django.db.models import F

from config.celery import _leave_the_shard_to_its_owner, app
from conversations.models import Message
from memory.models import ForgetRequest, Memory
from memory.vector_index import VectorIndexUnavailable, get_vector_index, may_open_vector_index, refuse_embedded_index, reset_vector_index
from tests.faults.conftest import RedisServer, die_with_parent, env_for_subprocess, free_port, wait_until

ROOT = Path(settings.BASE_DIR)
VECTOR_TASKS = {"memory.tasks.memory_sync", "memory.tasks.memories_sync", "memory.tasks.memory_points_delete",
                "memory.tasks.projections_reconcile_task", "memory.tasks.projections_rebuild_task",
                "memory.tasks.reembed_task"}


def routed_queues() -> dict[str, str]:
    app.loader.import_default_modules()  # autodiscovery is lazy: register every task
    return {name: app.amqp.router.route({}, name, (), {}, task)["queue"].name
            for name, task in app.tasks.items() if not name.startswith("celery.")}


def test_vector_tasks_go_to_the_vector_queue_and_nothing_else_does(settings):
    settings.CELERY_VECTOR_QUEUE = "vectors"
    queues = routed_queues()
    assert {name for name, queue in queues.items() if queue == "vectors"} == VECTOR_TASKS
    assert {queue for name, queue in queues.items() if name not in VECTOR_TASKS} == {"celery"}
    assert {"memory.tasks.messages_extract", "memory.tasks.forget_request_execute"} <= set(queues)


def test_with_a_qdrant_server_nothing_is_routed(settings):
    settings.CELERY_VECTOR_QUEUE = ""
    assert set(routed_queues().values()) == {"celery"}


def _settings_under(monkeypatch, tmp_path, **env: str) -> dict:
    for name in ("QDRANT_URL", "CELERY_BROKER_URL", "REDIS_URL", "CELERY_VECTOR_QUEUE", "VECTOR_CONSUMER_IN_WEB",
                 "CELERY_TASK_ALWAYS_EAGER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMORY_VAR_DIR", str(tmp_path))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(ROOT / "config" / "settings.py"))


def test_defaults_per_topology(monkeypatch, tmp_path):
    embedded = _settings_under(monkeypatch, tmp_path)  # `make run`: eager, nothing consumes anything
    assert embedded["CELERY_TASK_ALWAYS_EAGER"] and not embedded["VECTOR_CONSUMER_IN_WEB"]
    single = _settings_under(monkeypatch, tmp_path, CELERY_BROKER_URL="redis://127.0.0.1:6379/0")
    assert single["CELERY_VECTOR_QUEUE"] == "vectors" and single["VECTOR_CONSUMER_IN_WEB"]
    multi = _settings_under(monkeypatch, tmp_path, CELERY_BROKER_URL="redis://127.0.0.1:6379/0",
                            QDRANT_URL="http://qdrant:6333")
    assert multi["CELERY_VECTOR_QUEUE"] == "" and not multi["VECTOR_CONSUMER_IN_WEB"]


def _worker(*queues: str) -> SimpleNamespace:
    """What the worker_init handler reads of a WorkController (a real one would close this test's
    database connection as Celery's Django fixup does)."""
    return SimpleNamespace(hostname="w@test", app=SimpleNamespace(
        amqp=SimpleNamespace(queues=SimpleNamespace(consume_from={q: None for q in queues}))))


@pytest.fixture
def refusal(settings, tmp_path):
    settings.CELERY_VECTOR_QUEUE = "vectors"
    settings.QDRANT_URL = ""
    settings.VECTOR_INDEX_PATH = str(tmp_path / "qdrant")
    reset_vector_index()
    yield
    refuse_embedded_index(None)
    reset_vector_index()


def test_a_worker_on_the_default_queue_refuses_the_embedded_shard(refusal):
    _leave_the_shard_to_its_owner(sender=_worker("celery"))
    assert not may_open_vector_index()
    with pytest.raises(VectorIndexUnavailable, match="does not own the embedded shard"):
        get_vector_index()
    assert not list(Path(settings.VECTOR_INDEX_PATH).glob("*/wal"))  # nothing was created, let alone locked


def test_the_vector_queue_consumer_may_open_it(refusal):
    _leave_the_shard_to_its_owner(sender=_worker("vectors"))
    assert may_open_vector_index()
    get_vector_index()


def test_with_a_qdrant_server_no_worker_is_refused(refusal, settings):
    settings.CELERY_VECTOR_QUEUE = ""
    _leave_the_shard_to_its_owner(sender=_worker("celery"))
    assert may_open_vector_index()


@pytest.mark.django_db
@pytest.mark.parametrize("command, args", [("reconcile_projections", []), ("rebuild_projections", ["--no-optimize"])])
def test_maintenance_commands_can_hand_the_run_to_the_shard_owner(command, args, settings, tmp_path):
    """--enqueue sends the run to the vector queue (here eager: it runs in this process, the owner)."""
    from io import StringIO

    from django.core.management import call_command

    settings.VECTOR_INDEX_PATH, settings.QDRANT_URL = str(tmp_path / "qdrant"), ""
    reset_vector_index()
    out = StringIO()
    try:
        call_command(command, *args, "--enqueue", stdout=out)
    finally:
        reset_vector_index()
    assert out.getvalue().startswith("queued ")


# ------------------------------------------------------------------------------------ the real thing

def database_url() -> str:
    s = connection.settings_dict
    return f"mysql://{s['USER']}:{s['PASSWORD'] or ''}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 3306}/{s['NAME']}"


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def open_under(pid: int, root: Path) -> list[str]:
    """Paths under root that process pid holds open (file descriptors) or mapped."""
    held = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith(str(root)):
            held.append(target)
    held += [line.split()[-1] for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
             if str(root) in line]
    return held


class Node:
    """gunicorn + one `celery worker -Q celery`, as `make worker` and a single-node deployment run them."""

    def __init__(self, tmp: Path, broker: str, cache: str) -> None:
        self.tmp, self.shard, self.port = tmp, tmp / "qdrant", free_port()
        self.env = env_for_subprocess(
            DJANGO_SETTINGS_MODULE="config.settings", DATABASE_URL=database_url(), CELERY_BROKER_URL=broker,
            REDIS_URL=cache, MEMORY_VAR_DIR=str(tmp / "var"), VECTOR_INDEX_PATH=str(self.shard),
            TIKTOKEN_CACHE_DIR=str(settings.TIKTOKEN_CACHE_DIR), EMBEDDING_MODEL="use-multilingual",
            LOG_LEVEL="INFO", PYTHONUNBUFFERED="1")
        for name in ("QDRANT_URL", "LLM_BASE_URL", "CELERY_TASK_ALWAYS_EAGER", "CELERY_VECTOR_QUEUE",
                     "VECTOR_CONSUMER_IN_WEB"):
            self.env.pop(name, None)
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, argv: list[str]) -> None:
        self.procs[name] = subprocess.Popen(
            argv, cwd=ROOT, env=self.env, stdout=open(self.tmp / f"{name}.log", "wb"), stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=die_with_parent)

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text(errors="replace")

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


@pytest.mark.service_only
@pytest.mark.django_db(transaction=True)
def test_single_node_projections_run_in_the_web_process_and_the_worker_never_opens_the_shard(org, tmp_path):
    from celery import Celery

    from tenancy.services import api_key_create

    redis_server = RedisServer(tmp_path / "redis").start()
    node = Node(tmp_path, broker=redis_server.url(0), cache=redis_server.url(1))
    try:
        node.start("web", [sys.executable, "-m", "gunicorn", "config.wsgi", "-b", f"127.0.0.1:{node.port}", "-w", "1",
                           "--threads", "4", "--timeout", "120", "--no-control-socket"])
        node.start("worker", [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "celery", "--pool", "solo",
                              "-l", "INFO", "--without-gossip", "--without-mingle", "--without-heartbeat",
                              "-n", "topology@%h"])
        _, key = api_key_create(org=org, name="topology")
        # No idle connection kept: gunicorn closes one after 2 s, and a request sent on it as it closes
        # is reset (the wait for extraction below takes longer than that).
        http = httpx.Client(base_url=f"http://127.0.0.1:{node.port}", timeout=30,
                            limits=httpx.Limits(max_keepalive_connections=0),
                            headers={"Authorization": f"Bearer {key}", "X-Memory-User": "u1"})

        def ready() -> dict | None:
            try:
                body = httpx.get(f"http://127.0.0.1:{node.port}/readyz", timeout=2).json()
            except (httpx.HTTPError, ValueError):
                return None
            return body if body["checks"]["vector_consumer"]["status"] == "ok" else None

        assert wait_until(lambda: ready() is not None, timeout=90, interval=0.3), node.log("web")[-3000:]
        assert wait_until(lambda: "ready." in node.log("worker"), timeout=60, interval=0.3), node.log("worker")[-3000:]
        assert ready()["checks"]["vector_consumer"]["queue"] == "vectors"

        conversation = http.post("/api/v1/conversations", json={"external_id": "topology"}).json()
        response = http.post(f"/api/v1/conversations/{conversation['id']}/messages/batch", json={"messages": [
            {"role": "user", "content": "以后给我的维保建议请按紧急程度从高到低排序。"},
            {"role": "user", "content": "I prefer short answers with bullet points."},
            {"role": "user", "content": "我们农场在黑龙江齐齐哈尔。"}]})
        assert response.status_code == 201, response.text

        def settled() -> bool:
            return (not Message.objects.filter(extracted_at__isnull=True).exists() and Memory.objects.exists()
                    and not Memory.objects.filter(projected_version__lt=F("version")).exists())

        assert wait_until(settled, timeout=60, interval=0.2), node.log("worker")[-3000:] + node.log("web")[-3000:]
        recall = http.post("/api/v1/recall", json={"query": "维保建议怎么排序", "k": 3}).json()
        assert not recall["degraded"] and "紧急程度" in recall["items"][0]["content"]

        # Forgetting runs in the worker; the point deletion it queues runs in the web process.
        target = Memory.objects.get(content__contains="bullet points", kind="preference")
        assert http.post("/api/v1/forget", json={"memory_ids": [target.id]}).status_code < 300
        assert wait_until(lambda: ForgetRequest.objects.filter(status="executed").exists() and settled(), timeout=30)
        assert Memory.objects.get(id=target.id).status == "forgotten"

        # A projection task that lands on the default queue (queued before the routing existed) is
        # forwarded to the vector queue, not run by the worker.
        fact = Memory.objects.filter(status="active").exclude(kind="episode").first()
        Memory.objects.filter(id=fact.id).update(projected_version=0)
        publisher = Celery("topology-publisher", set_as_current=False)
        with publisher.connection_for_write(redis_server.url(0)) as conn:
            publisher.send_task("memory.tasks.memory_sync", args=[fact.id, fact.version], queue="celery",
                                connection=conn)
        assert wait_until(settled, timeout=30), node.log("worker")[-3000:]
        assert "forwarded to queue vectors" in node.log("worker")

        points = ready()["checks"]["vector_index"]["points"]
        assert points == Memory.objects.filter(status="active").count()

        # Who did what: every projection ran in the web process; the worker holds nothing of the shard.
        web_log, worker_log = node.log("web"), node.log("worker")
        # (A batch's writes are projected by one memories_sync task, so tasks can be fewer than memories;
        # that every active memory has its point is asserted above.)
        done = r"Task memory\.tasks\.(memory_sync|memories_sync|memory_points_delete)\[[^\]]+\] succeeded in [0-9.e-]+s: "
        assert re.search(done + r"(?!None)", web_log)
        assert not re.search(done + r"(?!None)", worker_log)  # a task it forwarded returns None
        assert "does not own the embedded shard" not in worker_log
        [web_pid] = children(node.procs["web"].pid)
        assert open_under(web_pid, node.shard), "the web process should hold the shard open"
        assert open_under(node.procs["worker"].pid, node.shard) == []
        print(json.dumps({"points": points, "memories": Memory.objects.count()}))
    finally:
        node.stop()
        redis_server.close()
