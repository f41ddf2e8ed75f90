"""Scale: 10k → 100k (→ 1M) memories on the embedded profile (SQLite + qdrant-edge) (DESIGN §10).

One corpus grows through the sizes (cumulative bulk load, batches of ``--batch``). Vectors are
encoded with the embedder up to ``--encode-max`` memories (default 100k); beyond that, random
L2-normalised vectors are generated instead of encoding (e.g. 900k of the 1M), which the output
states. Per size: build time, filtered vector search p50/p95, recall p50/p95 and its floor
(query embedding + filtered search), RSS and disk use of var/ (SQLite + qdrant).

    python -m bench.scale                                 # 10k, 100k  (~15 min on 2 quiet cores)
    python -m bench.scale --sizes 10000,100000,1000000    # + 1M (random vectors past 100k)
"""
from __future__ import annotations

import random
import sys

from bench import common

NAME = "scale"


def parse_args(argv=None):
    p = common.arg_parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="10000,100000", help="comma-separated corpus sizes (default 10000,100000)")
    p.add_argument("--users", type=int, default=1000, help="users the memories are spread over (default 1000)")
    p.add_argument("--queries", type=int, default=300, help="measured queries per size (default 300)")
    p.add_argument("--query-users", type=int, default=200, help="users the queries come from (≤ keyword LRU 256)")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--batch", type=int, default=2000, help="bulk-load batch (rows and vectors held at once)")
    p.add_argument("--encode-max", type=int, default=100_000,
                   help="encode texts up to this many memories; random normalised vectors beyond")
    p.add_argument("--optimize", action="store_true", help="run the shard optimizer (HNSW build) at each size")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    bench = common.setup(NAME, args)

    from django.conf import settings
    from django.db import connection

    from bench.synth import BulkLoader, TextGen, user_ids
    from memory.models import VectorCollection
    from memory.recall import RecallQuery, recall
    from memory.vector_index import get_vector_index
    from memory.vectors import user_filters
    from tenancy.services import org_get_or_create

    org = org_get_or_create(slug="bench")
    users = user_ids(args.users)
    loader = BulkLoader(org, users, seed=args.seed, batch=args.batch, log=bench.log)
    embedder = loader.embedder
    bench.facts = common.machine_facts(embedder)
    index = get_vector_index()
    collection = loader.collection
    live = VectorCollection.objects.get(name=collection)
    limit = max(settings.RECALL_CANDIDATES, args.k * 3)
    rss_baseline = common.rss_mb()

    results = []
    built_s = 0.0
    for size in sizes:
        # ------------------------------------------------------------ grow the corpus
        add = size - loader.stats.n
        encoded_add = max(0, min(add, args.encode_max - loader.stats.n))
        random_add = add - encoded_add
        t = common.now()
        if encoded_add:
            bench.log(f"size {size:,}: encoding + loading {encoded_add:,}")
            loader.load(encoded_add, vectors="encode")
        if random_add:
            bench.log(f"size {size:,}: loading {random_add:,} with random vectors")
            loader.load(random_add, vectors="random")
        step_s = common.ms_since(t) / 1000
        built_s += step_s
        optimize_s = None
        if args.optimize:
            t = common.now()
            index.optimize(collection=collection)
            optimize_s = round(common.ms_since(t) / 1000, 1)
        index.flush(collection=collection)
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        disk = common.var_sizes(bench.var_dir)
        points = index.count(collection=collection)
        bench.log(f"size {size:,}: built (+{step_s:.1f}s), {points:,} points; measuring")

        # ------------------------------------------------------------ queries for this size
        rng = random.Random(args.seed + size)
        gen = TextGen(args.seed + size + 1)
        gen.rng = rng
        have = [u for u in users if loader.stats.samples.get(u)]
        pool = rng.sample(have, min(args.query_users, len(have)))
        queries = []
        for i in range(args.queries):
            user = pool[i % len(pool)]
            text, _lang = gen.query_for(rng.choice(loader.stats.samples[user]), cross_lingual=rng.random() < 0.1)
            queries.append((user, text))
        vectors = embedder.encode([q for _, q in queries])

        def search(user, vec):
            return index.search(vec, filters=user_filters(live, org.id, user), limit=limit, collection=collection,
                                with_payload=False)

        # warm-up: keyword indexes of the query users, shard pages, code paths
        for (user, text), vec in zip(queries, vectors):
            search(user, vec)
            recall(RecallQuery(org=org, user_id=user, query=text, k=args.k))

        s = {"search": [], "floor": [], "recall": [], "candidates": []}
        for i, ((user, text), vec) in enumerate(zip(queries, vectors)):
            def floor():
                t0 = common.now()
                qv = embedder.encode_one(text)
                search(user, qv)
                return common.ms_since(t0)

            if i % 2:
                s["floor"].append(floor())
                s["recall"].append(common.timed(recall, RecallQuery(org=org, user_id=user, query=text, k=args.k))[1])
            else:
                s["recall"].append(common.timed(recall, RecallQuery(org=org, user_id=user, query=text, k=args.k))[1])
                s["floor"].append(floor())
            hits, ms = common.timed(search, user, vec)
            s["search"].append(ms)
            s["candidates"].append(len(hits))

        st = {k: common.stats(v) for k, v in s.items() if k != "candidates"}
        row = {
            "size": size, "points": points,
            "vectors": loader.stats.vectors,
            "encoded_vectors": min(size, args.encode_max), "random_vectors": max(0, size - args.encode_max),
            "memories_per_user_mean": round(size / len(have), 1),
            "build_step_s": round(step_s, 1), "build_cumulative_s": round(built_s, 1), "optimize_s": optimize_s,
            "load_breakdown_cumulative": loader.stats.as_dict(),
            "search_ms": st["search"], "floor_ms": st["floor"], "recall_ms": st["recall"],
            "ratio": common.ratios(st["recall"], st["floor"]),
            "candidates_mean": round(sum(s["candidates"]) / len(s["candidates"]), 1),
            "rss_mb": common.rss_mb(), "peak_rss_mb": common.peak_rss_mb(), "disk": disk,
        }
        results.append(row)
        bench.log(f"size {size:,}: search p50 {st['search']['p50']} ms, recall p50 {st['recall']['p50']} ms, "
                  f"RSS {row['rss_mb']} MiB")
        # Partial results survive an interrupted 1M run.
        common.write_results(bench, {"config": _config(args, sizes, limit, rss_baseline), "sizes": results})

    out = common.write_results(bench, {"config": _config(args, sizes, limit, rss_baseline), "sizes": results})

    common.print_facts(bench.facts)
    print(f"### bench.scale — {args.users:,} users, {args.queries} queries per size from {args.query_users} users, "
          f"k={args.k}, candidates={limit}, optimize={'yes' if args.optimize else 'no'}\n")
    if any(r["random_vectors"] for r in results):
        print(f"NOTE: memories past the first {args.encode_max:,} got random L2-normalised vectors instead of "
              f"encoded ones (texts are still synthetic zh/en sentences); their search and recall figures measure "
              f"the engine, not retrieval quality.\n")
    print(common.table(
        ["memories", "per user", "build (cum.) s", "search p50", "search p95", "recall p50", "recall p95",
         "floor p50", "floor p95", "ratio p95", "RSS MiB", "peak MiB", "SQLite", "qdrant"],
        [(r["size"], r["memories_per_user_mean"], r["build_cumulative_s"], r["search_ms"]["p50"], r["search_ms"]["p95"],
          r["recall_ms"]["p50"], r["recall_ms"]["p95"], r["floor_ms"]["p50"], r["floor_ms"]["p95"], r["ratio"].get("p95"),
          r["rss_mb"], r["peak_rss_mb"], common.human_bytes(r["disk"]["sqlite_bytes"]),
          common.human_bytes(r["disk"]["qdrant_bytes"])) for r in results]))
    print()
    print("search = one filtered vector search (org, user_id, status=active) with a precomputed query vector; "
          "floor = query embedding + that search; times in ms")
    print(f"RSS before loading: {rss_baseline} MiB (Django + embedder)")
    print(f"\nresults: {out.relative_to(common.REPO_ROOT) if out.is_relative_to(common.REPO_ROOT) else out}")
    return 0


def _config(args, sizes, limit, rss_baseline) -> dict:
    return {"sizes": sizes, "users": args.users, "queries": args.queries, "query_users": args.query_users, "k": args.k,
            "candidate_limit": limit, "batch": args.batch, "encode_max": args.encode_max, "optimize": args.optimize,
            "rss_before_load_mb": rss_baseline}


if __name__ == "__main__":
    sys.exit(main())
