"""The service as a user runs it, in subprocesses the test owns: gunicorn (one worker, 8 threads, as
`make run`) and, on the service profile, a `celery worker -Q celery` on a redis-server of the test's own.

Embedded profile: the processes get a var/ directory of their own (SQLite file database, embedded
shard), prepared with `manage.py migrate` and `ensure_demo` as `make run` does; the test reads that
database file directly. Service profile: they use the test's MariaDB database (the test must be
`django_db(transaction=True)`) and the test reads it through the ORM.
"""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from django.conf import settings
from django.db import connection

from tests.faults.conftest import RedisServer, die_with_parent, env_for_subprocess, free_port, wait_until

ROOT = Path(settings.BASE_DIR)
SERVICE_PROFILE = settings.DATABASES["default"]["ENGINE"].endswith("mysql")
EXTRACTABLE = ("user", "assistant")


def _database_url() -> str:
    s = connection.settings_dict
    return f"mysql://{s['USER']}:{s['PASSWORD'] or ''}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 3306}/{s['NAME']}"


class Served:
    def __init__(self, tmp: Path, **env: str) -> None:
        self.tmp, self.var, self.port = tmp, tmp / "var", free_port()
        self.redis: RedisServer | None = None
        self.env = env_for_subprocess(
            DJANGO_SETTINGS_MODULE="config.settings", MEMORY_VAR_DIR=str(self.var),
            VECTOR_INDEX_PATH=str(self.var / "qdrant"), TIKTOKEN_CACHE_DIR=str(settings.TIKTOKEN_CACHE_DIR),
            EMBEDDING_MODEL="use-multilingual", LOG_LEVEL="INFO", PYTHONUNBUFFERED="1")
        for name in ("QDRANT_URL", "LLM_BASE_URL", "CELERY_TASK_ALWAYS_EAGER", "CELERY_VECTOR_QUEUE",
                     "VECTOR_CONSUMER_IN_WEB", "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL"):
            self.env.pop(name, None)
        if SERVICE_PROFILE:
            self.redis = RedisServer(tmp / "redis").start()
            self.env.update(DATABASE_URL=_database_url(), CELERY_BROKER_URL=self.redis.url(0),
                            REDIS_URL=self.redis.url(1))
        self.env.update(env)
        self.procs: dict[str, subprocess.Popen] = {}
        self.key = ""

    # ------------------------------------------------------------------ processes
    def manage(self, *args: str) -> str:
        out = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True,
                             text=True, timeout=180)
        assert out.returncode == 0, out.stderr[-3000:]
        return out.stdout

    def prepare(self) -> None:
        if SERVICE_PROFILE:
            from tenancy.services import api_key_create, org_get_or_create

            _, self.key = api_key_create(org=org_get_or_create(slug="served", name="served"), name="served")
            return
        self.manage("migrate", "--noinput", "-v0")
        self.manage("ensure_demo")
        self.key = (self.var / "demo_api_key.txt").read_text().strip()

    def start(self, name: str, argv: list[str]) -> None:
        self.procs[name] = subprocess.Popen(
            argv, cwd=ROOT, env=self.env, stdout=open(self.tmp / f"{name}.log", "ab"), stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=die_with_parent)

    def start_web(self) -> None:
        self.start("web", [sys.executable, "-m", "gunicorn", "config.wsgi", "-b", f"127.0.0.1:{self.port}", "-w", "1",
                           "--threads", "8", "--timeout", "120", "--no-control-socket"])

    def start_worker(self) -> None:
        if SERVICE_PROFILE:
            self.start("worker", [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "celery",
                                  "--pool", "solo", "-l", "INFO", "--without-gossip", "--without-mingle",
                                  "--without-heartbeat", "-n", f"served-{time.monotonic_ns()}@%h"])

    def stop(self, name: str, sig: int = signal.SIGTERM) -> None:
        proc = self.procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def close(self) -> None:
        for name in list(self.procs):
            self.stop(name)
        if self.redis is not None:
            self.redis.close()

    def log(self, name: str) -> str:
        path = self.tmp / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def logs(self) -> str:
        return "\n".join(f"--- {n}\n{self.log(n)[-3000:]}" for n in ("web", "worker"))

    # ------------------------------------------------------------------ HTTP
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def readyz(self) -> tuple[int, dict]:
        try:
            response = httpx.get(f"{self.url}/readyz", timeout=5)
            return response.status_code, response.json()
        except (httpx.HTTPError, ValueError):
            return 0, {}

    def wait_ready(self, timeout: float = 120) -> None:
        assert wait_until(lambda: self.readyz()[0] == 200, timeout=timeout, interval=0.3), self.logs()
        if SERVICE_PROFILE:
            assert wait_until(lambda: "ready." in self.log("worker"), timeout=60, interval=0.3), self.logs()

    def client(self, user: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=120,
                            headers={"Authorization": f"Bearer {self.key}", "X-Memory-User": user})

    # ------------------------------------------------------------------ the record (read directly)
    def query(self, sql: str, params: tuple = ()) -> list[tuple]:
        if SERVICE_PROFILE:
            with connection.cursor() as cursor:
                cursor.execute(sql.replace("?", "%s"), params)
                return list(cursor.fetchall())
        db = sqlite3.connect(f"file:{self.var / 'memory.sqlite3'}?mode=ro", uri=True, timeout=30)
        try:
            return db.execute(sql, params).fetchall()
        finally:
            db.close()

    def stored_refs(self, prefix: str) -> Counter:
        rows = self.query("SELECT external_ref FROM conversations_message WHERE external_ref LIKE ?", (prefix + "%",))
        return Counter(ref for (ref,) in rows)

    def pending(self) -> int:
        return self.query("SELECT count(*) FROM conversations_message WHERE extracted_at IS NULL "
                          "AND role IN ('user', 'assistant')")[0][0]

    def episodes_per_message(self, prefix: str) -> Counter:
        """Active episodes per message (external_ref), each counted once per memory."""
        rows = self.query(
            "SELECT DISTINCT m.external_ref, mem.id FROM conversations_message m "
            "JOIN memory_memorysource s ON s.message_id = m.id JOIN memory_memory mem ON mem.id = s.memory_id "
            "WHERE mem.kind = 'episode' AND mem.status = 'active' AND m.external_ref LIKE ?", (prefix + "%",))
        return Counter(ref for ref, _ in rows)


@dataclass
class Outcome:
    ref: str
    status: int
    seconds: float
    body: str = ""


@dataclass
class Load:
    outcomes: list[Outcome] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def codes(self) -> Counter:
        return Counter(o.status for o in self.outcomes)


def concurrent_appends(served: Served, *, clients: int, messages: int, prefix: str) -> Load:
    """`clients` threads, each its own user and conversation, appending `messages` user turns."""
    load = Load()
    barrier = threading.Barrier(clients)

    def client(i: int) -> None:
        with served.client(f"{prefix}-user-{i}") as http:
            conversation = http.post("/api/v1/conversations", json={"title": f"client {i}"})
            assert conversation.status_code == 201, conversation.text
            cid = conversation.json()["id"]
            barrier.wait(timeout=60)
            for j in range(messages):
                ref = f"{prefix}-{i}-{j}"
                content = (f"我们第{j}号机组在{i}号仓库，请记住它的保养周期是{j + 3}个月。" if j % 2 else
                           f"Remember that machine {j} of client {i} needs service every {j + 2} weeks.")
                started = time.perf_counter()
                try:
                    response = http.post(f"/api/v1/conversations/{cid}/messages",
                                         json={"role": "user", "content": content, "external_ref": ref})
                    outcome = Outcome(ref, response.status_code, time.perf_counter() - started,
                                      "" if response.status_code == 201 else response.text[:200])
                except httpx.HTTPError as exc:
                    outcome = Outcome(ref, 0, time.perf_counter() - started, type(exc).__name__)
                with load.lock:
                    load.outcomes.append(outcome)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    return load
