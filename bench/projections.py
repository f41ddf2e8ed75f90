"""Projection benchmarks on the embedded profile (SQLite + qdrant-edge + eager Celery), in a temp dir.

    python -m bench.projections [--n 100000] [--writes 1000] [--queries 500] [--users 1000] [--threads 1]
                                [--encode-all]

1. Write path: memories/s through memory_write + memory_sync (eager, after each commit), against
   the floor measured in the same run: raw encode of the same texts with the same model, one text
   per call as the write path does (goal: ratio >= 0.7). Batched encode is reported too.
2. Rebuild: projections_rebuild of N memories from stored vectors (random unit vectors of the live
   model's dimension unless --encode-all), against a raw bulk upsert of the same points into a
   scratch collection; optimize (HNSW build) and a reconcile scan timed apart.
3. Filtered search p50/p95 on the embedded shard at N points, recall-shaped filters (org + user +
   status + kinds), before and after optimize.

Writes bench/results/projections.json and prints a markdown table.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results" / "projections.json"
KINDS = ["preference", "fact", "event", "context"]
INTERLEAVE = 25
WORDS = """
harvester tractor combine sprayer seeder baler pump valve bearing gearbox engine filter belt chain
hydraulic hose tire wheel axle clutch brake sensor radiator injector battery alternator starter
warehouse depot workshop field orchard vineyard barn silo dealer supplier invoice order contract
spring summer autumn winter morning evening weekend monday friday monthly weekly yearly daily
harbin changchun qiqihar jiamusi daqing shenyang dalian beijing shanghai tianjin jilin mudanjiang
prefers likes dislikes wants needs avoids checks replaces orders inspects repairs schedules
short concise detailed bullet summary report table chart email phone message pdf spreadsheet
urgent routine overdue pending approved rejected delayed shipped delivered returned warranty
operator manager mechanic driver farmer agronomist technician accountant inspector planner
red green blue yellow large small heavy light old new fast slow quiet loud cheap expensive
corn wheat soybean rice potato sugar beet barley oats sunflower canola alfalfa sorghum cotton
""".split()


def _sentences(rng: np.random.Generator, n: int) -> list[str]:
    # Random word sequences are mutually dissimilar, so semantic dedup keeps every one of them.
    lengths = rng.integers(8, 15, size=n)
    return [f"{i} " + " ".join(rng.choice(WORDS, size=k)) for i, k in enumerate(lengths)]


def _percentiles(samples_ms: list[float]) -> dict:
    arr = np.asarray(samples_ms)
    return {"p50_ms": round(float(np.percentile(arr, 50)), 3), "p95_ms": round(float(np.percentile(arr, 95)), 3)}


def _setup_django(var_dir: str, threads: int | None = None) -> None:
    # The embedded profile, whatever the calling shell has configured.
    if threads:
        os.environ["EMBEDDING_THREADS"] = str(threads)
    for name in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "QDRANT_URL", "CELERY_TASK_ALWAYS_EAGER",
                 "VECTOR_INDEX_PATH"):
        os.environ.pop(name, None)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ["MEMORY_VAR_DIR"] = var_dir
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


# =============================================================================================


def bench_write_path(org, texts: list[str], users: int) -> dict:
    from memory.models import Memory
    from memory.projections import memory_sync
    from memory.services.memories import MemoryInput, memory_write
    from memory.vectors import active_collection, active_embedder

    embedder = active_embedder()
    active_collection()
    embedder.encode_one("warm-up")

    # Floor and write path alternate in small chunks over the same texts, so a change in machine
    # load during the run (other processes on 2 cores) weighs on both sides of the ratio alike.
    raw_s = raw_batch_s = write_s = 0.0
    outcomes: dict[str, int] = {}
    for start in range(0, len(texts), INTERLEAVE):
        chunk = texts[start : start + INTERLEAVE]
        t0 = time.perf_counter()
        for text in chunk:
            embedder.encode_one(text)
        t1 = time.perf_counter()
        embedder.encode(chunk)
        t2 = time.perf_counter()
        for i, text in enumerate(chunk, start=start):
            # Eager Celery: memory_sync runs on commit, inside this call, as in the embedded profile.
            outcome = memory_write(MemoryInput(org=org, user_id=f"w{i % users}", kind=KINDS[i % len(KINDS)],
                                               content=text))
            outcomes[outcome.action] = outcomes.get(outcome.action, 0) + 1
        t3 = time.perf_counter()
        raw_s, raw_batch_s, write_s = raw_s + (t1 - t0), raw_batch_s + (t2 - t1), write_s + (t3 - t2)
    raw_one, raw_batch, write_rate = len(texts) / raw_s, len(texts) / raw_batch_s, len(texts) / write_s

    rows = list(Memory.objects.filter(org=org, user_id__startswith="w").values_list("id", "version"))
    lagging = Memory.objects.filter(org=org, user_id__startswith="w", projected_version=0).count()
    started = time.perf_counter()
    for memory_id, version in rows:
        memory_sync(memory_id=memory_id, version=version)
    sync_rate = len(rows) / (time.perf_counter() - started)

    # The projection itself when it must embed (no stored vector for the live model: a restore
    # without vectors, a model switch): memory_sync encodes, stores the vector, upserts, marks.
    # Interleaved with raw encode_one of the same texts, as above.
    from memory.models import MemoryEmbedding

    sample = rows[:500]
    texts = dict(Memory.objects.filter(id__in=[m for m, _ in sample]).values_list("id", "content"))
    MemoryEmbedding.objects.filter(memory_id__in=texts).delete()
    Memory.objects.filter(id__in=texts).update(projected_version=0)
    project_s = raw_again_s = 0.0
    for start in range(0, len(sample), INTERLEAVE):
        chunk = sample[start : start + INTERLEAVE]
        t0 = time.perf_counter()
        for memory_id, _ in chunk:
            embedder.encode_one(texts[memory_id])
        t1 = time.perf_counter()
        for memory_id, version in chunk:
            memory_sync(memory_id=memory_id, version=version)
        t2 = time.perf_counter()
        raw_again_s, project_s = raw_again_s + (t1 - t0), project_s + (t2 - t1)
    project_rate, raw_again = len(sample) / project_s, len(sample) / raw_again_s
    return {
        "projection_with_embedding_per_s": round(project_rate, 1),
        "raw_encode_one_same_texts_per_s": round(raw_again, 1),
        "ratio_projection_vs_raw_encode": round(project_rate / raw_again, 3),
        "model": embedder.model_id, "writes": len(texts), "outcomes": outcomes, "not_projected": lagging,
        "write_and_sync_per_s": round(write_rate, 1), "raw_encode_one_per_s": round(raw_one, 1),
        "raw_encode_batch_per_s": round(raw_batch, 1), "memory_sync_rerun_per_s": round(sync_rate, 1),
        "ratio_vs_raw_encode_one": round(write_rate / raw_one, 3),
        "ratio_vs_raw_encode_batch": round(write_rate / raw_batch, 3),
    }


def _bulk_load(org, n: int, users: int, rng: np.random.Generator, *,
               encode: bool) -> tuple[np.ndarray, list[str], float | None]:
    """N active memories with stored vectors of the live model, written straight to the tables.

    By default the vectors are random unit vectors of the model's dimension: rebuild cost does not
    depend on them, and encoding 100k texts with the composite model takes several minutes here."""
    from django.utils import timezone

    from memory.models import Memory, MemoryEmbedding
    from memory.vectors import active_embedder, to_bytes

    embedder = active_embedder()
    texts = _sentences(rng, n)
    started = time.perf_counter()
    if encode:
        vectors = embedder.encode(texts)
    else:
        vectors = rng.standard_normal((n, embedder.dim), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    encode_s = time.perf_counter() - started if encode else None
    now = timezone.now()
    chunk = 5000
    for start in range(0, n, chunk):
        rows = [Memory(org=org, user_id=f"u{i % users}", kind=KINDS[i % len(KINDS)], content=texts[i],
                       content_hash=f"{i:064x}", active_hash=None, created_at=now, status="active", version=1)
                for i in range(start, min(n, start + chunk))]
        created = Memory.objects.bulk_create(rows)
        MemoryEmbedding.objects.bulk_create([
            MemoryEmbedding(memory_id=m.id, model_id=embedder.model_id, version=1, vector=to_bytes(vectors[start + j]))
            for j, m in enumerate(created)])
    return vectors, texts, encode_s


def bench_rebuild(org, n: int, users: int, rng: np.random.Generator, *, encode: bool) -> tuple[dict, np.ndarray]:
    from memory.models import Memory, VectorCollection
    from memory.projections.rebuild import projections_rebuild
    from memory.projections.reconcile import projections_reconcile
    from memory.vector_index import VectorPoint, get_vector_index
    from memory.vectors import active_collection

    started = time.perf_counter()
    vectors, _, encode_s = _bulk_load(org, n, users, rng, encode=encode)
    load_s = time.perf_counter() - started
    index = get_vector_index()
    live = VectorCollection.objects.get(name=active_collection())

    ids = list(Memory.objects.filter(org=org, user_id__startswith="u").order_by("id").values_list("id", flat=True))

    def raw_upsert() -> float:
        scratch = "bench-raw-upsert"
        index.ensure_collection(scratch, live.dim)
        started = time.perf_counter()
        for start in range(0, len(ids), 500):
            index.upsert([VectorPoint(point_id=ids[j], vector=vectors[j],
                                      payload={"org": str(org.id), "user_id": f"u{j % users}",
                                               "kind": KINDS[j % len(KINDS)], "status": "active", "version": 1})
                          for j in range(start, min(len(ids), start + 500))], collection=scratch)
        elapsed = time.perf_counter() - started
        index.drop_collection(scratch)
        return elapsed

    # The floor is measured before and after the rebuild and averaged (load drift, as above).
    raw_before = raw_upsert()
    started = time.perf_counter()
    report = projections_rebuild(batch=500, optimize=False)
    rebuild_s = time.perf_counter() - started
    raw_s = (raw_before + raw_upsert()) / 2
    started = time.perf_counter()
    reconcile = projections_reconcile(fix=False)
    reconcile_s = time.perf_counter() - started
    total = report["total"]
    result = {
        "n": total, "bulk_load_s": round(load_s, 1), "vectors": "encoded" if encode else "random unit",
        "batched_encode_s": round(encode_s, 1) if encode_s is not None else None,
        "rebuild_s": round(rebuild_s, 2), "rebuild_per_s": round(total / rebuild_s, 1),
        "raw_upsert_s": round(raw_s, 2), "raw_upsert_per_s": round(total / raw_s, 1),
        "ratio_vs_raw_upsert": round(raw_s / rebuild_s, 3),
        "reconcile_scan_s": round(reconcile_s, 2),
        "reconcile": {k: reconcile[k] for k in ("checked", "points", "missing", "stale", "orphan")},
    }
    return result, vectors


def _search_latencies(org, queries: np.ndarray, users: int, rng: np.random.Generator) -> dict:
    from memory.vector_index import get_vector_index
    from memory.vectors import active_collection

    index = get_vector_index()
    name = active_collection()
    user_ms, org_ms = [], []
    for vector in queries:
        user = f"u{int(rng.integers(users))}"
        filters = {"org": str(org.id), "user_id": user, "status": "active", "kind": KINDS}
        started = time.perf_counter()
        index.search(vector, filters=filters, limit=60, collection=name)
        user_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        index.search(vector, filters={"org": str(org.id), "status": "active", "kind": ["fact"]}, limit=10, collection=name)
        org_ms.append((time.perf_counter() - started) * 1000)
    return {"user_filter": _percentiles(user_ms), "org_kind_filter": _percentiles(org_ms)}


def bench_search(org, n_queries: int, users: int, rng: np.random.Generator) -> dict:
    from memory.vector_index import get_vector_index
    from memory.vectors import active_collection, active_embedder

    queries = active_embedder().encode(_sentences(rng, n_queries))
    before = _search_latencies(org, queries, users, rng)
    started = time.perf_counter()
    get_vector_index().optimize(collection=active_collection())
    optimize_s = time.perf_counter() - started
    after = _search_latencies(org, queries, users, rng)
    return {"queries": n_queries, "before_optimize": before, "optimize_s": round(optimize_s, 1), "after_optimize": after}


# =============================================================================================


def _table(results: dict) -> str:
    w, r, s = results["write_path"], results["rebuild"], results["search"]
    rows = [
        ("projection that embeds (memory_sync without a stored vector)", f"{w['projection_with_embedding_per_s']} mem/s",
         f"ratio {w['ratio_projection_vs_raw_encode']} vs raw encode_one of the same texts "
         f"({w['raw_encode_one_same_texts_per_s']} /s; goal >= 0.7)"),
        ("write path (memory_write: dedup tiers + write + memory_sync, eager)", f"{w['write_and_sync_per_s']} mem/s", ""),
        ("raw encode, one text per call (floor)", f"{w['raw_encode_one_per_s']} /s",
         f"ratio {w['ratio_vs_raw_encode_one']}"),
        ("raw encode, batched", f"{w['raw_encode_batch_per_s']} /s", f"ratio {w['ratio_vs_raw_encode_batch']}"),
        ("memory_sync rerun (idempotent)", f"{w['memory_sync_rerun_per_s']} /s", ""),
        (f"rebuild {r['n']} memories (stored vectors)", f"{r['rebuild_s']} s", f"{r['rebuild_per_s']} mem/s"),
        ("raw bulk upsert, same points (floor)", f"{r['raw_upsert_s']} s", f"ratio {r['ratio_vs_raw_upsert']}"),
        (f"reconcile scan at {r['n']}", f"{r['reconcile_scan_s']} s", ""),
        ("optimize (HNSW build)", f"{s['optimize_s']} s", ""),
    ]
    for phase in ("before_optimize", "after_optimize"):
        for name, label in (("user_filter", "org+user+status+kinds, top 60"), ("org_kind_filter", "org+status+kind, top 10")):
            p = s[phase][name]
            rows.append((f"search {label}, {phase.replace('_', ' ')}", f"p50 {p['p50_ms']} ms", f"p95 {p['p95_ms']} ms"))
    lines = ["| measure | value | note |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000, help="memories for rebuild and search")
    parser.add_argument("--writes", type=int, default=1000, help="memories through the write path")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default=str(RESULTS), help="result JSON path (default bench/results/projections.json)")
    parser.add_argument("--encode-all", action="store_true",
                        help="encode the N texts for the rebuild set instead of random unit vectors (slow)")
    parser.add_argument("--threads", type=int, default=None,
                        help="EMBEDDING_THREADS for this run (on a busy 2-core box, 1 avoids BLAS oversubscription)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    with tempfile.TemporaryDirectory(prefix="bench-projections-") as var_dir:
        _setup_django(var_dir, args.threads)
        from tenancy.services import org_get_or_create

        org = org_get_or_create(slug="bench")
        started = time.perf_counter()
        from django.conf import settings

        results = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                               "load_avg_at_start": [round(x, 2) for x in os.getloadavg()]},
                   "args": vars(args), "embedding_threads": settings.EMBEDDING_THREADS}
        print(f"write path: {args.writes} memories ...", file=sys.stderr)
        results["write_path"] = bench_write_path(org, _sentences(rng, args.writes), max(1, args.users // 20))
        print(f"rebuild: {args.n} memories ...", file=sys.stderr)
        results["rebuild"], _ = bench_rebuild(org, args.n, args.users, rng, encode=args.encode_all)
        print(f"search: {args.queries} queries ...", file=sys.stderr)
        results["search"] = bench_search(org, args.queries, args.users, rng)
        results["total_s"] = round(time.perf_counter() - started, 1)
        from memory.vector_index import reset_vector_index

        reset_vector_index()
    out = Path(args.out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(_table(results))
    print(f"\nwritten to {out.relative_to(Path.cwd()) if out.is_relative_to(Path.cwd()) else out}"
          f" in {results['total_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
