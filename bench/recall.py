"""Recall latency against its floor (DESIGN §10).

N synthetic zh+en memories in ONE org spread over many users, bulk-loaded (rows + stored vectors +
live-collection points). Then ~500 queries about a user's own memories, each measured three ways,
interleaved so machine noise hits all of them alike:

- floor:   one query embedding + one raw filtered vector search (org, user_id, status=active)
- service: ``recall(RecallQuery(...))``
- HTTP:    ``POST /api/v1/recall`` through Django's test client with an API key

Goal: recall/floor ≤ 2.0 at p95; service p95 ≤ 25 ms at 100k memories.

    python -m bench.recall                 # 10k memories
    python -m bench.recall --n 100000
"""
from __future__ import annotations

import json
import random
import sys

from bench import common

NAME = "recall"


def parse_args(argv=None):
    p = common.arg_parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=10_000, help="memories to load (default 10000)")
    p.add_argument("--users", type=int, default=1000, help="users the memories are spread over (default 1000)")
    p.add_argument("--queries", type=int, default=500, help="measured queries (default 500)")
    p.add_argument("--query-users", type=int, default=200,
                   help="users the queries come from (default 200: fits the keyword-index LRU of 256 users)")
    p.add_argument("--cold-queries", type=int, default=100,
                   help="extra queries after a write bumped the user's generation (keyword index rebuilt)")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--cross-lingual", type=float, default=0.1, help="share of queries in the other language")
    p.add_argument("--batch", type=int, default=2000, help="bulk-load batch size")
    p.add_argument("--optimize", action="store_true", help="run the shard optimizer (HNSW build) after loading")
    p.add_argument("--no-http", action="store_true", help="skip the HTTP measurement")
    p.add_argument("--candidates", default="",
                   help="also measure recall() with these RECALL_CANDIDATES values, e.g. 40,30 "
                        "(latency and target hit rate, interleaved with the default on the same queries)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    bench = common.setup(NAME, args)

    from django.conf import settings
    from django.test import Client

    from bench.synth import BulkLoader, TextGen, user_ids
    from memory.cache import user_generation_bump
    from memory.selectors.recall_pipeline import RecallQuery, recall
    from memory.vector_index import get_vector_index
    from tenancy.services import api_key_create, org_get_or_create

    org = org_get_or_create(slug="bench")
    users = user_ids(args.users)
    loader = BulkLoader(org, users, seed=args.seed, batch=args.batch, log=bench.log)
    bench.facts = common.machine_facts(loader.embedder)
    bench.log(f"loading {args.n:,} memories over {args.users:,} users")
    load = loader.load(args.n)
    bench.log(f"loaded in {load.total_s:.1f}s (vectors {load.vectors_s:.1f}s, db {load.db_s:.1f}s, "
              f"upsert {load.upsert_s:.1f}s)")
    index = get_vector_index()
    collection = loader.collection
    optimize_s = None
    if args.optimize:
        t = common.now()
        index.optimize(collection=collection)
        optimize_s = round(common.ms_since(t) / 1000, 2)
        bench.log(f"optimized in {optimize_s}s")
    points = index.count(collection=collection)

    # ---------------------------------------------------------------- queries
    rng = random.Random(args.seed + 7)
    gen = TextGen(args.seed + 11)
    gen.rng = rng
    candidates = [u for u in users if load.samples.get(u)]
    pool = rng.sample(candidates, min(args.query_users, len(candidates)))
    total_queries = args.queries + args.cold_queries
    queries = []
    for i in range(total_queries):
        user = pool[i % len(pool)] if i < len(pool) else rng.choice(pool)
        seed_memory = rng.choice(load.samples[user])
        text, lang = gen.query_for(seed_memory, cross_lingual=rng.random() < args.cross_lingual)
        queries.append({"user": user, "query": text, "lang": lang, "target": seed_memory.memory_id})
    rng.shuffle(queries)
    warm_set, cold_set = queries[: args.queries], queries[args.queries:]

    embedder = loader.embedder
    limit = max(settings.RECALL_CANDIDATES, args.k * 3)
    org_key = str(org.id)

    def floor(q):
        vec = embedder.encode_one(q["query"])
        return index.search(vec, filters={"org": org_key, "user_id": q["user"], "status": "active"}, limit=limit,
                            collection=collection)

    def service(q):
        return recall(RecallQuery(org=org, user_id=q["user"], query=q["query"], k=args.k))

    _, raw_key = api_key_create(org=org, name="bench")
    client = Client()
    http_errors: list[str] = []

    def http(q):
        response = client.post("/api/v1/recall", data=json.dumps({"query": q["query"], "k": args.k}),
                               content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {raw_key}",
                               HTTP_X_MEMORY_USER=q["user"])
        if response.status_code != 200 and len(http_errors) < 5:
            http_errors.append(f"{response.status_code} {response.content[:200]!r}")
        return response

    # ---------------------------------------------------------------- warm-up
    bench.log(f"warm-up over {len(warm_set)} queries ({len(pool)} users)")
    for q in warm_set:
        floor(q)
        service(q)
        if not args.no_http:
            http(q)

    # ---------------------------------------------------------------- measured, interleaved
    bench.log("measuring")
    samples = {"floor": [], "floor_embed": [], "floor_search": [], "service": [], "http": []}
    stages = {"embed": [], "vector": [], "keyword": [], "back_check_rank": [], "touch_and_rest": []}
    by_lang = {"zh": {"floor": [], "service": []}, "en": {"floor": [], "service": []}}
    hits = 0
    for i, q in enumerate(warm_set):
        order = ["floor", "service", "http"]
        order = order[i % 3:] + order[: i % 3]
        for what in order:
            if what == "floor":
                t = common.now()
                vec = embedder.encode_one(q["query"])
                t_embed = common.ms_since(t)
                t2 = common.now()
                index.search(vec, filters={"org": org_key, "user_id": q["user"], "status": "active"}, limit=limit,
                             collection=collection)
                t_search = common.ms_since(t2)
                samples["floor"].append(t_embed + t_search)
                samples["floor_embed"].append(t_embed)
                samples["floor_search"].append(t_search)
                by_lang[q["lang"]]["floor"].append(t_embed + t_search)
            elif what == "service":
                result, elapsed = common.timed(service, q)
                samples["service"].append(elapsed)
                by_lang[q["lang"]]["service"].append(elapsed)
                tm = result.timings_ms
                for key in ("embed", "vector", "keyword", "back_check_rank"):
                    if key in tm:
                        stages[key].append(tm[key])
                stages["touch_and_rest"].append(max(0.0, elapsed - tm.get("total", elapsed)))
                hits += any(item.memory.id == q["target"] for item in result.items)
            elif not args.no_http:
                _, elapsed = common.timed(http, q)
                samples["http"].append(elapsed)

    # ---------------------------------------------------------------- cold keyword index
    cold = {"floor": [], "service": []}
    if cold_set:
        bench.log(f"cold-keyword pass over {len(cold_set)} queries")
        for q in cold_set:
            _, elapsed = common.timed(floor, q)
            cold["floor"].append(elapsed)
            user_generation_bump(org.id, q["user"])  # what any write for this user does
            _, elapsed = common.timed(service, q)
            cold["service"].append(elapsed)

    # ---------------------------------------------------------------- candidate-limit alternatives
    alternatives = _candidate_alternatives(args, warm_set, service, bench.log)

    # ---------------------------------------------------------------- SQL per call (diagnosis)
    sql = _sql_profile(warm_set[:20], service, http if not args.no_http else None)

    # ---------------------------------------------------------------- report
    st = {k: common.stats(v) for k, v in samples.items() if v}
    floor_st = st["floor"]
    rows = [("floor: embed + filtered search", floor_st, None),
            ("  floor: query embedding", st["floor_embed"], None),
            ("  floor: filtered vector search", st["floor_search"], None),
            ("recall() service call", st["service"], common.ratios(st["service"], floor_st))]
    if "http" in st:
        rows.append(("POST /api/v1/recall (test client)", st["http"], common.ratios(st["http"], floor_st)))
    cold_st = {k: common.stats(v) for k, v in cold.items() if v}
    if cold_st:
        rows.append(("cold floor", cold_st["floor"], None))
        rows.append(("recall() after a write (keyword index rebuilt)", cold_st["service"],
                     common.ratios(cold_st["service"], cold_st["floor"])))
    stage_st = {k: common.stats(v) for k, v in stages.items() if v}
    lang_st = {lang: {k: common.stats(v) for k, v in d.items() if v} for lang, d in by_lang.items()}

    service_p95 = st["service"]["p95"]
    ratio_p95 = common.ratio(service_p95, floor_st["p95"])
    goals = {
        "ratio_p95_le_2": {"value": ratio_p95, "limit": 2.0, "status": common.goal_mark(ratio_p95, 2.0)},
        "service_p95_le_25ms_at_100k": {
            "value": service_p95, "limit": 25.0,
            "status": common.goal_mark(service_p95, 25.0) if args.n >= 100_000 else f"n/a at n={args.n:,}"},
    }
    per_user = args.n / max(1, len([u for u in users if load.samples.get(u)]))
    payload = {
        "config": {"n": args.n, "users": args.users, "memories_per_user_mean": round(per_user, 1),
                   "query_users": len(pool), "queries": len(warm_set), "cold_queries": len(cold_set), "k": args.k,
                   "candidate_limit": limit, "points_in_collection": points, "optimized": args.optimize,
                   "keyword_index_lru_users": _lru_size()},
        "build": {**load.as_dict(), "optimize_s": optimize_s},
        "latency_ms": st,
        "cold_keyword_latency_ms": cold_st,
        "service_stages_ms": stage_st,
        "by_language_ms": lang_st,
        "ratios": {"service": common.ratios(st["service"], floor_st),
                   "http": common.ratios(st["http"], floor_st) if "http" in st else None,
                   "cold_service": common.ratios(cold_st["service"], cold_st["floor"]) if cold_st else None},
        "goals": goals,
        "sql_per_call": sql,
        "target_hit_at_k": round(hits / len(warm_set), 3) if warm_set else None,
        "candidate_alternatives": alternatives,
        "http_errors": http_errors,
        "rss_mb": common.rss_mb(), "peak_rss_mb": common.peak_rss_mb(),
        "disk": common.var_sizes(bench.var_dir),
    }
    out = common.write_results(bench, payload)

    common.print_facts(bench.facts)
    print(f"### bench.recall — {args.n:,} memories, {args.users:,} users (~{per_user:.0f}/user), "
          f"{len(warm_set)} queries from {len(pool)} users, k={args.k}, candidates={limit}\n")
    print(f"build: {load.total_s:.1f} s ({load.n / max(load.total_s, 1e-9):,.0f} memories/s; encode "
          f"{load.vectors_s:.1f} s, SQLite {load.db_s:.1f} s, upsert {load.upsert_s:.1f} s)"
          + (f", optimize {optimize_s} s" if optimize_s else "") + f"; {points:,} points\n")
    print(common.table(["path", "n", "p50 ms", "p95 ms", "p99 ms", "ratio p50", "ratio p95"],
                       [(label, s["n"], s["p50"], s["p95"], s["p99"], (r or {}).get("p50"), (r or {}).get("p95"))
                        for label, s, r in rows]))
    print()
    print("recall() stages (its own timings; touch_and_rest = eager memory_touch task + bookkeeping):\n")
    print(common.table(["stage", "p50 ms", "p95 ms", "p99 ms"],
                       [(k, v["p50"], v["p95"], v["p99"]) for k, v in stage_st.items()]))
    print()
    print(common.table(["language", "floor p50", "floor p95", "recall p50", "recall p95"],
                       [(lang, d.get("floor", {}).get("p50"), d.get("floor", {}).get("p95"),
                         d.get("service", {}).get("p50"), d.get("service", {}).get("p95"))
                        for lang, d in lang_st.items()]))
    print()
    print(f"goals: recall/floor p95 = {ratio_p95} (≤ 2.0: {goals['ratio_p95_le_2']['status']}); "
          f"service p95 = {service_p95} ms (≤ 25 ms at 100k: {goals['service_p95_le_25ms_at_100k']['status']}); "
          f"target memory in top-{args.k}: {payload['target_hit_at_k']}")
    print(f"SQL queries per call (mean over {sql['calls']}): recall() {sql['service_mean']}, "
          f"HTTP {sql.get('http_mean')}")
    if alternatives:
        print()
        print(common.table(["RECALL_CANDIDATES", "recall p50 ms", "recall p95 ms", f"target in top-{args.k}"],
                           [(value, a["latency_ms"]["p50"], a["latency_ms"]["p95"], a["target_hit_at_k"])
                            for value, a in alternatives.items()]))
    if http_errors:
        print(f"HTTP errors: {http_errors}")
    print(f"RSS {payload['rss_mb']} MiB (peak {payload['peak_rss_mb']} MiB); disk "
          f"SQLite {common.human_bytes(payload['disk']['sqlite_bytes'])}, "
          f"qdrant {common.human_bytes(payload['disk']['qdrant_bytes'])}")
    print(f"\nresults: {out.relative_to(common.REPO_ROOT) if out.is_relative_to(common.REPO_ROOT) else out}")
    return 0


def _candidate_alternatives(args, queries, service, log) -> dict:
    """recall() with other RECALL_CANDIDATES values, round-robin per query with the default, so the
    latency and hit-rate differences come from the setting, not from the machine's load."""
    from django.conf import settings

    values = [int(v) for v in args.candidates.split(",") if v.strip()]
    if not values:
        return {}
    default = settings.RECALL_CANDIDATES
    order = [default, *[v for v in values if v != default]]
    samples = {v: [] for v in order}
    hits = dict.fromkeys(order, 0)
    log(f"candidate limits {order} over {len(queries)} queries")
    try:
        for i, q in enumerate(queries):
            for value in order[i % len(order):] + order[: i % len(order)]:
                settings.RECALL_CANDIDATES = value
                result, elapsed = common.timed(service, q)
                samples[value].append(elapsed)
                hits[value] += any(item.memory.id == q["target"] for item in result.items)
    finally:
        settings.RECALL_CANDIDATES = default
    return {value: {"latency_ms": common.stats(samples[value]), "target_hit_at_k": round(hits[value] / len(queries), 3)}
            for value in order}


def _sql_profile(queries, service, http) -> dict:
    """How many SQL statements one recall issues (service and HTTP), and the first call's statements."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    out = {"calls": len(queries)}
    for label, fn in (("service", service), ("http", http)):
        if fn is None or not queries:
            continue
        counts, first = [], None
        for q in queries:
            with CaptureQueriesContext(connection) as ctx:
                fn(q)
            counts.append(len(ctx.captured_queries))
            if first is None:
                first = [c["sql"][:160] for c in ctx.captured_queries]
        out[f"{label}_mean"] = round(sum(counts) / len(counts), 1)
        out[f"{label}_first_call"] = first
    return out


def _lru_size() -> int | None:
    try:
        from memory.keyword import MAX_INDEXES

        return MAX_INDEXES
    except ImportError:
        return None


if __name__ == "__main__":
    sys.exit(main())
