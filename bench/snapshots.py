"""What a user outside the recall snapshot cache costs on the request path: the cold build of a
recall snapshot (memory/recall/snapshot.py, decisions D14) on a `bench.recall` store, as the web
process builds it off the request path (every row) and as a recall that finds none builds it (ids
and terms, then the rows of the candidates it looks at, here the 80 newest memories: about what two
back-check rounds read): now (on SQLite, each list read as one concatenated row) and as it was
(row by row); both alone and beside the encode of a Chinese or an English query on the encoder
threads, as a recall runs its build.

The store is the one `bench.recall` built and cached for the same parameters (run that first); it is
opened read-only (`immutable`), so nothing here writes to it. Each run draws other users; every
build is a fresh one (no snapshot is kept between builds), each user built both ways in alternating
order; the store is read once first, so it is in the page cache, as a node that has served for a while
has it. Median of the runs, with the spread; each run prints its load average.

    python -m bench.recall --n 1000000 --per-user 2000 --vectors random --no-service   # builds the store
    python -m bench.snapshots --n 1000000 --per-user 2000 --vectors random             # -> bench/results/snapshots.json
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from bench.common import _SERVICE_ENV, REPO_ROOT, RESULTS_DIR, percentile

NAME = "snapshots"


def parse_args(argv=None) -> tuple[argparse.Namespace, list[str]]:
    p = argparse.ArgumentParser(prog="python -m bench.snapshots", description=__doc__.split("\n\n")[0])
    p.add_argument("--users", type=int, default=40, help="users built per run (default 40)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--candidates", type=int, default=80, help="candidate rows read after a build without rows")
    p.add_argument("--out", help="result JSON (default bench/results/snapshots.json)")
    # The store's parameters, as bench.recall takes them (--n, --per-user, --vectors, --seed, ...).
    return p.parse_known_args(argv)


def _setup(store: Path) -> None:
    from bench.store_cache import onnx_dir

    os.environ.setdefault("EMBEDDING_ONNX_DIR", str(onnx_dir()))
    os.environ["MEMORY_VAR_DIR"] = tempfile.mkdtemp(prefix="bench-snapshots-")
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ.setdefault("LOG_LEVEL", "ERROR")
    for key in _SERVICE_ENV:
        os.environ.pop(key, None)
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    import django

    django.setup()
    from django.db import connections

    # Read-only and lock-free: the cached store must stay as bench.recall left it.
    connections["default"].settings_dict["NAME"] = f"file:{store / 'var' / 'memory.sqlite3'}?immutable=1"


# Queries encoded beside a build, as a recall encodes its query while it builds (a counter makes
# each text new).
_QUERIES = {"zh": "我上周在杭州买的那台咖啡机是什么牌子", "en": "what did I say about the coffee machine I bought"}


def _measure(users: list[tuple[int, str]], candidates: int) -> dict[str, list[float]]:
    from memory.recall import snapshot_build
    from memory.recall.query_vectors import start_query_vectors
    from memory.vectors import active_embedder

    embedder = active_embedder()
    counter = iter(range(10**9))

    def every_row(org_id, user_id):
        t0 = time.perf_counter()
        snapshot_build.build(org_id, user_id, 0)
        return {"every_row": time.perf_counter() - t0}

    def lazy(org_id, user_id, build, name):
        t0 = time.perf_counter()
        built = build(org_id, user_id)
        t1 = time.perf_counter()
        built.candidates(built.ids[:candidates].tolist())
        t2 = time.perf_counter()
        return {f"{name}_ids_and_terms": t1 - t0, f"{name}_candidate_rows": t2 - t1, f"{name}_total": t2 - t0}

    def row_by_row(org_id, user_id):  # how a recall built it before the concatenated reads (SQLite)
        return lazy(org_id, user_id, lambda o, u: snapshot_build._build_row_by_row(o, u, 0, rows=False), "row_by_row")

    def as_recall(org_id, user_id):  # how a recall builds it now
        return lazy(org_id, user_id, lambda o, u: snapshot_build.build(o, u, 0, rows=False), "as_recall")

    def beside(way, lang):
        def measured(org_id, user_id):
            pending = start_query_vectors(f"{_QUERIES[lang]} {next(counter)}", embedder)
            try:
                return {f"{name}_beside_{lang}_encode": seconds for name, seconds in way(org_id, user_id).items()
                        if name.endswith(("_row", "_total"))}
            finally:
                pending()
        return measured

    ways = [every_row, row_by_row, as_recall] + [beside(w, lang) for lang in ("zh", "en") for w in (row_by_row, as_recall)]
    times: dict[str, list[float]] = {}
    for i, (org_id, user_id) in enumerate(users):
        # Each user is built every way; a later build finds the user's pages in SQLite's own cache, so
        # the order rotates from user to user.
        for way in ways[i % len(ways):] + ways[:i % len(ways)]:
            for name, seconds in way(org_id, user_id).items():
                times.setdefault(name, []).append(seconds * 1000)
    return times


def main(argv=None) -> int:
    from bench import recall
    from bench.store_cache import read_meta, store_path

    args, store_argv = parse_args(argv)
    store_args = recall.parse_args(store_argv)
    store = store_path(recall.NAME, recall._store_params(store_args))
    if read_meta(store) is None:
        raise SystemExit(f"no cached store {store.name}: run `python -m bench.recall {' '.join(store_argv)}` first")
    from bench.store_cache import read_pages

    read_pages(store / "var")  # in the page cache, as a serving node has its store
    _setup(store)
    from django.conf import settings

    from memory.models import Memory

    sys.setswitchinterval(settings.PYTHON_SWITCH_INTERVAL_SECONDS)  # as config/wsgi.py sets it

    population = sorted(Memory.objects.values_list("org_id", "user_id").distinct())
    rng = random.Random(store_args.seed)
    rng.shuffle(population)
    warm_up, population = population[:2], population[2:]
    runs = []
    for run in range(args.runs):
        users = population[run * args.users:(run + 1) * args.users] or population[:args.users]
        load = [round(x, 2) for x in os.getloadavg()]
        _measure(warm_up, args.candidates)  # the statements prepared, the code paths warm; never measured
        times = _measure(users, args.candidates)
        row = {"load_avg": load, "users": len(users)}
        for name, samples in times.items():
            row[name] = {"p50": round(percentile(samples, 50), 2), "p95": round(percentile(samples, 95), 2)}
        runs.append(row)
        print(f"run {run + 1}: load {load} " + ", ".join(
            f"{name} p50 {row[name]['p50']} / p95 {row[name]['p95']} ms" for name in times), flush=True)
    summary = {}
    for name in runs[0]:
        if name in ("load_avg", "users"):
            continue
        summary[name] = {q: {"median": sorted(r[name][q] for r in runs)[len(runs) // 2],
                             "min": min(r[name][q] for r in runs), "max": max(r[name][q] for r in runs)}
                         for q in ("p50", "p95")}
    print("\n| build | p50 ms (min–max) | p95 ms (min–max) |\n|---|---|---|")
    for name, q in summary.items():
        print(f"| {name} | {q['p50']['median']} ({q['p50']['min']}–{q['p50']['max']}) "
              f"| {q['p95']['median']} ({q['p95']['min']}–{q['p95']['max']}) |")
    out = Path(args.out) if args.out else RESULTS_DIR / f"{NAME}.json"
    out.write_text(json.dumps({"store": store.name, "params": recall._store_params(store_args),
                               "candidates": args.candidates, "runs": runs, "summary": summary}, indent=2) + "\n")
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
