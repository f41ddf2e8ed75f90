"""Load: a single-node deployment, as a user runs it on one machine, driven over HTTP for a fixed time.

What runs (docs/architecture.md, Topologies, case 2), all started and stopped by this module:

- MariaDB: a fresh database ``memsvc_load_<pid>`` (utf8mb4), migrated with ``manage.py migrate``,
  dropped at the end unless ``--keep``;
- Redis: a spare database number (cache and broker), flushed before and after;
- ``gunicorn config.wsgi -w 1 --threads N``: owns the embedded Qdrant shard, serves the API and
  consumes the ``vectors`` queue (projections) on a background thread;
- ``celery -A config worker -l info --concurrency 2 -Q celery`` (what ``make worker`` runs):
  extraction, dedup, forgetting, maintenance.

Orgs and API keys come from ``manage.py create_api_key``. This process (not gunicorn) then drives a
mixed workload over loopback from ``--concurrency`` threads, each with its own keep-alive httpx
client: message appends (zh/en user turns, assistant replies, tool calls with their results),
recall, context for the next turn, and explicit memory writes, in ``--mix`` proportions. Setup
(conversations, a few seed memories, model warm-up, drain) is not measured.

Reported: throughput and p50/p95/p99 per endpoint, errors (goal 0), RSS of the gunicorn worker and
of the Celery worker (start → end of load → after the drain), CPU used, projection lag when the load
stops (memories with projected_version < version, unextracted messages, queue depths) and the time
until everything has drained to zero, plus a final consistency check (vector points = active memories).

    python -m bench.load                                  # 120 s, 8 client threads
    python -m bench.load --seconds 60 --mix append=35,recall=30,context=20,write=15
"""
from __future__ import annotations

import os
import random
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlparse

from bench import common

NAME = "load"
ENDPOINTS = ("append", "recall", "context", "write")
DEFAULT_MIX = "append=35,recall=30,context=20,write=15"
# Variables that would point the started processes at something else than this run's own services.
_SERVICE_ENV = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "QDRANT_URL", "QDRANT_API_KEY", "VECTOR_INDEX_PATH",
                "TIKTOKEN_CACHE_DIR", "CELERY_TASK_ALWAYS_EAGER", "CELERY_VECTOR_QUEUE", "VECTOR_CONSUMER_IN_WEB",
                "LLM_BASE_URL", "MEMORY_VAR_DIR", "DJANGO_SETTINGS_MODULE")
TESTS_REDIS_DBS = {13, 14}  # `make test-service` uses these


def parse_args(argv=None):
    p = common.arg_parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=120.0, help="measured load duration (default 120)")
    p.add_argument("--concurrency", type=int, default=8, help="client threads (default 8)")
    p.add_argument("--rate", type=float, default=0.0,
                   help="target requests/s over all threads (default 0: as fast as the threads go, closed loop)")
    p.add_argument("--mix", default=DEFAULT_MIX, help=f"endpoint weights (default {DEFAULT_MIX})")
    p.add_argument("--orgs", type=int, default=2, help="orgs, one API key each (default 2)")
    p.add_argument("--users", type=int, default=12, help="users per org, one conversation each (default 12)")
    p.add_argument("--seed-memories", type=int, default=8, help="explicit memories per user before the load (default 8)")
    p.add_argument("--web-threads", type=int, default=8, help="gunicorn --threads (default 8, as `make run`)")
    p.add_argument("--worker-concurrency", type=int, default=2, help="celery worker --concurrency (default 2, as `make worker`)")
    p.add_argument("--mysql", default="mysql://root@127.0.0.1:3306", help="MariaDB server (default root@127.0.0.1:3306)")
    p.add_argument("--redis", default="redis://127.0.0.1:6379", help="Redis server (default 127.0.0.1:6379)")
    p.add_argument("--redis-db", type=int, help="Redis database number (default: the first empty one of 1..12)")
    p.add_argument("--port", type=int, help="gunicorn port (default: a free one)")
    p.add_argument("--embedding-model", help="EMBEDDING_MODEL for the started processes (default: the setting's default)")
    p.add_argument("--drain-timeout", type=float, default=600.0, help="give up waiting for the drain after this (s)")
    p.add_argument("--sample-interval", type=float, default=2.0, help="seconds between lag/RSS samples (default 2)")
    p.add_argument("--embedded", action="store_true",
                   help="the embedded default as `make run` starts it (SQLite, gunicorn -w 1 --threads 8), at "
                        "--levels client counts for --seconds each (bench/load_embedded.py)")
    p.add_argument("--levels", default="2,8,32", help="--embedded: client counts, one run each (default 2,8,32)")
    p.add_argument("--onnx-dir", default=str(common.REPO_ROOT / "var" / "onnx"),
                   help="--embedded: EMBEDDING_ONNX_DIR (default var/onnx, the export `make run` made)")
    args = p.parse_args(argv)
    if args.embedded and "--seconds" not in (argv if argv is not None else sys.argv):
        args.seconds = 20.0
    if args.embedded and "--drain-timeout" not in (argv if argv is not None else sys.argv):
        args.drain_timeout = 120.0
    return args


def parse_mix(text: str) -> dict[str, float]:
    mix = {}
    for part in text.split(","):
        name, _, weight = part.partition("=")
        name = name.strip()
        if name not in ENDPOINTS:
            raise SystemExit(f"--mix: unknown endpoint {name!r} (one of {', '.join(ENDPOINTS)})")
        mix[name] = float(weight)
    if not any(mix.values()):
        raise SystemExit("--mix: all weights are zero")
    return mix


# --------------------------------------------------------------------------- processes

try:  # resolved here, not in the forked child
    import ctypes

    _prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl
except (ImportError, OSError):
    _prctl = None


def _die_with_parent() -> None:
    """The kernel SIGKILLs the child when this process dies (Linux PR_SET_PDEATHSIG): nothing is left behind."""
    if _prctl is not None:
        _prctl(1, signal.SIGKILL)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    try:
        return [int(p) for p in path.read_text().split()]
    except OSError:
        return []


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    except (OSError, IndexError, ValueError):
        return 0.0


class Deployment:
    """The processes of one single-node deployment, with their logs under ``var_dir/logs``."""

    def __init__(self, var_dir: Path, env: dict[str, str], port: int) -> None:
        self.var_dir, self.env, self.port = var_dir, env, port
        self.logs = var_dir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.procs: dict[str, subprocess.Popen] = {}

    def manage(self, *args: str, timeout: float = 600) -> str:
        out = subprocess.run([sys.executable, "manage.py", *args], cwd=common.REPO_ROOT, env=self.env,
                             capture_output=True, text=True, timeout=timeout)
        if out.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{out.stderr[-3000:]}")
        return out.stdout

    def start(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "wb")
        proc = subprocess.Popen(argv, cwd=common.REPO_ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=_die_with_parent)
        self.procs[name] = proc
        return proc

    def log(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def web_pid(self) -> int | None:
        """The gunicorn worker (the master's only child): it owns the shard and serves requests."""
        proc = self.procs.get("web")
        kids = proc_children(proc.pid) if proc else []
        return kids[0] if kids else None

    def worker_pids(self) -> list[int]:
        proc = self.procs.get("worker")
        return [proc.pid, *proc_children(proc.pid)] if proc else []

    def rss(self) -> dict[str, float | None]:
        web = self.web_pid()
        worker = [rss_mb(pid) for pid in self.worker_pids()]
        return {"web": rss_mb(web) if web else None,
                "worker": round(sum(x for x in worker if x), 1) if any(worker) else None,
                "worker_processes": len(worker)}

    def cpu(self) -> dict[str, float]:
        web = self.web_pid()
        return {"web": cpu_seconds(web) if web else 0.0, "worker": sum(cpu_seconds(p) for p in self.worker_pids())}

    def alive(self) -> dict[str, bool]:
        return {name: proc.poll() is None for name, proc in self.procs.items()}

    def stop(self, timeout: float = 40.0) -> dict[str, float]:
        """SIGTERM (warm shutdown), then SIGKILL after ``timeout``. Returns seconds to exit per process."""
        took = {}
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        started = time.perf_counter()
        for name, proc in self.procs.items():
            try:
                proc.wait(timeout=max(0.1, timeout - (time.perf_counter() - started)))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
            took[name] = round(time.perf_counter() - started, 2)
        return took


# --------------------------------------------------------------------------- backends (read-only probes)

class Probe:
    """MariaDB and Redis, read from this process: projection lag, extraction lag, queue depths."""

    def __init__(self, mysql: dict, database: str, redis_url: str) -> None:
        import pymysql
        import redis

        self.db = pymysql.connect(**mysql, database=database, autocommit=True, charset="utf8mb4")
        self.redis = redis.Redis.from_url(redis_url)
        self.lock = threading.Lock()

    def _one(self, sql: str):
        with self.lock, self.db.cursor() as cursor:
            cursor.execute(sql)
            return cursor.fetchone()

    def lag(self) -> dict:
        lagging, oldest = self._one(
            "SELECT COUNT(*), TIMESTAMPDIFF(MICROSECOND, MIN(updated_at), UTC_TIMESTAMP(6)) "
            "FROM memory_memory WHERE projected_version < version")
        unextracted, oldest_message = self._one(
            "SELECT COUNT(*), TIMESTAMPDIFF(MICROSECOND, MIN(created_at), UTC_TIMESTAMP(6)) "
            "FROM conversations_message WHERE extracted_at IS NULL")
        pipe = self.redis.pipeline()
        pipe.llen("celery").llen("vectors").hlen("unacked")
        celery_q, vectors_q, unacked = pipe.execute()
        return {"lagging_memories": int(lagging), "oldest_lagging_s": round(oldest / 1e6, 2) if oldest else 0.0,
                "unextracted_messages": int(unextracted),
                "oldest_unextracted_s": round(oldest_message / 1e6, 2) if oldest_message else 0.0,
                "queue_celery": int(celery_q), "queue_vectors": int(vectors_q), "unacked": int(unacked)}

    @staticmethod
    def drained(lag: dict) -> bool:
        return not (lag["lagging_memories"] or lag["unextracted_messages"] or lag["queue_celery"]
                    or lag["queue_vectors"] or lag["unacked"])

    def counts(self) -> dict:
        rows = {}
        with self.lock, self.db.cursor() as cursor:
            cursor.execute("SELECT kind, status, COUNT(*) FROM memory_memory GROUP BY kind, status")
            rows["memories"] = {f"{kind}/{status}": n for kind, status, n in cursor.fetchall()}
            cursor.execute("SELECT role, COUNT(*) FROM conversations_message GROUP BY role")
            rows["messages"] = dict(cursor.fetchall())
            cursor.execute("SELECT COUNT(*) FROM memory_memory WHERE status = 'active'")
            rows["active_memories"] = cursor.fetchone()[0]
        return rows

    def close(self) -> None:
        self.db.close()
        self.redis.close()


def mysql_params(url: str) -> dict:
    u = urlparse(url)
    return {"host": u.hostname or "127.0.0.1", "port": u.port or 3306, "user": u.username or "root",
            "password": u.password or ""}


def pick_redis_db(redis_url: str, wanted: int | None) -> int:
    import redis

    if wanted is not None:
        return wanted
    for db in range(1, 13):
        if db in TESTS_REDIS_DBS:
            continue
        client = redis.Redis.from_url(f"{redis_url}/{db}")
        try:
            if client.dbsize() == 0:
                return db
        finally:
            client.close()
    raise SystemExit("no empty Redis database in 1..12: pass --redis-db N")


# --------------------------------------------------------------------------- workload

@dataclass
class Sample:
    endpoint: str
    ms: float
    status: int  # 0: no response (exception)
    error: str = ""


@dataclass
class Target:
    key: str
    user: str
    conversation_id: int


class Workload:
    """Builds realistic requests (zh/en, from bench.synth) for one client thread."""

    def __init__(self, seed: int) -> None:
        from bench.synth import TextGen

        self.rng = random.Random(seed)
        self.gen = TextGen(seed + 7)

    def turn(self) -> list[dict]:
        """One agent turn: the user's message, sometimes a tool call and its results, the reply."""
        from bench.synth import conversation_turns

        return conversation_turns(self.rng.randrange(1 << 30), self.rng.choice([2, 2, 2, 3, 4, 5]), tool_share=0.25,
                                  max_tool_chars=3000)

    def query(self) -> str:
        memory = self.gen.memory("x", self.rng.choice(["preference", "fact", "event", "context"]))
        return self.gen.query_for(memory, cross_lingual=self.rng.random() < 0.2)[0]

    def memory(self) -> dict:
        kind = self.rng.choices(["preference", "fact", "event", "context"], [3, 4, 2, 1])[0]
        return {"kind": kind, "content": self.gen.memory("x", kind).content,
                "importance": round(self.rng.uniform(0.3, 0.9), 2)}

    def request(self, endpoint: str, target: Target) -> tuple[str, dict]:
        if endpoint == "append":
            return f"/api/v1/conversations/{target.conversation_id}/messages/batch", {"messages": self.turn()}
        if endpoint == "recall":
            return "/api/v1/recall", {"query": self.query(), "k": 8}
        if endpoint == "context":
            return (f"/api/v1/conversations/{target.conversation_id}/context",
                    {"message": self.query() + "?", "budget": self.rng.choice([1500, 4000])})
        return "/api/v1/memories", self.memory()


def _client(base_url: str, key: str | None = None):
    import httpx

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=base_url, timeout=120.0, headers=headers)


def drive(base_url: str, targets: list[Target], mix: dict[str, float], *, seconds: float, concurrency: int,
          seed: int, rate: float = 0.0) -> tuple[list[Sample], float]:
    """Run the mixed workload for ``seconds`` from ``concurrency`` threads. Returns (samples, elapsed).

    With ``rate``, each thread starts a request every ``concurrency / rate`` seconds (a thread that
    falls behind does not burst to catch up); without, each starts the next as soon as one returns.
    """
    import httpx

    names, weights = list(mix), list(mix.values())
    samples: list[Sample] = []
    lock = threading.Lock()
    start_gate = threading.Event()
    deadline = [0.0]

    def run(i: int) -> None:
        work = Workload(seed * 1000 + i)
        local: list[Sample] = []
        clients: dict[str, httpx.Client] = {}
        start_gate.wait()
        interval = concurrency / rate if rate else 0.0
        next_start = time.perf_counter() + work.rng.uniform(0, interval)
        try:
            while time.perf_counter() < deadline[0]:
                if interval:
                    pause = next_start - time.perf_counter()
                    if pause > 0:
                        time.sleep(pause)
                    next_start = max(next_start + interval, time.perf_counter())
                    if time.perf_counter() >= deadline[0]:
                        break
                target = work.rng.choice(targets)
                endpoint = work.rng.choices(names, weights)[0]
                path, body = work.request(endpoint, target)
                client = clients.get(target.key) or clients.setdefault(target.key, _client(base_url, target.key))
                t0 = time.perf_counter()
                try:
                    response = client.post(path, json=body, headers={"X-Memory-User": target.user})
                    ms = (time.perf_counter() - t0) * 1000
                    ok = response.status_code < 400
                    local.append(Sample(endpoint, ms, response.status_code,
                                        "" if ok else response.text[:200]))
                except httpx.HTTPError as exc:
                    local.append(Sample(endpoint, (time.perf_counter() - t0) * 1000, 0, type(exc).__name__))
        finally:
            for client in clients.values():
                client.close()
            with lock:
                samples.extend(local)

    threads = [threading.Thread(target=run, args=(i,), name=f"load-{i}") for i in range(concurrency)]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    deadline[0] = t0 + seconds
    start_gate.set()
    for t in threads:
        t.join()
    return samples, time.perf_counter() - t0


def summarise(samples: list[Sample], elapsed: float) -> dict:
    by = defaultdict(list)
    for s in samples:
        by[s.endpoint].append(s)
    out = {}
    for endpoint in list(ENDPOINTS) + ["all"]:
        group = samples if endpoint == "all" else by.get(endpoint, [])
        if not group:
            continue
        errors = [s for s in group if s.status == 0 or s.status >= 400]
        out[endpoint] = {
            "requests": len(group), "per_second": round(len(group) / elapsed, 2), "errors": len(errors),
            "error_rate": round(len(errors) / len(group), 5),
            "status": dict(Counter(str(s.status) for s in group)),
            "error_examples": sorted({f"{s.status} {s.error}" for s in errors})[:5],
            "ms": common.stats([s.ms for s in group]),
        }
    return out


# --------------------------------------------------------------------------- main

def wait_for(condition, timeout: float, interval: float = 0.25) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return bool(condition())


def facts(args, env: dict[str, str], redis_db: int, database: str) -> dict:
    return {
        "cores": os.cpu_count(), "cpu": common._cpu_model(), "mem_total_gib": common._mem_total_gib(),
        "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
        "python": sys.version.split()[0], "django": common._version("django"), "celery": common._version("celery"),
        "gunicorn": common._version("gunicorn"), "qdrant_edge": common._version("qdrant-edge-py"),
        "httpx": common._version("httpx"), "mysql_driver": common._version("mysqlclient") or
        f"PyMySQL {common._version('PyMySQL')}", "database": database, "redis_db": redis_db,
        "embedding_model": env.get("EMBEDDING_MODEL", "(settings default)"), "git": common._git_head(),
        "command": " ".join(["python", "-m", "bench.load", *sys.argv[1:]]),
    }


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.embedded:
        from bench.load_embedded import run

        return run(args)
    mix = parse_mix(args.mix)
    t_begin = time.perf_counter()
    log = (lambda m: None) if args.quiet else (
        lambda m: print(f"[{time.perf_counter() - t_begin:7.1f}s] {m}", file=sys.stderr, flush=True))
    if args.var_dir:
        var_dir, temp = Path(args.var_dir).resolve(), False
        var_dir.mkdir(parents=True, exist_ok=True)
    else:
        var_dir, temp = Path(tempfile.mkdtemp(prefix="bench-load-")), True
    database = f"memsvc_load_{os.getpid()}"
    mysql = mysql_params(args.mysql)
    redis_db = pick_redis_db(args.redis, args.redis_db)
    redis_url = f"{args.redis}/{redis_db}"
    port = args.port or free_port()

    env = {k: v for k, v in os.environ.items() if k not in _SERVICE_ENV}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", DATABASE_URL=f"{args.mysql}/{database}", REDIS_URL=redis_url,
               MEMORY_VAR_DIR=str(var_dir / "var"), SECRET_KEY=secrets.token_urlsafe(32), LOG_LEVEL="WARNING",
               PYTHONUNBUFFERED="1",
               # The per-key throttle would answer 429 in a long run from few keys; it still runs (cost kept).
               API_RATE_LIMIT="10000000/min")
    if args.embedding_model:
        env["EMBEDDING_MODEL"] = args.embedding_model
    if args.embedding_threads:
        env["EMBEDDING_THREADS"] = str(args.embedding_threads)

    import pymysql
    import redis

    bench = common.Bench(name=NAME, args=args, var_dir=var_dir, temp=temp,
                         started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), t0=t_begin)
    bench.facts = facts(args, env, redis_db, database)
    admin = pymysql.connect(**mysql, autocommit=True, charset="utf8mb4")
    broker = redis.Redis.from_url(redis_url)
    broker.flushdb()
    with admin.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE `{database}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
    log(f"database {database}, redis db {redis_db}, var dir {var_dir}")
    node = Deployment(var_dir, env, port)
    probe = None
    result: dict = {}
    try:
        # ------------------------------------------------------------- deploy
        t0 = time.perf_counter()
        node.manage("migrate", "--noinput", "-v0")
        keys = [node.manage("create_api_key", f"load-org-{i}", "--name", "load").strip().splitlines()[-1]
                for i in range(args.orgs)]
        timings = {"migrate_and_keys_s": round(time.perf_counter() - t0, 1)}
        log(f"migrated, {len(keys)} API keys")
        t0 = time.perf_counter()
        node.start("web", [sys.executable, "-m", "gunicorn", "config.wsgi", "-b", f"127.0.0.1:{port}", "-w", "1",
                           "--threads", str(args.web_threads), "--timeout", "120", "--no-control-socket"])
        node.start("worker", [sys.executable, "-m", "celery", "-A", "config", "worker", "-l", "info", "--concurrency",
                              str(args.worker_concurrency), "-Q", "celery", "-n", f"load{os.getpid()}@%h"])
        base_url = f"http://127.0.0.1:{port}"

        def ready() -> bool:
            import httpx

            try:
                body = httpx.get(f"{base_url}/readyz", timeout=5).json()
            except (httpx.HTTPError, ValueError):
                return False
            return body.get("status") == "ready" and body["checks"]["vector_consumer"]["status"] == "ok"

        up = wait_for(lambda: ready() and re.search(r"\bready\.", node.log("worker")) is not None, timeout=240)
        if not up or not all(node.alive().values()):
            raise RuntimeError("deployment did not come up:\n" + node.log("web")[-3000:] + node.log("worker")[-3000:])
        timings["processes_ready_s"] = round(time.perf_counter() - t0, 1)
        log(f"gunicorn (pid {node.web_pid()}) and celery worker up")
        probe = Probe(mysql, database, redis_url)

        # ------------------------------------------------------------- setup (not measured)
        t0 = time.perf_counter()
        targets: list[Target] = []
        for o, key in enumerate(keys):
            with _client(base_url, key) as client:
                for u in range(args.users):
                    user = f"user-{o}-{u}"
                    r = client.post("/api/v1/conversations", json={"external_id": f"load-{u}", "title": "load"},
                                    headers={"X-Memory-User": user})
                    r.raise_for_status()
                    targets.append(Target(key, user, r.json()["id"]))
        seeder = Workload(args.seed)
        with _client(base_url) as client:
            for target in targets:
                for _ in range(args.seed_memories):
                    client.post("/api/v1/memories", json=seeder.memory(), headers={
                        "Authorization": f"Bearer {target.key}", "X-Memory-User": target.user}).raise_for_status()
                for _ in range(2):  # warms extraction in the worker's processes and context/recall in the web
                    body = {"messages": seeder.turn()}
                    client.post(f"/api/v1/conversations/{target.conversation_id}/messages/batch", json=body, headers={
                        "Authorization": f"Bearer {target.key}", "X-Memory-User": target.user}).raise_for_status()
                for endpoint in ("recall", "context"):
                    path, body = seeder.request(endpoint, target)
                    client.post(path, json=body, headers={"Authorization": f"Bearer {target.key}",
                                                          "X-Memory-User": target.user}).raise_for_status()
        drained_setup = wait_for(lambda: Probe.drained(probe.lag()), timeout=args.drain_timeout, interval=0.5)
        timings["setup_and_drain_s"] = round(time.perf_counter() - t0, 1)
        if not drained_setup:
            raise RuntimeError(f"setup did not drain: {probe.lag()}")
        log(f"setup: {len(targets)} users, {probe.counts()['active_memories']} active memories; drained")

        # ------------------------------------------------------------- load
        rss_start, cpu_start, load_start = node.rss(), node.cpu(), os.getloadavg()
        series: list[dict] = []
        stop_sampling = threading.Event()

        def sample() -> None:
            t_start = time.perf_counter()
            while not stop_sampling.wait(args.sample_interval):
                try:
                    point = {"t": round(time.perf_counter() - t_start, 1), **probe.lag(), **node.rss(),
                             "load1": round(os.getloadavg()[0], 2)}
                except Exception as exc:  # a probe must not kill the run
                    point = {"t": round(time.perf_counter() - t_start, 1), "probe_error": type(exc).__name__}
                point.pop("worker_processes", None)
                series.append(point)

        sampler = threading.Thread(target=sample, name="sampler", daemon=True)
        sampler.start()
        log(f"load: {args.seconds:.0f} s, {args.concurrency} threads, mix {mix}")
        samples, elapsed = drive(base_url, targets, mix, seconds=args.seconds, concurrency=args.concurrency,
                                 seed=args.seed, rate=args.rate)
        lag_end = probe.lag()
        rss_end, cpu_end, load_end = node.rss(), node.cpu(), os.getloadavg()
        log(f"load done: {len(samples)} requests in {elapsed:.1f} s; lag {lag_end}")

        # ------------------------------------------------------------- drain
        t0 = time.perf_counter()
        drained = wait_for(lambda: Probe.drained(probe.lag()), timeout=args.drain_timeout, interval=0.25)
        drain_s = round(time.perf_counter() - t0, 2)
        stop_sampling.set()
        sampler.join(timeout=10)
        lag_after = probe.lag()
        rss_after, cpu_after = node.rss(), node.cpu()
        log(f"drained in {drain_s} s" if drained else f"NOT drained after {drain_s} s: {lag_after}")
        import httpx

        ready_body = httpx.get(f"{base_url}/readyz", timeout=10).json()
        counts = probe.counts()
        points = ready_body["checks"]["vector_index"].get("points")
        alive = node.alive()
        peak = {"web": max((p.get("web") or 0 for p in series), default=None),
                "worker": max((p.get("worker") or 0 for p in series), default=None)}

        endpoints = summarise(samples, elapsed)
        result = {
            "setup": {"orgs": args.orgs, "users": len(targets), "seed_memories_per_user": args.seed_memories,
                      "web_threads": args.web_threads, "worker_concurrency": args.worker_concurrency,
                      "mix": mix, "concurrency": args.concurrency, "rate": args.rate or None, **timings},
            "load": {"seconds": round(elapsed, 1), "requests": len(samples),
                     "per_second": round(len(samples) / elapsed, 2),
                     "load_avg_start": [round(x, 2) for x in load_start], "load_avg_end": [round(x, 2) for x in load_end]},
            "endpoints": endpoints,
            "rss_mb": {"start": rss_start, "end_of_load": rss_end, "after_drain": rss_after, "peak_sampled": peak,
                       "growth_during_load": {k: _diff(rss_end.get(k), rss_start.get(k)) for k in ("web", "worker")},
                       "growth_to_after_drain": {k: _diff(rss_after.get(k), rss_start.get(k)) for k in ("web", "worker")}},
            "cpu_seconds": {
                "load": {k: round(cpu_end[k] - cpu_start[k], 1) for k in cpu_start},
                "drain": {k: round(cpu_after[k] - cpu_end[k], 1) for k in cpu_start}},
            "lag_at_end_of_load": lag_end,
            "lag_peak_during_load": {key: max((p.get(key, 0) for p in series if p["t"] <= elapsed), default=0)
                                     for key in ("lagging_memories", "oldest_lagging_s", "unextracted_messages",
                                                 "oldest_unextracted_s", "queue_celery", "queue_vectors")},
            "drain": {"drained": drained, "seconds": drain_s, "after": lag_after},
            "final": {**counts, "vector_points": points, "points_match_active": points == counts["active_memories"],
                      "processes_alive": alive},
            "series": series,
        }
    finally:
        if probe is not None:
            probe.close()
        took = node.stop()
        if result:
            result["shutdown_s"] = took
            result["logs_tail"] = {name: _errors(node.log(name)) for name in ("web", "worker")}
        if args.keep:
            log(f"kept: database {database}, redis db {redis_db}, var dir {var_dir}")
        else:
            with admin.cursor() as cursor:
                cursor.execute(f"DROP DATABASE IF EXISTS `{database}`")
            broker.flushdb()
            if temp:
                shutil.rmtree(var_dir, ignore_errors=True)
        admin.close()
        broker.close()

    out = common.write_results(bench, result)
    report(bench.facts, result)
    print(f"\nJSON: {out}")
    errors = result["endpoints"].get("all", {}).get("errors", 0)
    return 0 if (errors == 0 and result["drain"]["drained"] and result["final"]["points_match_active"]) else 1


def _diff(a, b):
    return round(a - b, 1) if a is not None and b is not None else None


def _errors(text: str) -> list[str]:
    """Error lines of a process log (tracebacks and ERROR/CRITICAL records), last 20."""
    lines = [line for line in text.splitlines() if re.search(r"\b(ERROR|CRITICAL|Traceback)\b", line)]
    return lines[-20:]


def report(facts: dict, r: dict) -> None:
    print(f"command: `{facts['command']}`")
    print(f"machine: {facts['cores']} cores, {facts['cpu']}, {facts['mem_total_gib']} GiB; load avg at start "
          f"{r['load']['load_avg_start']}, at end {r['load']['load_avg_end']}")
    print(f"stack: python {facts['python']}, django {facts['django']}, celery {facts['celery']}, gunicorn "
          f"{facts['gunicorn']}, qdrant-edge {facts['qdrant_edge']}, {facts['mysql_driver']}, model "
          f"{facts['embedding_model']}, git {facts['git']}")
    s = r["setup"]
    print(f"deployment: gunicorn 1 worker × {s['web_threads']} threads (+ vectors consumer thread), celery worker "
          f"-Q celery --concurrency {s['worker_concurrency']}; {s['orgs']} orgs, {s['users']} users; "
          f"{s['concurrency']} client threads"
          f"{', paced at ' + str(s['rate']) + ' req/s' if s.get('rate') else ' (closed loop, no think time)'}; "
          f"mix {s['mix']}\n")
    load = r["load"]
    print(f"Load: {load['requests']:,} requests in {load['seconds']} s = {load['per_second']} req/s\n")
    rows = []
    for name in list(ENDPOINTS) + ["all"]:
        e = r["endpoints"].get(name)
        if e:
            rows.append((name, e["requests"], e["per_second"], e["errors"], e["ms"]["p50"], e["ms"]["p95"],
                         e["ms"]["p99"], e["ms"]["max"]))
    print(common.table(["endpoint", "requests", "req/s", "errors", "p50 ms", "p95 ms", "p99 ms", "max ms"], rows))
    rss = r["rss_mb"]
    print()
    print(common.table(["process", "RSS start MiB", "end of load", "after drain", "peak", "growth (load)",
                        "CPU s (load)", "CPU s (drain)"], [
        (name, rss["start"].get(name), rss["end_of_load"].get(name), rss["after_drain"].get(name),
         rss["peak_sampled"].get(name), rss["growth_during_load"].get(name), r["cpu_seconds"]["load"][name],
         r["cpu_seconds"]["drain"][name]) for name in ("web", "worker")]))
    lag, drain = r["lag_at_end_of_load"], r["drain"]
    print()
    peak = r["lag_peak_during_load"]
    print(common.table(["when", "lagging memories", "oldest lag s", "unextracted msgs", "queue celery",
                        "queue vectors", "unacked"], [
        ("peak while loaded (sampled)", peak["lagging_memories"], peak["oldest_lagging_s"],
         peak["unextracted_messages"], peak["queue_celery"], peak["queue_vectors"], None),
        ("end of load", lag["lagging_memories"], lag["oldest_lagging_s"], lag["unextracted_messages"],
         lag["queue_celery"], lag["queue_vectors"], lag["unacked"]),
        (f"after drain ({drain['seconds']} s)", drain["after"]["lagging_memories"], drain["after"]["oldest_lagging_s"],
         drain["after"]["unextracted_messages"], drain["after"]["queue_celery"], drain["after"]["queue_vectors"],
         drain["after"]["unacked"])]))
    f = r["final"]
    print(f"\ndrained to zero: {'yes' if drain['drained'] else 'NO'} in {drain['seconds']} s; vector points "
          f"{f['vector_points']} vs active memories {f['active_memories']} "
          f"({'match' if f['points_match_active'] else 'MISMATCH'}); messages {f['messages']}; processes alive at "
          f"the end {f['processes_alive']}; shutdown {r.get('shutdown_s')}")
    errors = r["endpoints"].get("all", {})
    if errors.get("errors"):
        print(f"ERRORS: {errors['errors']} ({errors['error_rate']:.3%}): {errors['error_examples']}")
    for name, lines in (r.get("logs_tail") or {}).items():
        if lines:
            print(f"{name} log errors (last {len(lines)}):\n  " + "\n  ".join(lines))


if __name__ == "__main__":
    sys.exit(main())
