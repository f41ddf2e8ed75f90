"""Ingest throughput against its floor (DESIGN §10).

Messages (user / assistant / tool calls / tool results, zh + en) are appended through
``POST /api/v1/conversations/{id}/messages/batch`` to gunicorn served as `make run` serves it
(``--via http``, the default; ``--via service`` calls ``messages_append`` in-process instead), with
eager extraction (the embedded profile: each append extracts its messages — episodes +
rule-extracted memories through the write path — and projects them before it returns). The
headline is turns (messages) per second; the lag at the end (messages not yet extracted,
memories not yet projected) is read from the database after the last response. Floors, measured
in the same run and interleaved round by round:

- raw SQL insert of the same rows (``Message.objects.bulk_create``, same batch sizes, one
  transaction per batch), and
- raw embedding throughput of the texts the write path embedded (the produced memories'
  contents), one ``encode_one`` per text as the write path does, and batched.

    python -m bench.ingest                       # 400 messages, 4 per /messages/batch call, over HTTP
    python -m bench.ingest --batch 16            # bigger batches
    python -m bench.ingest --via service --profile
"""
from __future__ import annotations

import random
import sys

from bench import common

NAME = "ingest"


def parse_args(argv=None):
    p = common.arg_parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("--messages", type=int, default=400, help="messages to append (default 400)")
    p.add_argument("--batch", type=int, default=4, help="messages per messages_append call (default 4)")
    p.add_argument("--conversations", type=int, default=4, help="conversations (one user each) to spread over")
    p.add_argument("--rounds", type=int, default=4, help="rounds alternating service and floor (noise control)")
    p.add_argument("--entities", type=int, default=200, help="registered entities (mention matching on append)")
    p.add_argument("--tool-share", type=float, default=0.3)
    p.add_argument("--max-tool-chars", type=int, default=6_000)
    p.add_argument("--profile", action="store_true", help="cProfile the service path (--via service only)")
    p.add_argument("--runs", type=int, default=1,
                   help="runs, each a fresh process and var dir; with more than one, the median and spread "
                        "(min–max) of the figures are printed and written (the issue's figures: --runs 3)")
    p.add_argument("--via", choices=("http", "service"), default="http",
                   help="http: POST /messages/batch to gunicorn (default); service: messages_append in-process")
    return p.parse_args(argv)


def _register_entities(org, count: int, seed: int) -> int:
    from bench.synth import EN, ZH
    from entities.models import Entity

    rng = random.Random(seed)
    rows = []
    for i in range(count):
        n = i % 60 + 1
        machine_zh, machine_en = ZH["machine"][i % len(ZH["machine"])], EN["machine"][i % len(EN["machine"])]
        rows.append(Entity(org=org, type="asset", external_id=f"A-{1000 + i}", name=f"{n}号{machine_zh}",
                           aliases=[f"{machine_en} no. {n}"] if rng.random() < 0.7 else []))
    Entity.objects.bulk_create(rows, ignore_conflicts=True)
    return Entity.objects.filter(org=org).count()


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.runs > 1:
        return _runs(args, sys.argv[1:] if argv is None else list(argv))
    bench = common.setup(NAME, args)

    from bench.synth import conversation_turns
    from conversations.services import conversation_create, messages_append
    from memory.vectors import active_collection, active_embedder
    from tenancy.services import org_get_or_create

    org = org_get_or_create(slug="bench")
    embedder = active_embedder()
    if args.via == "service":
        active_collection()  # create the live collection before timing (first write would otherwise pay it)
    bench.facts = common.machine_facts(embedder)
    bench.facts["via"] = args.via
    entity_count = _register_entities(org, args.entities, args.seed) if args.entities else 0

    users = [f"ingest-u{i}" for i in range(args.conversations)]
    service_convs = [conversation_create(org=org, owner_user=u, external_id=f"svc-{u}")[0] for u in users]
    floor_convs = [conversation_create(org=org, owner_user=u, external_id=f"raw-{u}")[0] for u in users]
    per_conv = -(-args.messages // args.conversations)
    streams = [conversation_turns(args.seed + 17 * i, per_conv, tool_share=args.tool_share,
                                  max_tool_chars=args.max_tool_chars) for i in range(args.conversations)]
    # Append calls: (conversation index, messages), round-robin over conversations, tool groups never split.
    calls: list[tuple[int, list[dict]]] = []
    cursors = [0] * args.conversations
    while any(cursors[c] < len(streams[c]) for c in range(args.conversations)):
        for c in range(args.conversations):
            s, i = streams[c], cursors[c]
            if i >= len(s):
                continue
            j = min(i + args.batch, len(s))
            while j < len(s) and s[j]["role"] == "tool":
                j += 1
            calls.append((c, s[i:j]))
            cursors[c] = j
    total_messages = sum(len(m) for _, m in calls)
    bench.log(f"{total_messages} messages in {len(calls)} append calls over {args.conversations} conversations; "
              f"{entity_count} entities registered; via {args.via}")

    warm_conv, _ = conversation_create(org=org, owner_user="warm", external_id="warm")
    warm_messages = [{"role": "user", "content": "我们农场在佳木斯，有3台收割机。"},
                     {"role": "user", "content": "I prefer short answers."}]
    server = server_rss = None
    http_errors: list[str] = []
    if args.via == "http":
        from bench.serve import Client, Server
        from tenancy.services import api_key_create

        _, raw_key = api_key_create(org=org, name="bench-ingest")
        server = Server(bench.var_dir, log=bench.log).__enter__()
        clients = {u: Client(server.port, api_key=raw_key) for u in [*users, "warm"]}

        def append(conversation, user, msgs):
            status, body = clients[user].request("POST", f"/api/v1/conversations/{conversation.id}/messages/batch",
                                                 {"messages": msgs}, user=user)
            if status != 201 and len(http_errors) < 5:
                http_errors.append(f"{status} {body[:200]!r}")
    else:
        def append(conversation, user, msgs):
            messages_append(conversation=conversation, user_id=user, messages=msgs)

    try:
        totals = _measure(args, bench, append, calls, users, service_convs, floor_convs, warm_conv, warm_messages,
                          embedder, org)
    finally:
        if server is not None:
            server_rss = server.rss_mb()
            server.__exit__(None, None, None)

    return _report(args, bench, locals())


def _measure(args, bench, append, calls, users, service_convs, floor_convs, warm_conv, warm_messages, embedder, org):
    import cProfile

    from django.db import transaction
    from django.db.models import F
    from django.utils import timezone

    from conversations.models import Message
    from conversations.services import _message_tokens
    from memory.models import Memory

    # Warm-up outside the measurement: jieba, tiktoken, the matcher, the first write's lazy imports.
    append(warm_conv, "warm", warm_messages)
    embedder.encode_one("warm-up")

    rounds = max(1, args.rounds)
    per_round = -(-len(calls) // rounds)
    svc_s = raw_s = emb_one_s = emb_batch_s = 0.0
    call_ms: list[float] = []
    produced_texts: list[str] = []
    profiler = cProfile.Profile() if args.profile else None
    raw_seq = [0] * args.conversations
    memories_before = Memory.objects.count()
    for r in range(rounds):
        chunk = calls[r * per_round:(r + 1) * per_round]
        if not chunk:
            break
        bench.log(f"round {r + 1}/{rounds}: {sum(len(m) for _, m in chunk)} messages; load avg {_load()}")
        max_id = Memory.objects.order_by("-id").values_list("id", flat=True).first() or 0

        # service: messages_append with eager extraction
        if profiler:
            profiler.enable()
        t_round = common.now()
        for c, msgs in chunk:
            _, elapsed = common.timed(append, service_convs[c], users[c], msgs)
            call_ms.append(elapsed)
        svc_s += common.ms_since(t_round) / 1000
        if profiler:
            profiler.disable()
        texts = list(Memory.objects.filter(id__gt=max_id).order_by("id").values_list("content", flat=True))
        produced_texts += texts

        # floor 1: the same rows, bulk_create, one transaction per batch
        now = timezone.now()
        prepared = []
        for c, msgs in chunk:
            rows = []
            for data in msgs:
                raw_seq[c] += 1
                rows.append(Message(conversation=floor_convs[c], org_id=org.id, user_id=users[c], seq=raw_seq[c],
                                    role=data["role"], content=data.get("content") or "",
                                    tool_call_id=data.get("tool_call_id"), tool_calls=data.get("tool_calls"),
                                    token_count=_message_tokens(data), occurred_at=now,
                                    # Marked done: the extraction sweep must not pick the floor's rows
                                    # up inside the measured service (they are a floor, not turns).
                                    extracted_at=now))
            prepared.append(rows)
        t = common.now()
        for rows in prepared:
            with transaction.atomic():
                Message.objects.bulk_create(rows)
        raw_s += common.ms_since(t) / 1000

        # floor 2: embedding the texts the write path embedded
        t = common.now()
        for text in texts:
            embedder.encode_one(text)
        emb_one_s += common.ms_since(t) / 1000
        t = common.now()
        embedder.encode(texts)
        emb_batch_s += common.ms_since(t) / 1000

    # Lag at the end: work the last response left undone (eager extraction leaves none; a queue would).
    lag = {"messages_not_extracted": Message.objects.filter(conversation__in=service_convs, extracted_at__isnull=True,
                                                            role__in=["user", "assistant"]).count(),
           "memories_not_projected": Memory.objects.filter(user_id__in=users, projected_version__lt=F("version")).count()}
    return svc_s, raw_s, emb_one_s, emb_batch_s, call_ms, produced_texts, profiler, memories_before, lag


def _load() -> list[float]:
    import os

    return [round(x, 2) for x in os.getloadavg()]


def _report(args, bench, v) -> int:
    import io
    import pstats

    from django.db.models import Count

    from conversations.models import Message
    from conversations.services import conversation_create, messages_append
    from memory.models import Memory

    (svc_s, raw_s, emb_one_s, emb_batch_s, call_ms, produced_texts, profiler, memories_before, lag) = v["totals"]
    users, service_convs, floor_convs, calls, org = v["users"], v["service_convs"], v["floor_convs"], v["calls"], v["org"]
    total_messages, entity_count, http_errors = v["total_messages"], v["entity_count"], v["http_errors"]
    rounds = max(1, args.rounds)
    produced = Memory.objects.count() - memories_before
    by_kind = dict(Memory.objects.filter(user_id__in=users).order_by().values_list("kind").annotate(n=Count("id")))
    by_status = dict(Memory.objects.filter(user_id__in=users).order_by().values_list("status").annotate(n=Count("id")))
    service_msgs = Message.objects.filter(conversation__in=service_convs).count()
    raw_msgs = Message.objects.filter(conversation__in=floor_convs).count()
    extracted = Message.objects.filter(conversation__in=service_convs, extracted_at__isnull=False).count()
    assert service_msgs == raw_msgs == total_messages, (service_msgs, raw_msgs, total_messages)

    # SQL issued by one typical append (in-process, after the server stopped: one process opens the
    # shard) (a user statement with a fact + an assistant suggestion).
    sql_conv, _ = conversation_create(org=org, owner_user="sql-user", external_id="sql")
    sql = common.sql_capture(messages_append, conversation=sql_conv, user_id="sql-user", messages=[
        {"role": "user", "content": "我们农场在佳木斯，有3台收割机。"},
        {"role": "assistant", "content": "建议下周对3号收割机做一次保养。"}])
    sql["memories_written"] = Memory.objects.filter(user_id="sql-user").count()

    n_texts = len(produced_texts)
    svc_mps = total_messages / svc_s
    raw_mps = total_messages / raw_s
    mem_ps = produced / svc_s
    one_tps = n_texts / emb_one_s if emb_one_s else None
    batch_tps = n_texts / emb_batch_s if emb_batch_s else None
    top = []
    if profiler:
        for order, count in (("cumulative", 40), ("tottime", 20)):
            buf = io.StringIO()
            pstats.Stats(profiler, stream=buf).sort_stats(order).print_stats(count)
            top += buf.getvalue().splitlines()
    payload = {
        "config": {"via": args.via, "messages": total_messages, "append_calls": len(calls), "batch": args.batch,
                   "conversations": args.conversations, "rounds": rounds, "entities": entity_count,
                   "tool_results": sum(1 for _, m in calls for x in m if x["role"] == "tool"),
                   "extractor": "rules (no LLM_BASE_URL)"},
        "service": {"seconds": round(svc_s, 2), "messages_per_s": round(svc_mps, 1),
                    "memories_produced": produced, "memories_per_s": round(mem_ps, 1),
                    "append_call_ms": common.stats(call_ms), "memories_by_kind": by_kind,
                    "memories_by_status": by_status, "messages_marked_extracted": extracted},
        "floor": {"raw_insert_seconds": round(raw_s, 3), "raw_insert_messages_per_s": round(raw_mps, 1),
                  "embedded_texts": n_texts, "encode_one_seconds": round(emb_one_s, 2),
                  "encode_one_texts_per_s": round(one_tps, 1) if one_tps else None,
                  "encode_batch_seconds": round(emb_batch_s, 2),
                  "encode_batch_texts_per_s": round(batch_tps, 1) if batch_tps else None},
        "ratios": {
            "messages_time_vs_raw_insert": common.ratio(raw_mps, svc_mps),
            "memories_time_vs_encode_one": common.ratio(one_tps, mem_ps) if one_tps else None,
            "memories_time_vs_encode_batch": common.ratio(batch_tps, mem_ps) if batch_tps else None,
        },
        "lag_at_end": lag, "http_errors": http_errors, "server_rss_mb": v.get("server_rss"),
        "load_avg_at_end": _load(),
        "sql_one_append_of_2_messages": sql,
        "profile_top": top,
        "rss_mb": common.rss_mb(), "peak_rss_mb": common.peak_rss_mb(),
        "disk": common.var_sizes(bench.var_dir),
    }
    out = common.write_results(bench, payload)

    common.print_facts(bench.facts)
    print(f"### bench.ingest — {total_messages} messages in {len(calls)} messages_append calls "
          f"(~{total_messages / len(calls):.1f}/call), {args.conversations} conversations, {entity_count} entities\n")
    print(common.table(
        ["path", "seconds", "messages/s", "memories/s", "texts/s", "ratio (time ×)"],
        [(("POST /messages/batch (gunicorn)" if args.via == "http" else "messages_append")
          + " + eager extraction", round(svc_s, 2), round(svc_mps, 1), round(mem_ps, 1), None, None),
         ("floor: bulk_create of the same rows", round(raw_s, 3), round(raw_mps, 1), None, None,
          payload["ratios"]["messages_time_vs_raw_insert"]),
         (f"floor: encode_one × {n_texts} produced texts", round(emb_one_s, 2), None, None,
          round(one_tps, 1) if one_tps else None, payload["ratios"]["memories_time_vs_encode_one"]),
         (f"floor: encode(batch) of the {n_texts} texts", round(emb_batch_s, 2), None, None,
          round(batch_tps, 1) if batch_tps else None, payload["ratios"]["memories_time_vs_encode_batch"])]))
    print()
    cs = payload["service"]["append_call_ms"]
    print(f"append call latency: p50 {cs['p50']} ms, p95 {cs['p95']} ms, p99 {cs['p99']} ms; produced {produced} memories "
          f"{by_kind}; statuses {by_status}")
    print(f"turns/s: {round(svc_mps, 1)} (goal ≥ 60 through /messages/batch); lag at the end: {lag}; "
          f"load avg at start {bench.facts.get('load_avg_at_start')}, at end {_load()}")
    if http_errors:
        print(f"HTTP errors: {http_errors}")
    print("ratio = service time / floor time for the same work (messages: raw insert; memories: raw embedding)")
    print(f"SQL for one append of 2 messages ({sql['memories_written']} memories written): {sql['count']} statements; "
          f"top: {dict(list(sql['by_statement'].items())[:8])}")
    if top:
        print("\nprofile (top 30 by cumulative, top 20 by own time):\n```")
        print("\n".join(line.replace(str(common.REPO_ROOT) + "/", "") for line in top if line.strip()))
        print("```")
    print(f"RSS {payload['rss_mb']} MiB (peak {payload['peak_rss_mb']} MiB)")
    print(f"\nresults: {out.relative_to(common.REPO_ROOT) if out.is_relative_to(common.REPO_ROOT) else out}")
    return 0


def _runs(args, argv: list[str]) -> int:
    """The same command in `--runs` fresh processes, one after the other; median and spread."""
    import json
    import statistics
    import subprocess
    import tempfile
    from pathlib import Path

    from bench.recall import _without

    base = _without(argv, "--runs", "--out")
    docs = []
    with tempfile.TemporaryDirectory(prefix="bench-ingest-runs-") as tmp:
        for i in range(args.runs):
            out = Path(tmp) / f"run-{i}.json"
            subprocess.run([sys.executable, "-m", "bench.ingest", *base, "--out", str(out)], cwd=common.REPO_ROOT,
                           check=True)
            docs.append(json.loads(out.read_text(encoding="utf-8")))

    def spread(values):
        return {"median": round(statistics.median(values), 2), "min": round(min(values), 2),
                "max": round(max(values), 2)}

    figures = {
        "turns_per_s": spread([d["service"]["messages_per_s"] for d in docs]),
        "memories_per_s": spread([d["service"]["memories_per_s"] for d in docs]),
        "append_call_p95_ms": spread([d["service"]["append_call_ms"]["p95"] for d in docs]),
        "ratio_to_encode_one": spread([d["ratios"]["memories_time_vs_encode_one"] for d in docs]),
        "ratio_to_encode_batch": spread([d["ratios"]["memories_time_vs_encode_batch"] for d in docs]),
        "lag_messages_not_extracted": spread([d["lag_at_end"]["messages_not_extracted"] for d in docs]),
        "lag_memories_not_projected": spread([d["lag_at_end"]["memories_not_projected"] for d in docs]),
    }
    loads = [(d["machine"]["load_avg_at_start"], d["load_avg_at_end"]) for d in docs]
    out = Path(args.out) if args.out else common.RESULTS_DIR / f"{NAME}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": NAME, "runs": len(docs), "figures": figures, "load_avg": loads,
                               "per_run": docs}, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(f"\n### bench.ingest — {len(docs)} runs (median, min–max), via {args.via}, {args.batch} messages per call\n")
    print(common.table(["figure", "median", "min", "max"],
                       [(k, v["median"], v["min"], v["max"]) for k, v in figures.items()]))
    for i, (start, end) in enumerate(loads):
        print(f"run {i + 1}: load avg at start {start}, at end {end}")
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
