"""Shared helpers for the benchmarks (DESIGN §10): isolated setup, timers, percentiles, RSS, disk
size, markdown tables and JSON results.

Every benchmark runs on the embedded profile in a fresh var dir (SQLite + qdrant-edge shard +
tiktoken cache), unless ``--var-dir`` is given, and measures its floor in the same run so that the
reported ratio survives a noisy machine.

Import order matters: ``setup()`` sets the environment and calls ``django.setup()``; project
modules are imported only after it.
"""
from __future__ import annotations

import argparse
import atexit
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = Path(__file__).resolve().parent / "results"

# Variables that would switch an adapter to a shared service (and write into someone else's
# database or index): the benchmarks measure the embedded profile in their own var dir.
_SERVICE_ENV = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "QDRANT_URL", "QDRANT_API_KEY",
                "VECTOR_INDEX_PATH", "TIKTOKEN_CACHE_DIR", "CELERY_TASK_ALWAYS_EAGER", "LLM_BASE_URL")


# --------------------------------------------------------------------------- arguments and setup

def arg_parser(name: str, description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m bench.{name}", description=description)
    parser.add_argument("--var-dir", help="use this var dir (SQLite, vector index, caches) instead of a fresh temp dir")
    parser.add_argument("--keep", action="store_true", help="keep the temp var dir after the run")
    parser.add_argument("--seed", type=int, default=1234, help="random seed for the synthetic data")
    parser.add_argument("--out", help=f"result JSON path (default bench/results/{name}.json)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    parser.add_argument("--embedding-threads", type=int,
                        help="EMBEDDING_THREADS for this run (default: the setting's, EMBEDDING_THREADS, 1 unless set)")
    return parser


@dataclass
class Bench:
    name: str
    args: argparse.Namespace
    var_dir: Path
    temp: bool
    started_at: str
    t0: float
    facts: dict[str, Any] = field(default_factory=dict)

    def log(self, message: str) -> None:
        if not self.args.quiet:
            print(f"[{time.perf_counter() - self.t0:7.1f}s] {message}", file=sys.stderr, flush=True)


def setup(name: str, args: argparse.Namespace) -> Bench:
    """Point the settings at a fresh var dir, start Django and migrate the fresh SQLite DB."""
    t0 = time.perf_counter()
    if args.var_dir:
        var_dir, temp = Path(args.var_dir).resolve(), False
        var_dir.mkdir(parents=True, exist_ok=True)
    else:
        var_dir, temp = Path(tempfile.mkdtemp(prefix=f"bench-{name}-")), True
    for key in _SERVICE_ENV:
        os.environ.pop(key, None)
    os.environ["MEMORY_VAR_DIR"] = str(var_dir)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    # The API throttle would otherwise start answering 429 in long HTTP runs; it still runs (cost kept).
    os.environ.setdefault("API_RATE_LIMIT", "10000000/min")
    os.environ.setdefault("LOG_LEVEL", "ERROR")
    if getattr(args, "embedding_threads", None):
        os.environ["EMBEDDING_THREADS"] = str(args.embedding_threads)
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    engine = settings.DATABASES["default"]["ENGINE"]
    if not engine.endswith("sqlite3"):
        raise SystemExit(f"refusing to run on {engine}: the benchmarks use a fresh embedded SQLite DB")
    bench = Bench(name=name, args=args, var_dir=var_dir, temp=temp,
                  started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), t0=t0)
    bench.log(f"var dir {var_dir}")
    call_command("migrate", interactive=False, verbosity=0)
    bench.log("migrated")
    if temp and not args.keep:
        atexit.register(_cleanup, var_dir)
    return bench


def _cleanup(var_dir: Path) -> None:
    try:
        from memory.vector_index import reset_vector_index

        reset_vector_index()
    except Exception:
        pass
    shutil.rmtree(var_dir, ignore_errors=True)


# --------------------------------------------------------------------------- machine facts

def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def _mem_total_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _git_head() -> str | None:
    try:  # read-only
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True,
                              text=True, timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return f"{head}{'+dirty' if dirty else ''}" if head else None
    except (OSError, subprocess.SubprocessError):
        return None


def machine_facts(embedder=None) -> dict[str, Any]:
    import sqlite3

    from django.conf import settings

    facts = {
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu": _cpu_model(),
        "mem_total_gib": _mem_total_gib(),
        "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "platform": platform.platform(),
        "django": _version("django"),
        "sqlite": sqlite3.sqlite_version,
        "qdrant_edge": _version("qdrant-edge-py"),
        "numpy": _version("numpy"),
        "db_engine": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
        "vector_index": "qdrant-server" if settings.QDRANT_URL else "qdrant-edge (embedded)",
        "cache": settings.CACHES["default"]["BACKEND"].rsplit(".", 1)[-1],
        "celery_eager": bool(settings.CELERY_TASK_ALWAYS_EAGER),
        "embedding_threads": settings.EMBEDDING_THREADS,
        "git": _git_head(),
        "command": " ".join(["python", "-m", f"bench.{Path(sys.argv[0]).stem}"] + sys.argv[1:])
        if sys.argv and sys.argv[0].endswith(".py") else " ".join(sys.argv),
    }
    if embedder is not None:
        facts["model_id"] = embedder.model_id
        facts["model_dim"] = embedder.dim
    return facts


def cpu_times() -> list[int] | None:
    """The machine's CPU time counters (/proc/stat's first line), or None off Linux."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            return [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return None


def steal_share(start: list[int] | None) -> float | None:
    """The share of CPU time the hypervisor took from this VM since `start` (cpu_times()): time the
    benchmark's processes waited for a CPU the load average does not show."""
    end = cpu_times()
    if not start or not end or len(end) < 8:
        return None
    delta = [b - a for a, b in zip(start, end)]
    total = sum(delta[:8])  # user .. steal (guest time is counted in user)
    return round(delta[7] / total, 3) if total else None


def print_facts(facts: dict[str, Any]) -> None:
    print(f"command: `{facts.get('command')}`")
    print(f"machine: {facts.get('cores')} cores ({facts.get('cores_usable')} usable), {facts.get('cpu')}, "
          f"{facts.get('mem_total_gib')} GiB, load avg at start {facts.get('load_avg_at_start')}")
    print(f"python {facts.get('python')}, django {facts.get('django')}, sqlite {facts.get('sqlite')}, "
          f"qdrant-edge {facts.get('qdrant_edge')}, model {facts.get('model_id')} ({facts.get('model_dim')}-d), "
          f"git {facts.get('git')}, embedding threads {facts.get('embedding_threads')}")
    load = (facts.get("load_avg_at_start") or [0])[0]
    if facts.get("cores") and load > facts["cores"]:
        print(f"WARNING: 1-min load average {load} > {facts['cores']} cores at start: other work shares the CPUs, "
              f"absolute figures are noisy (the floor ratios less so)")
    print()


# --------------------------------------------------------------------------- timing and statistics

def now() -> float:
    return time.perf_counter()


def ms_since(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


def timed(fn: Callable[..., Any], *args, **kwargs) -> tuple[Any, float]:
    """(result, elapsed ms) of one call."""
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, (time.perf_counter() - start) * 1000.0


def percentile(samples: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), q in 0..100."""
    if not samples:
        return float("nan")
    xs = sorted(samples)
    if len(xs) == 1:
        return float(xs[0])
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return float(xs[lo] + (xs[hi] - xs[lo]) * (pos - lo))


def stats(samples: Sequence[float]) -> dict[str, float]:
    """n, mean, min, p50, p95, p99, max of millisecond samples (rounded to µs)."""
    if not samples:
        return {"n": 0}
    return {
        "n": len(samples),
        "mean": round(sum(samples) / len(samples), 3),
        "min": round(min(samples), 3),
        "p50": round(percentile(samples, 50), 3),
        "p95": round(percentile(samples, 95), 3),
        "p99": round(percentile(samples, 99), 3),
        "max": round(max(samples), 3),
    }


def ratio(a: float, b: float) -> float | None:
    return round(a / b, 2) if b else None


def ratios(measured: dict[str, float], floor: dict[str, float], keys: Iterable[str] = ("p50", "p95")) -> dict[str, float | None]:
    return {k: ratio(measured[k], floor[k]) for k in keys if k in measured and k in floor}


def sql_capture(fn: Callable[..., Any], *args, **kwargs) -> dict[str, Any]:
    """Run fn once and summarise the SQL it issued: count, and statements grouped by verb + table."""
    import re
    from collections import Counter

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        fn(*args, **kwargs)
    groups: Counter[str] = Counter()
    for q in ctx.captured_queries:
        sql = q["sql"].lstrip()
        verb = sql.split(None, 1)[0].upper() if sql else "?"
        m = re.search(r'(?:FROM|INTO|UPDATE)\s+"([^"]+)"', sql)
        groups[f"{verb} {m.group(1) if m else ''}".strip()] += 1
    return {"count": len(ctx.captured_queries), "by_statement": dict(groups.most_common())}


# --------------------------------------------------------------------------- memory and disk

def _proc_status_kb(field_name: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def rss_mb() -> float | None:
    """Resident set size of this process in MiB (psutil if installed, else /proc/self/status VmRSS)."""
    try:
        import psutil

        return round(psutil.Process().memory_info().rss / 1024 / 1024, 1)
    except ImportError:
        kb = _proc_status_kb("VmRSS")
        return round(kb / 1024, 1) if kb is not None else None


def peak_rss_mb() -> float | None:
    """Peak RSS (VmHWM) so far, MiB."""
    kb = _proc_status_kb("VmHWM")
    if kb is None:
        import resource

        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(kb / 1024, 1)


def dir_size(path: Path | str) -> int:
    """Bytes actually allocated under path (sparse files counted by their blocks)."""
    total = 0
    root = Path(path)
    if not root.exists():
        return 0
    for dirpath, _dirnames, filenames in os.walk(root):
        for fname in filenames:
            try:
                st = os.lstat(os.path.join(dirpath, fname))
            except OSError:
                continue
            total += min(st.st_size, st.st_blocks * 512) if st.st_blocks else st.st_size
    return total


def var_sizes(var_dir: Path) -> dict[str, int]:
    """Disk use of the embedded profile: SQLite (db + WAL + SHM), the qdrant shard(s), all of var/."""
    sqlite = sum(os.path.getsize(p) for p in var_dir.glob("memory.sqlite3*") if p.is_file())
    return {"sqlite_bytes": sqlite, "qdrant_bytes": dir_size(var_dir / "qdrant"), "var_bytes": dir_size(var_dir)}


def human_bytes(n: float | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


# --------------------------------------------------------------------------- output

def fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        if value != value:  # NaN
            return "–"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(fmt(v) for v in row) + " |")
    return "\n".join(lines)


def write_results(bench: Bench, payload: dict[str, Any]) -> Path:
    import numpy as np  # noqa: F401  (numbers in payload may be numpy scalars)

    out = Path(bench.args.out) if bench.args.out else RESULTS_DIR / f"{bench.name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    facts = dict(bench.facts)
    facts["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    doc = {
        "benchmark": bench.name,
        "started_at": bench.started_at,
        "wall_seconds": round(time.perf_counter() - bench.t0, 1),
        "machine": facts,
        "args": {k: v for k, v in vars(bench.args).items()},
        "var_dir": str(bench.var_dir) if (not bench.temp or bench.args.keep) else None,
        **payload,
    }
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, ensure_ascii=False, indent=2, default=_json_default) + "\n", encoding="utf-8")
    os.replace(tmp, out)
    return out


def _json_default(value: Any) -> Any:
    try:
        import numpy as np

        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, np.ndarray):
            return value.tolist()
    except ImportError:
        pass
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, (datetime, Path)):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def goal_mark(value: float | None, limit: float) -> str:
    if value is None:
        return "?"
    return "met" if value <= limit else "MISSED"
