"""`python -m bench.load --embedded`: the embedded default exactly as `make run` starts it
(migrate, ensure_demo, `gunicorn config.wsgi -w 1 --threads 8` on SQLite, eager Celery, the embedded
shard and the maintenance scheduler in that one process), driven over HTTP at several client counts.

Each client thread is its own user with its own conversation (as independent agents are) and runs
the mixed workload of bench.load (appends of whole turns, recall, context, explicit memory writes).
Every appended message carries a unique ``external_ref``, so after each level the SQLite file tells
what was committed: ``committed_but_failed`` counts messages stored although their request answered
an error (must be 0), ``lost`` messages answered 201 but absent (must be 0). After each level the
run waits until nothing is pending extraction (``pending_after_drain``, must be 0).

    python -m bench.load --embedded                       # 2, 8 and 32 clients, 20 s each
    python -m bench.load --embedded --levels 8 --seconds 10
"""
from __future__ import annotations

import os
import sqlite3
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from bench import common
from bench.load import _SERVICE_ENV, Deployment, Sample, Workload, free_port, parse_mix, summarise, wait_for


def _drive(url: str, key: str, *, clients: int, seconds: float, mix: dict[str, float], seed: int,
           tag: str) -> tuple[list[Sample], dict[str, int], float]:
    """Returns the samples, {external_ref: status} of every appended message, and the elapsed time."""
    import httpx

    names, weights = list(mix), list(mix.values())
    samples: list[Sample] = []
    refs: dict[str, int] = {}
    lock = threading.Lock()
    gate = threading.Barrier(clients + 1)
    deadline = [0.0]

    def run(i: int) -> None:
        work = Workload(seed * 1000 + i)
        local, local_refs = [], {}
        with httpx.Client(base_url=url, timeout=120.0,
                          headers={"Authorization": f"Bearer {key}", "X-Memory-User": f"{tag}-u{i}"}) as http:
            conversation = http.post("/api/v1/conversations", json={"title": f"{tag} client {i}"}).json()["id"]
            gate.wait()
            n = 0
            while time.perf_counter() < deadline[0]:
                endpoint = work.rng.choices(names, weights)[0]
                if endpoint == "append":
                    turn = work.turn()
                    for message in turn:
                        n += 1
                        message["external_ref"] = f"{tag}-{i}-{n}"
                    path, body = f"/api/v1/conversations/{conversation}/messages/batch", {"messages": turn}
                else:
                    from bench.load import Target

                    path, body = work.request(endpoint, Target(key, f"{tag}-u{i}", conversation))
                t0 = time.perf_counter()
                try:
                    response = http.post(path, json=body)
                    status, error = response.status_code, "" if response.status_code < 400 else response.text[:200]
                except httpx.HTTPError as exc:
                    status, error = 0, type(exc).__name__
                local.append(Sample(endpoint, (time.perf_counter() - t0) * 1000, status, error))
                if endpoint == "append":
                    local_refs.update({m["external_ref"]: status for m in body["messages"]})
        with lock:
            samples.extend(local)
            refs.update(local_refs)

    threads = [threading.Thread(target=run, args=(i,), name=f"client-{i}") for i in range(clients)]
    for t in threads:
        t.start()
    gate.wait()
    t0 = time.perf_counter()
    deadline[0] = t0 + seconds
    for t in threads:
        t.join()
    return samples, refs, time.perf_counter() - t0


def _db(var_dir: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{var_dir / 'memory.sqlite3'}?mode=ro", uri=True, timeout=30)


def _pending(var_dir: Path) -> int:
    with _db(var_dir) as db:
        return db.execute("SELECT count(*) FROM conversations_message WHERE extracted_at IS NULL "
                          "AND role IN ('user', 'assistant')").fetchone()[0]


def _stored(var_dir: Path, tag: str) -> Counter:
    with _db(var_dir) as db:
        return Counter(r for (r,) in db.execute("SELECT external_ref FROM conversations_message "
                                                "WHERE external_ref LIKE ?", (f"{tag}-%",)))


def run(args) -> int:
    levels = [int(x) for x in args.levels.split(",")]
    mix = parse_mix(args.mix)
    t_begin = time.perf_counter()
    log = (lambda m: None) if args.quiet else (
        lambda m: print(f"[{time.perf_counter() - t_begin:7.1f}s] {m}", file=sys.stderr, flush=True))
    var_dir = Path(args.var_dir).resolve() if args.var_dir else Path(tempfile.mkdtemp(prefix="bench-load-embedded-"))
    var_dir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in _SERVICE_ENV}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", MEMORY_VAR_DIR=str(var_dir), LOG_LEVEL="WARNING",
               API_RATE_LIMIT="10000000/min", EMBEDDING_ONNX_DIR=str(Path(args.onnx_dir).resolve()))
    if args.embedding_model:
        env["EMBEDDING_MODEL"] = args.embedding_model
    port = args.port or free_port()
    deployment = Deployment(var_dir, env, port)
    load_start = [round(x, 2) for x in os.getloadavg()]
    results: dict = {"facts": {"profile": "embedded (make run)", "cores": os.cpu_count(), "load_avg_at_start": load_start,
                               "web_threads": 8, "seconds_per_level": args.seconds, "mix": args.mix,
                               "git": common._git_head(),
                               "command": " ".join(["python", "-m", "bench.load", *sys.argv[1:]])}, "levels": {}}
    try:
        deployment.manage("migrate", "--noinput", "-v0")
        deployment.manage("ensure_demo")
        key = (var_dir / "demo_api_key.txt").read_text().strip()
        deployment.start("web", [sys.executable, "-m", "gunicorn", "config.wsgi", "-b", f"127.0.0.1:{port}", "-w", "1",
                                 "--threads", "8", "--timeout", "120", "--no-control-socket"])
        import httpx

        def ready() -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        if not wait_for(ready, timeout=180, interval=0.5):
            raise RuntimeError("gunicorn not ready:\n" + deployment.log("web")[-3000:])
        log(f"ready on port {port}")
        for clients in levels:
            tag = f"c{clients}"
            log(f"{clients} clients for {args.seconds:.0f} s")
            samples, refs, elapsed = _drive(f"http://127.0.0.1:{port}", key, clients=clients, seconds=args.seconds,
                                            mix=mix, seed=args.seed + clients, tag=tag)
            load_end = [round(x, 2) for x in os.getloadavg()]
            drain_started = time.perf_counter()
            drained = wait_for(lambda: _pending(var_dir) == 0, timeout=args.drain_timeout, interval=0.5)
            stored = _stored(var_dir, tag)
            summary = summarise(samples, elapsed)
            results["levels"][clients] = {
                "requests": len(samples), "errors": summary["all"]["errors"],
                "server_errors": sum(1 for s in samples if s.status >= 500 or s.status == 0),
                "status": summary["all"]["status"],
                "committed_but_failed": sum(1 for r, status in refs.items() if status >= 400 or status == 0
                                            if stored[r]),
                "lost": sum(1 for r, status in refs.items() if 200 <= status < 300 and not stored[r]),
                "duplicated": sum(n - 1 for n in stored.values() if n > 1),
                "messages": len(refs), "pending_after_drain": _pending(var_dir), "drained": drained,
                "drain_seconds": round(time.perf_counter() - drain_started, 1), "load_avg_at_end": load_end,
                "endpoints": {e: {"requests": v["requests"], "errors": v["errors"], "p50_ms": v["ms"]["p50"],
                                  "p95_ms": v["ms"]["p95"]} for e, v in summary.items()},
            }
            log(f"{clients} clients: {results['levels'][clients]['requests']} requests, "
                f"{results['levels'][clients]['errors']} errors")
    finally:
        deployment.stop()
    report(results)
    out = Path(args.out or common.REPO_ROOT / "bench" / "results" / "load-embedded.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    import json

    out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    print(f"results: {out}")
    bad = any(v["server_errors"] or v["committed_but_failed"] or v["lost"] or v["pending_after_drain"]
              for v in results["levels"].values())
    return 1 if bad else 0


def report(results: dict) -> None:
    f = results["facts"]
    print(f"embedded default (gunicorn -w 1 --threads 8, SQLite), {f['seconds_per_level']:.0f} s per level, "
          f"mix {f['mix']}, load average at start {f['load_avg_at_start']}")
    rows = []
    for clients, r in results["levels"].items():
        per = r["endpoints"]
        rows.append([clients, r["requests"], r["errors"], r["committed_but_failed"], r["lost"], r["pending_after_drain"],
                     *[f"{per[e]['p50_ms']:.0f} / {per[e]['p95_ms']:.0f}" if e in per else "-"
                       for e in ("append", "recall", "context", "write")], r["load_avg_at_end"][0]])
    print(common.table(["clients", "requests", "errors", "committed-but-failed", "lost", "pending after drain",
                        "append p50/p95 ms", "recall", "context", "write", "load (1 min) at end"], rows))
