"""Recall latency against its floor (DESIGN §10), over served HTTP, cold queries, in 3 runs.

A store of N synthetic zh+en memories in one org, ``--per-user`` (500) per user (so N / 500 users),
is built once (bulk rows, batch encoding, bulk upsert) and cached on disk keyed by its parameters
(bench/store_cache.py). Each run is a fresh process on a private copy of the store, with gunicorn
serving a second copy as `make run` serves it (1 worker × 8 threads); it prints its load average.
Every query is measured three ways, interleaved (the order rotates) so machine noise hits all alike:

- floor:   the least the same query needs: the embeddings recall() computes for this query's
           language (a Chinese query: the multilingual model only; otherwise both models, side by
           side on two threads as recall() runs them; a long query's focus too) + one raw filtered
           vector search (org, user, active) of the candidate size, with the raw encoders and the
           raw index: nothing it computes is cached or shared with the measured calls;
- service: ``recall()`` in the run's process;
- HTTP:    ``POST /api/v1/recall`` to gunicorn over a keep-alive connection (auth, throttle,
           validation, serialisation, the WSGI server).

``--no-service`` leaves out recall() in process, for stores larger than the page cache (1M): the
benchmark process reads none of its copy's rows, measures the floor of every query first, closes its
index, and only then starts gunicorn, which serves alone; the target hit comes from the HTTP answers.
At 1M, each process holding its own mapped 3.4 GiB of vectors beside the other slowed both (HTTP p95
41 ms against 35, the floor 15 against 13, median of 3 runs each; docs/performance.md).

Measured queries are never the warm-up queries (different texts), their users are drawn from the
whole population, and a second set is measured right after a write to the query's user (an
explicit memory: the write bumps the user's generation, so recall rebuilds the keyword index).
Figures are reported per language (zh / en) as the median of the runs with the spread (min–max).

    python -m bench.recall                       # 100k memories, 500 per user, 3 runs
    python -m bench.recall --per-user 2000       # 100k memories, 2,000 per user
    python -m bench.recall --n 1000000 --per-user 2000 --vectors random --no-service   # 1M
    python -m bench.recall --n 10000 --runs 1    # a quick look
"""
from __future__ import annotations

import gc
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import common

NAME = "recall"


def parse_args(argv=None):
    p = common.arg_parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=100_000, help="memories in the store (default 100000)")
    p.add_argument("--per-user", type=int, default=500, help="memories per user (default 500; 2000 for the large case)")
    p.add_argument("--runs", type=int, default=3, help="runs, each a fresh process on a fresh copy (default 3)")
    p.add_argument("--queries", type=int, default=300, help="measured cold queries per run (default 300)")
    p.add_argument("--warm", type=int, default=100, help="warm-up queries per run, never measured (default 100)")
    p.add_argument("--after-write", type=int, default=60,
                   help="queries per run measured right after a write to their user (default 60)")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--cross-lingual", type=float, default=0.1, help="share of queries in the other language")
    p.add_argument("--batch", type=int, default=4000, help="build batch size")
    p.add_argument("--vectors", choices=("encode", "random"), default="encode",
                   help="encode the texts (default) or random unit vectors (a fast store for size-only runs)")
    p.add_argument("--samples", type=int, default=24, help="query seeds kept per user (default 24)")
    p.add_argument("--optimize", action="store_true", help="run the shard optimizer (HNSW build) after building")
    p.add_argument("--no-http", action="store_true", help="skip gunicorn and the HTTP path")
    p.add_argument("--no-service", action="store_true",
                   help="skip recall() in this process (for 1M): the floor of every query is measured first, "
                        "then this process closes its index and gunicorn serves alone; the target hit is read "
                        "from the HTTP answers")
    p.add_argument("--server-timing", action="store_true",
                   help="serve with SERVER_TIMING on and report where each served request's time went (its "
                        "Server-Timing header: before the view, the view, recall's own stages, the rest inside "
                        "Django, and outside Django: HTTP parsing, the thread hand-off, the network, the client)")
    p.add_argument("--rebuild", action="store_true", help="build the store again even if it is cached")
    p.add_argument("--role", choices=("main", "build", "run"), default="main", help=argparse_hidden())
    p.add_argument("--run-index", type=int, default=0, help=argparse_hidden())
    p.add_argument("--store", help=argparse_hidden())
    args = p.parse_args(argv)
    if args.no_http and args.no_service:
        p.error("--no-http and --no-service leave nothing to measure")
    return args


def argparse_hidden():
    import argparse

    return argparse.SUPPRESS


def _store_params(args) -> dict:
    return {"n": args.n, "users": _users(args), "seed": args.seed, "vectors": args.vectors, "samples": args.samples,
            "optimize": args.optimize, "model": os.environ.get("EMBEDDING_MODEL", "default")}


def _users(args) -> int:
    return max(1, args.n // max(1, args.per_user))


def main(argv=None) -> int:
    args = parse_args(argv)
    from bench.store_cache import onnx_dir

    os.environ.setdefault("EMBEDDING_ONNX_DIR", str(onnx_dir()))
    if args.role == "build":
        return _build(args)
    if args.role == "run":
        return _run(args)
    return _orchestrate(args, sys.argv[1:] if argv is None else list(argv))


# --------------------------------------------------------------------------- orchestration

def _without(argv: list[str], *options: str) -> list[str]:
    """argv without these options (and their values)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in options:
            skip = True
            continue
        if any(a.startswith(o + "=") for o in options):
            continue
        out.append(a)
    return out


def _child(argv: list[str], role: str, extra: list[str]) -> None:
    cmd = [sys.executable, "-m", "bench.recall", *argv, "--role", role, *extra]
    subprocess.run(cmd, cwd=common.REPO_ROOT, check=True)


def _orchestrate(args, argv: list[str]) -> int:
    from bench.store_cache import read_meta, store_path

    argv = [a for a in argv if a != "--rebuild"]
    store = store_path(NAME, _store_params(args))
    if args.rebuild or read_meta(store) is None:
        print(f"[bench.recall] building the store {store.name} ({args.n:,} memories, {_users(args):,} users)",
              file=sys.stderr, flush=True)
        _child(argv, "build", ["--store", str(store)])
    else:
        print(f"[bench.recall] using the cached store {store}", file=sys.stderr, flush=True)
    meta = read_meta(store)
    runs = []
    tmp = Path(tempfile.mkdtemp(prefix="bench-recall-runs-"))
    try:
        for i in range(args.runs):
            out = tmp / f"run-{i}.json"
            _child(_without(argv, "--out"), "run",
                   ["--store", str(store), "--run-index", str(i), "--out", str(out)])
            runs.append(json.loads(out.read_text(encoding="utf-8")))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    summary = _summarise(runs)
    doc = {"benchmark": NAME, "args": {k: v for k, v in vars(args).items() if k not in ("role", "store", "run_index")},
           "store": {"path": str(store), **{k: v for k, v in meta.items() if k not in ("samples", "api_key")}},
           "summary": summary, "runs": runs}
    out = Path(args.out) if args.out else common.RESULTS_DIR / f"recall-{args.n // 1000}k-{args.per_user}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    _print_summary(args, meta, runs, summary, argv)
    print(f"\nresults: {out}")
    return 0


def _leaves(doc, prefix=()):
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _leaves(value, prefix + (key,))
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool):
        yield prefix, float(doc)


def _summarise(runs: list[dict]) -> dict:
    """Median and spread over the runs of every figure (latencies, ratios, stages)."""
    values: dict[tuple, list[float]] = {}
    for run in runs:
        for key, value in _leaves({"latency_ms": run["latency_ms"], "ratios": run["ratios"],
                                   "stages_ms": run["stages_ms"], "hit_at_k": run["hit_at_k"],
                                   "served_ms": run.get("served_ms", {})}):
            values.setdefault(key, []).append(value)
    out: dict = {}
    for key, xs in values.items():
        node = out
        for part in key[:-1]:
            node = node.setdefault(part, {})
        node[key[-1]] = {"median": round(statistics.median(xs), 3), "min": round(min(xs), 3),
                         "max": round(max(xs), 3), "runs": len(xs)}
    return out


def _cell(summary: dict, *path) -> str:
    node = summary
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            return "–"
    if node["runs"] == 1:
        return common.fmt(node["median"])
    return f"{common.fmt(node['median'])} ({common.fmt(node['min'])}–{common.fmt(node['max'])})"


def _print_summary(args, meta, runs, summary, argv) -> None:
    first = runs[0]
    common.print_facts({**first["machine"], "command": " ".join(["python -m bench.recall", *argv])})
    build = meta.get("build", {})
    print(f"### bench.recall — {args.n:,} memories, {_users(args):,} users ({args.per_user:,} per user), "
          f"{args.runs} run(s) × {args.queries} cold + {args.after_write} after-write queries, k={args.k}, "
          f"candidates={first['config']['candidate_limit']}\n")
    print(f"store: built in {build.get('total_s')} s ({build.get('memories_per_s')} memories/s, vectors "
          f"{build.get('vectors')}), cached at {meta.get('path', '')}")
    for run in runs:
        print(f"run {run['run_index'] + 1}: load avg at start {run['machine']['load_avg_at_start']}, at end "
              f"{run['load_avg_at_end']}, CPU steal {run.get('cpu_steal')} of the measured part; "
              f"RSS bench {run['rss_mb']} MiB, gunicorn {run.get('server_rss_mb')} MiB")
    print("\nmedian of the runs (min–max); ratio = path / floor for the same queries, per run\n")
    rows = []
    for phase, label in (("cold", "cold"), ("after_write", "after a write")):
        for lang in ("zh", "en", "all"):
            for path in ("floor", "service", "http"):
                if (path == "http" and args.no_http) or (path == "service" and args.no_service):
                    continue
                rows.append((label, lang, path, _cell(summary, "latency_ms", phase, lang, path, "n"),
                             _cell(summary, "latency_ms", phase, lang, path, "p50"),
                             _cell(summary, "latency_ms", phase, lang, path, "p95"),
                             "" if path == "floor" else _cell(summary, "ratios", phase, lang, path, "p50"),
                             "" if path == "floor" else _cell(summary, "ratios", phase, lang, path, "p95")))
    print(common.table(["queries", "lang", "path", "n", "p50 ms", "p95 ms", "ratio p50", "ratio p95"], rows))
    if args.no_service:
        print(f"\nrecall() in process not measured (--no-service); target memory in the top {args.k} (from the HTTP "
              f"answers): {_cell(summary, 'hit_at_k')}")
    else:
        _print_stages(args, summary, first)
    if summary.get("served_ms"):
        _print_served(summary)
    if args.n >= 100_000 and args.per_user <= 500 and not args.no_http:
        for lang in ("zh", "en"):
            p95 = summary["latency_ms"]["cold"][lang]["http"]["p95"]["median"]
            ratio = summary["ratios"]["cold"][lang]["http"]["p95"]["median"]
            print(f"goal ({lang}): HTTP p95 {p95} ms (≤ 20: {common.goal_mark(p95, 20.0)}), "
                  f"HTTP/floor p95 {ratio} (≤ 1.5: {common.goal_mark(ratio, 1.5)})")
    if args.n >= 1_000_000 and not args.no_http:
        p95 = summary["latency_ms"]["cold"]["all"]["http"]["p95"]["median"]
        print(f"goal (1M): HTTP p95 {p95} ms (≤ 30: {common.goal_mark(p95, 30.0)})")
    errors = [e for run in runs for e in run.get("http_errors", [])]
    if errors:
        print(f"HTTP errors: {errors[:5]}")
    print(f"disk (run 1's copy): SQLite {common.human_bytes(first['disk']['sqlite_bytes'])}, "
          f"qdrant {common.human_bytes(first['disk']['qdrant_bytes'])}")


def _print_stages(args, summary: dict, first: dict) -> None:
    print("\nrecall() stages, cold (its own timings), p50 / p95 ms:\n")
    stage_rows = []
    for lang in ("zh", "en"):
        for stage in sorted(summary.get("stages_ms", {}).get(lang, {})):
            stage_rows.append((lang, stage, _cell(summary, "stages_ms", lang, stage, "p50"),
                               _cell(summary, "stages_ms", lang, stage, "p95")))
    print(common.table(["lang", "stage", "p50 ms", "p95 ms"], stage_rows))
    print(f"\ntarget memory in the top {args.k}: {_cell(summary, 'hit_at_k')}; SQL per recall (run 1): "
          f"service {first['sql'].get('service_mean')}")


def _print_served(summary: dict) -> None:
    print("\nserved requests, cold, where the time went (Server-Timing; `outside_app`: the client's time "
          "minus `app`), p50 / p95 ms:\n")
    rows = []
    for lang in ("zh", "en"):
        for part in summary["served_ms"].get(lang, {}):
            rows.append((lang, part, _cell(summary, "served_ms", lang, part, "p50"),
                         _cell(summary, "served_ms", lang, part, "p95")))
    print(common.table(["lang", "part", "p50 ms", "p95 ms"], rows))


# --------------------------------------------------------------------------- build (a child process)

def _build(args) -> int:
    from dataclasses import asdict

    from bench.store_cache import commit, load_vectors, save_vectors

    store = Path(args.store)
    building = store.with_name(store.name + ".building")
    shutil.rmtree(building, ignore_errors=True)
    args.var_dir = str(building / "var")
    bench = common.setup(NAME, args)

    from django.db import connection

    from bench.synth import BulkLoader, user_ids
    from memory.vector_index import get_vector_index, reset_vector_index
    from tenancy.services import api_key_create, org_get_or_create

    with connection.cursor() as cursor:  # a throwaway build: durability per statement buys nothing
        cursor.execute("PRAGMA synchronous=OFF")
    org = org_get_or_create(slug="bench")
    users = user_ids(_users(args))
    BulkLoader.SAMPLES_PER_USER = args.samples
    loader = BulkLoader(org, users, seed=args.seed, batch=args.batch, log=bench.log)
    if args.vectors == "encode":
        loader.vector_cache = load_vectors(loader.model_id)
        bench.log(f"{len(loader.vector_cache):,} vectors from earlier builds")
    bench.log(f"building {args.n:,} memories over {len(users):,} users (load avg {_load()})")
    load = loader.load(args.n, vectors=args.vectors)
    if loader.vector_cache is not None:
        save_vectors(loader.model_id, loader.vector_cache)
    optimize_s = None
    index = get_vector_index()
    if args.optimize:
        t = common.now()
        index.optimize(collection=loader.collection)
        optimize_s = round(common.ms_since(t) / 1000, 1)
    points = index.count(collection=loader.collection)
    _, raw_key = api_key_create(org=org, name="bench")
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    reset_vector_index()
    bench.log(f"built in {load.total_s:.1f}s (encode {load.vectors_s:.1f}s, SQLite {load.db_s:.1f}s, "
              f"upsert {load.upsert_s:.1f}s); {points:,} points")
    meta = {"params": _store_params(args), "build": {**load.as_dict(), "optimize_s": optimize_s,
                                                     "load_avg_at_end": _load()},
            "points": points, "collection": loader.collection, "api_key": raw_key, "users": users,
            "samples": {u: [asdict(m) for m in ms] for u, ms in load.samples.items()}, "path": str(store)}
    commit(building, store, meta)
    return 0


# --------------------------------------------------------------------------- one run (a child process)

def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _draw(rng, gen, samples, users, count, exclude, cross_lingual):
    """Queries about a random user's own memories; texts never in `exclude`, never repeated."""
    from bench.synth import SynthMemory

    out, seen, tries = [], set(exclude), 0
    while len(out) < count and tries < count * 50:
        tries += 1
        user = rng.choice(users)
        seed = SynthMemory(**rng.choice(samples[user]))
        text, lang = gen.query_for(seed, cross_lingual=rng.random() < cross_lingual)
        if text in seen:
            continue
        seen.add(text)
        out.append({"user": user, "query": text, "lang": lang, "target": seed.memory_id})
    return out


def _run(args) -> int:
    from bench.store_cache import copy_var, drop_cached_pages, read_meta, read_pages

    store = Path(args.store)
    meta = read_meta(store)
    tmp = Path(tempfile.mkdtemp(prefix=f"bench-recall-run{args.run_index}-"))
    try:
        own = copy_var(store, tmp / "bench")
        served = None if args.no_http else copy_var(store, tmp / "served")
        drop_cached_pages(store / "var")  # read only to copy it
        if args.no_service and served is not None:
            drop_cached_pages(served)  # gunicorn reads it only once the floor is measured
        read_pages(own)
        args.var_dir = str(own)
        bench = common.setup(NAME, args)
        return _measure(args, bench, meta, served)
    finally:
        try:
            from memory.vector_index import reset_vector_index

            reset_vector_index()
        except Exception:
            pass
        shutil.rmtree(tmp, ignore_errors=True)


def _measure(args, bench, meta, served) -> int:
    import numpy as np
    from django.conf import settings

    from bench.serve import Client, Server
    from bench.synth import TextGen
    from common import server_timing
    from memory.embeddings import CompositeEmbedder
    from memory.models import PAYLOAD_VERSION, VectorCollection
    from memory.recall import RecallQuery, recall
    from memory.recall.query import shape
    from memory.recall.query_vectors import is_cjk as _is_cjk
    from memory.services.memories import MemoryInput, memory_write
    from memory.vector_index import get_vector_index
    from memory.vectors import active_embedder, user_filters
    from tenancy.models import Org

    org = Org.objects.get(slug="bench")
    from memory.jobs.startup_warmup import settle, warm_up

    # As the served process starts (memory/jobs/startup_warmup.py): models, planner statistics, the snapshots of the
    # most recently active users (as many as RECALL_CORPUS["users"]), the garbage collector's freeze.
    warm_up()
    if not args.no_service:  # the snapshots are for recall() in this process; the floor reads none
        settle()
    sys.setswitchinterval(settings.PYTHON_SWITCH_INTERVAL_SECONDS)  # as config/wsgi.py sets it
    embedder = active_embedder()
    index = get_vector_index()
    collection = meta["collection"]
    live = VectorCollection.objects.get(name=collection)
    if live.payload_version < PAYLOAD_VERSION:  # recall would search it as older code did (D16)
        raise SystemExit(f"the cached store's points are of payload version {live.payload_version}, not "
                         f"{PAYLOAD_VERSION}: run again with --rebuild")
    bench.facts = common.machine_facts(embedder)
    print(f"[run {args.run_index + 1}] load avg at start {bench.facts['load_avg_at_start']}", file=sys.stderr,
          flush=True)
    limit = max(settings.RECALL_CANDIDATES, args.k * 3)
    share = settings.RECALL_WEIGHTS["multilingual_share_en"]
    composite = isinstance(embedder, CompositeEmbedder)

    from concurrent.futures import ThreadPoolExecutor

    floor_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="floor-encoder")

    def query_vector(text: str, cjk: bool):
        # What recall() embeds for this language, with the same query encoders (no cache on this path).
        # The two models of an English query run side by side, as recall() runs them: the floor is the
        # least time the same encodes take on this machine, not their sum.
        if not composite:
            return embedder.encode_query(text)
        if cjk:
            first = embedder.parts[0].encode_query(text)
            return embedder.compose(first, np.zeros(embedder.parts[1].dim, dtype=np.float32), 1.0)
        second = floor_pool.submit(embedder.parts[1].encode_query, text)
        first = embedder.parts[0].encode_query(text)
        return embedder.compose(first, second.result(), share)

    def floor(q) -> tuple[float, float]:
        t = common.now()
        cjk = _is_cjk(q["query"])
        vec = query_vector(q["query"], cjk)
        query_shape = shape(q["query"])
        if query_shape.long:  # recall() embeds a long query's focus too
            focus = query_vector(query_shape.focus, cjk)
            w = settings.RECALL_LONG_QUERY["focus_weight"]
            vec = ((1.0 - w) * vec + w * focus).astype(np.float32)
        t_embed = common.ms_since(t)
        # One raw search scoped to the user as recall() scopes its own (memory/vectors.py), ids and scores.
        index.search(vec, filters=user_filters(live, org.id, q["user"]), limit=limit, collection=collection,
                     with_payload=False)
        return common.ms_since(t), t_embed

    def service(q):
        return recall(RecallQuery(org=org, user_id=q["user"], query=q["query"], k=args.k))

    http_errors: list[str] = []
    server = None

    def http(q):
        status, body = client.request("POST", "/api/v1/recall", {"query": q["query"], "k": args.k}, user=q["user"])
        if status != 200 and len(http_errors) < 5:
            http_errors.append(f"{status} {body[:200]!r}")
        return status, body

    rng = random.Random(args.seed * 1000 + args.run_index)
    gen = TextGen(args.seed + 1000 + args.run_index)
    gen.rng = rng
    samples = meta["samples"]
    users = [u for u in meta["users"] if samples.get(u)]
    warm = _draw(rng, gen, samples, users, args.warm, set(), args.cross_lingual)
    warm_texts = {q["query"] for q in warm}
    cold = _draw(rng, gen, samples, users, args.queries, warm_texts, args.cross_lingual)
    after = _draw(rng, gen, samples, users, args.after_write, warm_texts | {q["query"] for q in cold},
                  args.cross_lingual)
    paths = ["floor"] + ([] if args.no_service else ["service"]) + ([] if served is None else ["http"])
    cpu_start = common.cpu_times()
    latency: dict = {phase: {lang: {p: [] for p in paths} for lang in ("zh", "en", "all")}
                     for phase in ("cold", "after_write")}
    if args.no_service:
        # The floor first, on its own, then its index is closed: at 1M two processes each holding a
        # mapped 3.4 GiB copy of the vectors slowed both (the module's docstring). Measured alone, the
        # floor is if anything faster than it would be beside gunicorn: the ratio is not flattered.
        bench.log(f"floor: {len(warm)} warm-up, {len(cold)} cold and {len(after)} after-write queries")
        for q in warm:
            floor(q)
        for phase, queries in (("cold", cold), ("after_write", after)):
            for q in queries:
                elapsed, _ = floor(q)
                latency[phase][q["lang"]]["floor"].append(elapsed)
                latency[phase]["all"]["floor"].append(elapsed)
        from memory.vector_index import reset_vector_index

        del index
        reset_vector_index()
        gc.collect()
        if served is not None:  # gunicorn's copy then has the page cache to itself
            from bench.store_cache import drop_cached_pages, read_pages

            drop_cached_pages(bench.var_dir)
            read_pages(served)
        paths.remove("floor")
    if served is not None:
        server = Server(served, log=bench.log,
                        extra_env={"SERVER_TIMING": "1"} if args.server_timing else None).__enter__()
        client = Client(server.port, api_key=meta["api_key"])
    stages: dict = {"zh": {}, "en": {}}
    served_parts: dict = {"zh": {}, "en": {}}  # --server-timing: each cold served request's parts
    hits = 0
    try:
        bench.log(f"warm-up: {len(warm)} queries (never measured)")
        for q in warm:
            if "floor" in paths:
                floor(q)
            if "service" in paths:
                service(q)
            if server is not None:
                http(q)

        def measure(q, i, phase):
            nonlocal hits
            order = paths[i % len(paths):] + paths[: i % len(paths)]
            for what in order:
                if what == "floor":
                    elapsed, _ = floor(q)
                elif what == "service":
                    result, elapsed = common.timed(service, q)
                    if phase == "cold":
                        hits += any(item.memory.id == q["target"] for item in result.items)
                        for key in ("embed", "vector", "keyword", "overlap", "back_check_rank", "current_state"):
                            if key in result.timings_ms:
                                stages[q["lang"]].setdefault(key, []).append(result.timings_ms[key])
                        stages[q["lang"]].setdefault("outside_timings", []).append(
                            max(0.0, elapsed - result.timings_ms.get("total", elapsed)))
                else:
                    (status, body), elapsed = common.timed(http, q)
                    if phase == "cold" and args.server_timing and status == 200:
                        parts = server_timing.parse(client.last_headers.get("Server-Timing"))
                        if "app" in parts:
                            parts["outside_app"] = max(0.0, elapsed - parts["app"])
                        for part, ms in parts.items():
                            served_parts[q["lang"]].setdefault(part, []).append(ms)
                    if phase == "cold" and args.no_service and status == 200:  # parsed after the timing
                        hits += any(item["id"] == q["target"] for item in json.loads(body)["items"])
                latency[phase][q["lang"]][what].append(elapsed)
                latency[phase]["all"][what].append(elapsed)

        bench.log(f"measuring {len(cold)} cold queries from {len({q['user'] for q in cold})} users")
        for i, q in enumerate(cold):
            measure(q, i, "cold")

        bench.log(f"measuring {len(after)} queries right after a write to their user")
        for i, q in enumerate(after):
            fresh = gen.memory(q["user"], "fact", q["lang"]).content
            if not args.no_service:
                memory_write(MemoryInput(org=org, user_id=q["user"], kind="fact", content=fresh, created_by="api",
                                         actor="bench"))
            if server is not None:
                status, body = client.request("POST", "/api/v1/memories", {"kind": "fact", "content": fresh},
                                              user=q["user"])
                if status not in (200, 201) and len(http_errors) < 5:
                    http_errors.append(f"write {status} {body[:200]!r}")
            measure(q, i, "after_write")
        sql = {} if args.no_service else _sql_profile(cold[:20], service)
        server_rss = server.rss_mb() if server is not None else None
    finally:
        if server is not None:
            server.__exit__(None, None, None)

    lat_st = {phase: {lang: {p: common.stats(v) for p, v in d.items() if v} for lang, d in by_lang.items()}
              for phase, by_lang in latency.items()}
    ratios = {phase: {lang: {p: common.ratios(st[p], st["floor"]) for p in st if p != "floor"}
                      for lang, st in by_lang.items() if "floor" in st}
              for phase, by_lang in lat_st.items()}
    doc = {
        "run_index": args.run_index, "machine": bench.facts, "load_avg_at_end": _load(),
        "cpu_steal": common.steal_share(cpu_start),
        "config": {"n": args.n, "users": len(meta["users"]), "per_user": args.per_user, "k": args.k,
                   "candidate_limit": limit, "cold_queries": len(cold), "after_write_queries": len(after),
                   "warm_queries": len(warm), "cold_users": len({q["user"] for q in cold})},
        "latency_ms": lat_st, "ratios": ratios,
        "stages_ms": {lang: {k: common.stats(v) for k, v in d.items()} for lang, d in stages.items()},
        "served_ms": {lang: {k: common.stats(v) for k, v in d.items()} for lang, d in served_parts.items() if d},
        "hit_at_k": round(hits / len(cold), 3) if cold else None, "sql": sql, "http_errors": http_errors,
        "rss_mb": common.rss_mb(), "server_rss_mb": server_rss, "disk": common.var_sizes(bench.var_dir),
    }
    Path(args.out).write_text(json.dumps(doc, ensure_ascii=False, default=str), encoding="utf-8")
    print(f"[run {args.run_index + 1}] load avg at end {doc['load_avg_at_end']}, CPU steal {doc['cpu_steal']}; "
          f"cold HTTP p95 "
          f"{lat_st['cold']['all'].get('http', {}).get('p95')} ms, service p95 "
          f"{lat_st['cold']['all'].get('service', {}).get('p95')} "
          f"ms, floor p95 {lat_st['cold']['all']['floor']['p95']} ms", file=sys.stderr, flush=True)
    return 0


def _sql_profile(queries, service) -> dict:
    """How many SQL statements one recall issues in the run's process."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    counts = []
    for q in queries:
        with CaptureQueriesContext(connection) as ctx:
            service(q)
        counts.append(len(ctx.captured_queries))
    return {"calls": len(counts), "service_mean": round(sum(counts) / len(counts), 1) if counts else None}


if __name__ == "__main__":
    sys.exit(main())
