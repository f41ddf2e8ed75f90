"""Served recall of two checkouts on one store, in alternating blocks: which tree is faster, on a
machine whose series drift by more than the change measured.

`bench.recall` runs its 3 runs of one tree one after another; two trees' series lie minutes apart,
and at 1M their medians moved by 2 ms between series of the same code here. This benchmark serves
the same copy of a cached `bench.recall` store (same store options) with gunicorn as `make run`
serves it, from this checkout (A) and from `--tree-b` (B, e.g. `git worktree add /tmp/b <commit>`),
in blocks ordered ABBA AB..., a fresh process each block (start-up warm-up as in production: the
most recently active users' snapshots), the store's copy read into the page cache before each and
the cached store's pages dropped once copied. The
two blocks of a pair send the same cold queries (never a warm-up text; users from the whole
population), each pair other ones. Recall writes access counts to the copy as it serves; both trees
do. Reported per tree over all its blocks: p50 / p95 per language and all, and per block, with each
block's load average.

    git worktree add /tmp/b HEAD~1
    python -m bench.recall_ab --tree-b /tmp/b --n 1000000 --per-user 2000 --vectors random
"""
from __future__ import annotations

import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench import common

NAME = "recall_ab"


def parse_args(argv=None):
    from bench import recall

    p = common.arg_parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("--tree-b", required=True, help="the other checkout (its code is served in the B blocks)")
    p.add_argument("--pairs", type=int, default=3, help="block pairs (default 3: ABBAAB)")
    p.add_argument("--queries", type=int, default=200, help="measured cold queries per block (default 200)")
    p.add_argument("--warm", type=int, default=30, help="warm-up queries per block, never measured (default 30)")
    p.add_argument("--k", type=int, default=5)
    args, rest = p.parse_known_args(argv)
    store_args = recall.parse_args(rest)  # --n, --per-user, --vectors, --samples, ... as bench.recall takes them
    return args, store_args


def main(argv=None) -> int:
    from bench import recall
    from bench.serve import Client, Server
    from bench.store_cache import copy_var, drop_cached_pages, onnx_dir, read_meta, read_pages, store_path
    from bench.synth import SynthMemory, TextGen

    args, store_args = parse_args(argv)
    os.environ.setdefault("EMBEDDING_ONNX_DIR", str(onnx_dir()))
    store = store_path(recall.NAME, recall._store_params(store_args))
    meta = read_meta(store)
    if meta is None:
        raise SystemExit(f"no cached store {store.name}: run bench.recall with the same store options first")
    trees = {"A": common.REPO_ROOT, "B": Path(args.tree_b).resolve()}
    if not (trees["B"] / "config" / "wsgi.py").exists():
        raise SystemExit(f"--tree-b {trees['B']}: not a checkout of this project")
    samples = meta["samples"]
    users = [u for u in meta["users"] if samples.get(u)]
    rng = random.Random(args.seed)

    def draw(count: int, exclude: set[str]) -> list[dict]:
        gen = TextGen(rng.randrange(10**9))
        gen.rng = rng
        out = []
        while len(out) < count:
            user = rng.choice(users)
            text, lang = gen.query_for(SynthMemory(**rng.choice(samples[user])), cross_lingual=rng.random() < 0.1)
            if text not in exclude:
                exclude.add(text)
                out.append({"user": user, "query": text, "lang": lang})
        return out

    seen: set[str] = set()
    pairs = [(draw(args.warm, seen), draw(args.queries, seen)) for _ in range(args.pairs)]
    order = [("A", "B") if i % 2 == 0 else ("B", "A") for i in range(args.pairs)]
    tmp = Path(tempfile.mkdtemp(prefix="bench-recall-ab-"))
    blocks, latency = [], {tree: {"zh": [], "en": [], "all": []} for tree in trees}
    try:
        var = copy_var(store, tmp / "var")
        drop_cached_pages(store / "var")  # read only to copy it: its pages would crowd the copy's out (at 1M)
        for (warm, cold), arms in zip(pairs, order):
            for tree in arms:
                read_pages(var)
                load = [round(x, 2) for x in os.getloadavg()]
                with Server(var, tree=trees[tree]) as server:
                    client = Client(server.port, api_key=meta["api_key"])
                    for q in warm:
                        client.request("POST", "/api/v1/recall", {"query": q["query"], "k": args.k}, user=q["user"])
                    times = []
                    for q in cold:
                        t = time.perf_counter()
                        status, body = client.request("POST", "/api/v1/recall", {"query": q["query"], "k": args.k},
                                                      user=q["user"])
                        elapsed = (time.perf_counter() - t) * 1000
                        if status != 200:
                            raise SystemExit(f"tree {tree}: HTTP {status} {body[:200]!r}")
                        times.append(elapsed)
                        latency[tree][q["lang"]].append(elapsed)
                        latency[tree]["all"].append(elapsed)
                block = {"tree": tree, "load_avg": load, "p50": round(common.percentile(times, 50), 2),
                         "p95": round(common.percentile(times, 95), 2)}
                blocks.append(block)
                print(f"block {len(blocks)} ({tree}): load {load}, p50 {block['p50']} ms, p95 {block['p95']} ms",
                      file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    summary = {tree: {lang: {"n": len(xs), "p50": round(common.percentile(xs, 50), 2),
                             "p95": round(common.percentile(xs, 95), 2)} for lang, xs in langs.items()}
               for tree, langs in latency.items()}
    revs = {tree: _rev(path) for tree, path in trees.items()}
    print(f"command: `python -m bench.recall_ab {' '.join(sys.argv[1:] if argv is None else argv)}`")
    print(f"machine: {os.cpu_count()} cores; blocks' load averages above and in the results\n")
    print(f"### bench.recall_ab — {store.name}: A = {trees['A']} ({revs['A']}), B = {trees['B']} ({revs['B']}); "
          f"{args.pairs} pairs × {args.queries} cold queries per block\n")
    rows = [(tree, lang, s["n"], s["p50"], s["p95"]) for tree, langs in summary.items() for lang, s in langs.items()]
    print(common.table(["tree", "lang", "n", "p50 ms", "p95 ms"], rows))
    out = Path(args.out) if args.out else common.RESULTS_DIR / f"{NAME}.json"
    out.write_text(json.dumps({"benchmark": NAME, "store": store.name,
                               "trees": {k: {"path": str(v), "git": revs[k]} for k, v in trees.items()},
                               "args": {k: v for k, v in vars(args).items()}, "blocks": blocks,
                               "summary": summary}, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(f"\nresults: {out}")
    return 0


def _rev(tree: Path) -> str:
    import subprocess

    found = subprocess.run(["git", "-C", str(tree), "describe", "--always", "--dirty"], capture_output=True, text=True)
    return found.stdout.strip() or "?"


if __name__ == "__main__":
    raise SystemExit(main())
