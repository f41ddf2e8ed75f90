"""A served service for the HTTP measurements: gunicorn as `make run` starts it, on a free local port,
against the benchmark's own var dir, plus a keep-alive JSON client.

The benchmark process and gunicorn must not open the same embedded Qdrant shard (one process owns
it): callers give gunicorn a var dir whose shard the benchmark process does not open, or a var dir
where the benchmark process never touches the vector index (ingest).
"""
from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from bench.common import _SERVICE_ENV, REPO_ROOT


def worker_tmp_dir() -> list[str]:
    """As the Makefile's `run` target: gunicorn's heartbeat file in memory (a chmod per request loop)."""
    return ["--worker-tmp-dir", "/dev/shm"] if os.path.isdir("/dev/shm") else []


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``gunicorn config.wsgi -w 1 --threads 8`` (the Makefile's `run` target) in its own process group."""

    def __init__(self, var_dir: Path, *, threads: int = 8, extra_env: dict[str, str] | None = None,
                 log=lambda msg: None, ready_timeout: float = 300.0, tree: Path = REPO_ROOT):
        self.var_dir = Path(var_dir)
        self.tree = Path(tree)  # the checkout whose code gunicorn serves (bench.recall_ab: another one)
        self.port = free_port()
        self.threads = threads
        self.extra_env = extra_env or {}
        self.log = log
        self.ready_timeout = ready_timeout
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> "Server":
        env = {k: v for k, v in os.environ.items() if k not in _SERVICE_ENV}
        env.update({"MEMORY_VAR_DIR": str(self.var_dir), "DJANGO_SETTINGS_MODULE": "config.settings",
                    "API_RATE_LIMIT": os.environ.get("API_RATE_LIMIT", "10000000/min"),
                    "LOG_LEVEL": os.environ.get("LOG_LEVEL", "ERROR"), **self.extra_env})
        gunicorn = Path(sys.executable).with_name("gunicorn")
        cmd = [str(gunicorn), "config.wsgi", "-b", f"127.0.0.1:{self.port}", "-w", "1", "--threads",
               str(self.threads), "--timeout", "120", *worker_tmp_dir()]
        self.log_path = self.var_dir / "gunicorn.log"
        self._log_file = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, cwd=self.tree, env=env, stdout=self._log_file, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.log(f"gunicorn pid {self.proc.pid} on 127.0.0.1:{self.port} (var dir {self.var_dir})")
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited ({self.proc.returncode}); see {self.log_path}")
            try:
                if self._settled(Client(self.port)):
                    return self
            except OSError:
                pass
            time.sleep(0.3)
        self.__exit__(None, None, None)
        raise RuntimeError(f"gunicorn not ready in {self.ready_timeout}s; see {self.log_path}")

    @staticmethod
    def _settled(client: "Client") -> bool:
        """Measure the steady state a long-running process is in: the port answers at once, but the
        models load and the recall snapshots of the recently active users are built on a background
        thread (memory/jobs/startup_warmup.py) that would otherwise share the cores with the first measured calls."""
        status, body = client.request("GET", "/readyz")
        try:
            warmup = json.loads(body)["checks"]["warmup"]
        except (ValueError, KeyError, TypeError):
            return False
        return bool(warmup.get("settled"))

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # our own session: gunicorn's master and worker only
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self._log_file.close()

    def rss_mb(self) -> float | None:
        """RSS of gunicorn's master + worker, MiB (from /proc)."""
        if self.proc is None:
            return None
        total = 0
        for pid in [self.proc.pid, *_children(self.proc.pid)]:
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            except OSError:
                pass
        return round(total / 1024, 1)


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


class Client:
    """One keep-alive connection (a client library reuses its connection; no TCP handshake per call)."""

    def __init__(self, port: int, *, api_key: str | None = None, timeout: float = 120.0):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        self.api_key = api_key
        self.last_headers = http.client.HTTPMessage()  # the last response's headers

    def request(self, method: str, path: str, body=None, *, user: str | None = None) -> tuple[int, bytes]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        if user:
            headers["X-Memory-User"] = user
        payload = json.dumps(body).encode() if body is not None else None
        try:
            self.conn.request(method, path, body=payload, headers=headers)
            response = self.conn.getresponse()
        except (http.client.HTTPException, ConnectionError):
            self.conn.close()  # the server closed the idle connection: one retry on a fresh one
            self.conn.request(method, path, body=payload, headers=headers)
            response = self.conn.getresponse()
        self.last_headers = response.headers  # kept, not copied: this runs inside the timed call
        return response.status, response.read()
