"""Fault-injection helpers: real backends the tests start (and kill) themselves on spare loopback ports.

Every test here counts what it did (`Tally`: attempted / succeeded / lost / duplicated, plus free-form
extras), asserts on the counts, and records them; the table is printed at the end of the run so it
can be copied into docs/reliability.md.
"""
from __future__ import annotations

import os
import select
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"

# Distinct facts (max pairwise write-path cosine < 0.67 under the default composite embedder, well
# below the duplicate threshold 0.85), so any second memory for one of them is a real duplicate.
FACTS = [
    "My sister lives in Lisbon and teaches chemistry",
    "The north field was planted with winter wheat in October",
    "I am allergic to penicillin",
    "Our accountant is called Maria Keller",
    "The backup generator runs on diesel and needs a filter every 500 hours",
    "I prefer meetings before ten in the morning",
    "My daughter plays the cello in the school orchestra",
    "The grain dryer at the east barn was replaced in 2021",
    "I want invoices sent as PDF attachments",
    "Our farm dog is a border collie named Pepper",
    "The irrigation pump draws water from the river at night",
    "I drive a blue pickup truck with a manual gearbox",
    "The cooperative pays for milk on the fifteenth of each month",
    "I am learning Spanish on weekday evenings",
    "Our greenhouse grows tomatoes and cucumbers all year",
    "My insurance policy renews every March",
    "The combine harvester has a twelve metre header",
    "I dislike phone calls during lunch",
    "The veterinarian visits the dairy herd every second Tuesday",
    "My favourite book is a history of the Silk Road",
    "The solar panels on the hay shed produce about forty kilowatts",
    "I keep bees behind the orchard",
    "Our bank branch is on Station Road",
    "The sprayer nozzles were calibrated last April",
    "My grandfather founded the farm in 1952",
    "I need reports in metric units",
    "The seed supplier delivers on Fridays only",
    "Our Wi-Fi router sits in the machine workshop",
    "I run a half marathon every autumn",
    "The soil test showed low phosphorus in the south plot",
    "My wife manages the farm shop accounts",
    "The fuel tank holds three thousand litres",
    "I want reminders sent by text message, not email",
    "The old stone barn is a listed building",
    "Our apprentice starts work at seven",
    "I am vegetarian",
    "The weather station reports wind speed every ten minutes",
    "Our pigs are moved to the woodland paddock in summer",
    "I use a standing desk in the farm office",
    "The tractor tyres were bought from a dealer in Hanover",
    "我们农场在黑龙江齐齐哈尔",
    "以后给我的维保建议请按紧急程度从高到低排序",
    "我对花生过敏",
    "我的女儿在北京读大学",
    "我们的拖拉机每年秋天在哈尔滨保养",
    "我喜欢用微信接收通知",
]


# --------------------------------------------------------------------------------------- counts

@dataclass
class Tally:
    fault: str
    attempted: int = 0
    succeeded: int = 0
    lost: int = 0
    duplicated: int = 0
    extra: dict = field(default_factory=dict)

    def line(self) -> str:
        extra = " ".join(f"{k}={v}" for k, v in self.extra.items())
        return (f"FAULT {self.fault}: attempted={self.attempted} succeeded={self.succeeded} lost={self.lost} "
                f"duplicated={self.duplicated}" + (f" | {extra}" if extra else ""))


_TALLIES: list[Tally] = []


@pytest.fixture
def tally(request):
    """A Tally named after the test; recorded for the end-of-run table and printed (visible with -s)."""
    created: list[Tally] = []

    def make(fault: str | None = None) -> Tally:
        t = Tally(fault or request.node.name)
        created.append(t)
        return t

    yield make
    for t in created:
        _TALLIES.append(t)
        print(t.line())


def pytest_terminal_summary(terminalreporter):
    if not _TALLIES:
        return
    profile = "service" if _service_profile() else "embedded"
    terminalreporter.section(f"fault counts ({profile} profile)")
    for t in _TALLIES:
        terminalreporter.write_line(t.line())


def _service_profile() -> bool:
    from django.conf import settings

    return settings.DATABASES["default"]["ENGINE"].endswith("mysql")


# --------------------------------------------------------------------------------------- utilities

try:  # resolved here, not in the forked child (no dlopen between fork and exec)
    import ctypes

    _prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl
except (ImportError, OSError):  # not Linux
    _prctl = None


def die_with_parent() -> None:
    """preexec_fn for test-owned children: the kernel SIGKILLs them if the test process dies (Linux
    PR_SET_PDEATHSIG), so even a killed pytest leaves no redis-server or celery worker behind."""
    if _prctl is not None:
        _prctl(1, signal.SIGKILL)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(condition, timeout: float = 30.0, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return bool(condition())


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class RedisServer:
    """A redis-server of the test's own, as a child process it can SIGKILL and start again."""

    def __init__(self, workdir: Path, port: int | None = None) -> None:
        self.port = port or free_port()
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.proc: subprocess.Popen | None = None
        self.log = open(self.workdir / "redis.log", "ab")

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> "RedisServer":
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--daemonize", "no", "--dir", str(self.workdir)],
            stdout=self.log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
        if not wait_until(lambda: port_open(self.port), timeout=10):
            self.stop()
            raise RuntimeError(f"redis-server did not start on port {self.port}")
        return self

    def kill(self) -> None:
        """SIGKILL: no shutdown, no save; every client connection is cut."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)
        assert wait_until(lambda: not port_open(self.port), timeout=10)

    def pause(self) -> None:
        """SIGSTOP: the port still accepts connections (the kernel's backlog), nothing answers. A
        stalled host or a partition that drops packets looks like this, not like a crash."""
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.proc.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None

    def close(self) -> None:
        self.stop()
        self.log.close()


@pytest.fixture
def redis_server(tmp_path):
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.close()


class TcpProxy:
    """A loopback TCP proxy that can be cut (listener closed and every open connection reset) and
    restored on the same port: a network partition between the service and one backend, while the
    backend itself keeps running with its data."""

    def __init__(self, target_port: int, port: int | None = None, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.port = port or free_port()
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._running = threading.Event()

    def start(self) -> "TcpProxy":
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.settimeout(0.1)
        self._listener = listener
        self._running.set()
        self._thread = threading.Thread(target=self._accept_loop, name=f"tcp-proxy-{self.port}", daemon=True)
        self._thread.start()
        return self

    def _accept_loop(self) -> None:
        while self._running.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=2)
            except OSError:
                client.close()
                continue
            client.settimeout(None)
            upstream.settimeout(None)
            with self._lock:
                self._conns.update((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        try:
            while self._running.is_set():
                readable, _, _ = select.select([a, b], [], [], 0.2)
                for src in readable:
                    data = src.recv(65536)
                    if not data:
                        return
                    (b if src is a else a).sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                self._reset(s)

    def _reset(self, s: socket.socket) -> None:
        with self._lock:
            self._conns.discard(s)
        try:
            # RST rather than FIN: the peer sees the connection die at once.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        except OSError:
            pass
        try:
            s.close()
        except OSError:
            pass

    def cut(self) -> None:
        """Close the listener (new connections are refused) and reset every open connection."""
        self._running.clear()
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            conns = list(self._conns)
        for s in conns:
            self._reset(s)
        assert wait_until(lambda: not port_open(self.port), timeout=10)

    def restore(self) -> None:
        self.start()


@pytest.fixture
def tcp_proxy():
    proxies: list[TcpProxy] = []

    def make(target_port: int) -> TcpProxy:
        proxy = TcpProxy(target_port).start()
        proxies.append(proxy)
        return proxy

    yield make
    for proxy in proxies:
        proxy.cut() if proxy._listener is not None else None


# --------------------------------------------------------------------------------------- service state

def redis_cache_settings(location: str) -> dict:
    """The service profile's django-redis cache (config/settings.py), pointed at `location`."""
    from django.conf import settings

    from common.redis_guard import GuardedConnection

    current = settings.CACHES["default"]
    if current["BACKEND"].endswith("RedisCache"):
        return {"default": {**current, "LOCATION": location, "OPTIONS": dict(current["OPTIONS"])}}
    return {"default": {
        "BACKEND": "django_redis.cache.RedisCache", "LOCATION": location, "KEY_PREFIX": "mem",
        "OPTIONS": {"CLIENT_CLASS": "django_redis.client.DefaultClient", "SOCKET_CONNECT_TIMEOUT": 0.5,
                    "SOCKET_TIMEOUT": 0.5, "IGNORE_EXCEPTIONS": True,
                    "CONNECTION_POOL_KWARGS": {"connection_class": GuardedConnection}},
    }}


@pytest.fixture
def cache_on(settings):
    """Point the Django cache at a Redis URL (settings change resets the cache handlers)."""
    from django.core.cache import cache

    from memory.recall import snapshot_cache

    def use(location: str) -> None:
        cache.close()
        settings.CACHES = redis_cache_settings(location)
        settings.DJANGO_REDIS_IGNORE_EXCEPTIONS = True
        snapshot_cache.clear()

    yield use
    cache.close()


def duplicates(org, user_id: str) -> int:
    """Second copies: an active standing memory, a message (by client ref) or an episode per message."""
    from django.db.models import Count

    from conversations.models import Message
    from memory.models import Memory

    dup_memories = (Memory.objects.filter(org=org, user_id=user_id, status="active").exclude(kind="episode")
                    .values("kind", "content_hash").annotate(n=Count("id")).filter(n__gt=1))
    dup_messages = (Message.objects.filter(org=org, external_ref__isnull=False).values("external_ref")
                    .annotate(n=Count("id")).filter(n__gt=1))
    dup_episodes = (Memory.objects.filter(org=org, user_id=user_id, kind="episode").exclude(status="forgotten")
                    .values("sources__message_id").annotate(n=Count("id", distinct=True)).filter(n__gt=1))
    return sum(r["n"] - 1 for q in (dup_memories, dup_messages, dup_episodes) for r in q)


def post(client, path: str, body: dict):
    return client.post(path, body, format="json")


def env_for_subprocess(**overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(overrides)
    return env


def server_client(org, user: str = "u1"):
    """An API client that behaves as a real server does, for django_db(transaction=True) tests:

    - an unhandled exception becomes a 500 response, not an exception in the test;
    - on-commit hooks run where production runs them (autocommit, as in a web process);
    - before and after each request the connections are checked as Django's request_started /
      request_finished handlers do (`close_old_connections`), which Django's test client skips: a
      connection broken by an outage is dropped and the next request reconnects.
    """
    from django.db import close_old_connections
    from rest_framework.test import APIClient

    from tenancy.services import api_key_create

    class _ServerClient(APIClient):
        def request(self, **kwargs):
            close_old_connections()
            try:
                return super().request(**kwargs)
            finally:
                close_old_connections()

    _, raw = api_key_create(org=org, name=f"faults-{user}")
    client = _ServerClient(raise_request_exception=False)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}", HTTP_X_MEMORY_USER=user)
    client.raw_key = raw
    return client
