"""Entity resolution latency against its floor, and what recall along relations adds (DESIGN §10).

50k registered entities (assets with model and site attributes, asset models, work orders; zh + en
names and aliases) and 200k relations (work order about asset, asset is_model, asset near asset)
inserted with ``bulk_create``; a user with a current conversation that mentions an asset and a past
one that mentions a harvester. Then ``conversations.entity_resolution.entity_resolve`` over a mix of
texts: explicit id, name, alias, coreference ("它的…" with the conversation), long-term cue
("上次那台…"), category word alone ("收割机…"), attribute value, site qualifier plus attribute, a
relation path ("它的工单"), and text naming nothing.

Floor, per text in the same run: ``matcher.find(text)`` alone on the warm org matcher.
Goal: resolution p95 ≤ 5 ms.

Recall along relations: the user holds --memories memories, a share linked to work orders and assets;
queries naming an asset are recalled with RECALL_ENTITY_FOCUS on and off, interleaved, same run.
Goal: one hop adds ≤ 2 ms at p95.

    python -m bench.entities
    python -m bench.entities --entities 50000 --relations 200000 --texts 700
"""
from __future__ import annotations

import random
import sys

from bench import common

NAME = "entities"
CATEGORIES = ["explicit_id", "name", "alias", "coreference", "long_term", "category_word", "attribute", "qualifier",
              "relation", "none"]


def parse_args(argv=None):
    p = common.arg_parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("--entities", type=int, default=50_000, help="registered entities (default 50000)")
    p.add_argument("--texts", type=int, default=700, help="measured resolutions (default 700, ~100 per category)")
    p.add_argument("--restricted", type=float, default=0.02, help="share of restricted entities (access policy work)")
    p.add_argument("--relations", type=int, default=200_000, help="registered relations (default 200000)")
    p.add_argument("--memories", type=int, default=1000, help="the user's memories for the recall comparison")
    p.add_argument("--recalls", type=int, default=150, help="recall queries, each run with and without the hop")
    p.add_argument("--max-seconds", type=float, default=180.0,
                   help="stop the measured loop after this long (texts are shuffled, so categories stay balanced)")
    return p.parse_args(argv)


def _entities(org, count: int, rng: random.Random, restricted: float) -> list:
    from bench.synth import EN, ZH
    from entities.models import Entity

    rows = []
    for i in range(count):
        r = rng.random()
        zh = rng.random() < 0.5
        v = ZH if zh else EN
        machine, city, brand = rng.choice(v["machine"]), rng.choice(v["city"]), rng.choice(v["brand"])
        if r < 0.6:
            n = rng.randint(1, 99)
            name = f"{city}{n}号{machine}" if zh else f"{city} {machine} #{n}"
            aliases = [f"{brand}{machine}{i}"] if rng.random() < 0.5 else []
            if rng.random() < 0.3:
                aliases.append(f"{rng.choice(v['person'])}的{machine}{i % 97}" if zh else f"{rng.choice(v['person'])}'s {machine} {i % 97}")
            attributes = {"model": f"{rng.choice('SMTCX')}{rng.randint(100, 999)}-{rng.randint(1, 99):02d}",
                          "site": f"{city}{rng.randint(1, 40)}号库" if zh else f"{city} yard {rng.randint(1, 40)}"}
            rows.append(Entity(org=org, type="asset", external_id=f"A-{100000 + i}", name=name, aliases=aliases,
                               attributes=attributes, restricted=rng.random() < restricted))
        elif r < 0.75:
            code = f"{rng.choice('SMTCX')}{rng.randint(100, 999)}-{rng.randint(1, 99):02d}"
            rows.append(Entity(org=org, type="asset_model", external_id=code, name=f"{brand} {code} {machine}",
                               aliases=[f"{brand}{code}"] if rng.random() < 0.5 else []))
        else:
            rows.append(Entity(org=org, type="workorder", external_id=f"WO-{2020 + i % 6}-{i:06d}",
                               name=f"{city}{machine}维修单{i}" if zh else f"{machine} repair order {i} {city}",
                               aliases=[]))
    return rows


def main(argv=None) -> int:
    args = parse_args(argv)
    bench = common.setup(NAME, args)

    from django.conf import settings
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from conversations.entity_resolution import entity_resolve
    from conversations.models import EntityMention
    from conversations.services import conversation_create, messages_append
    from entities.models import Entity
    from entities.policy import allowed_entity_ids
    from entities.selectors import entity_matcher_for_org, entity_refs, registry_generation
    from memory.vectors import active_embedder
    from tenancy.services import org_get_or_create

    org = org_get_or_create(slug="bench")
    bench.facts = common.machine_facts(active_embedder())
    rng = random.Random(args.seed)

    bench.log(f"registering {args.entities:,} entities")
    t = common.now()
    rows = _entities(org, args.entities, rng, args.restricted)
    for start in range(0, len(rows), 5000):
        Entity.objects.bulk_create(rows[start:start + 5000], ignore_conflicts=True)
    from entities.models import EntityRelation
    from memory.services.memories import MemoryInput, memory_write

    ids_by_type: dict[str, list[int]] = {}
    for eid, type_ in Entity.objects.filter(org=org).values_list("id", "type"):
        ids_by_type.setdefault(type_, []).append(eid)
    assets_ids, models_ids, wo_ids = ids_by_type.get("asset", []), ids_by_type.get("asset_model", []), ids_by_type.get("workorder", [])
    relations, wo_asset = [], {}
    for wo in wo_ids:
        wo_asset[wo] = rng.choice(assets_ids)
        relations.append(EntityRelation(org=org, from_entity_id=wo, type="about", to_entity_id=wo_asset[wo]))
    for asset in assets_ids:
        if models_ids:
            relations.append(EntityRelation(org=org, from_entity_id=asset, type="is_model", to_entity_id=rng.choice(models_ids)))
    while len(relations) < args.relations and len(assets_ids) > 1:
        a, b = rng.sample(assets_ids, 2)
        relations.append(EntityRelation(org=org, from_entity_id=a, type="near", to_entity_id=b))
    relations = relations[:args.relations]
    for start in range(0, len(relations), 10000):
        EntityRelation.objects.bulk_create(relations[start:start + 10000])
    register_s = common.ms_since(t) / 1000
    registered = Entity.objects.filter(org=org).count()
    bench.log(f"{len(relations):,} relations")
    t = common.now()
    matcher = entity_matcher_for_org(org_id=org.id)
    matcher_build_ms = common.ms_since(t)
    bench.log(f"registered {registered:,} in {register_s:.1f}s; matcher built in {matcher_build_ms:.0f} ms")

    refs = list(Entity.objects.filter(org=org, active=True, restricted=False).values_list(
        "id", "type", "external_id", "name", "aliases", "attributes"))
    with_attrs = [r for r in refs if r[5]]
    assets = [r for r in refs if r[1] == "asset"]
    harvesters = [r for r in assets if "收割机" in r[3]] or assets
    with_alias = [r for r in refs if r[4]]

    user = "ent-user"
    past, _ = conversation_create(org=org, owner_user=user, external_id="past")
    past_entity = rng.choice(harvesters)
    messages_append(conversation=past, user_id=user, messages=[
        {"role": "user", "content": f"{past_entity[3]}昨天漏油了，帮我记一下"},
        {"role": "assistant", "content": "好的，已记录。"}])
    current, _ = conversation_create(org=org, owner_user=user, external_id="current")
    # The asset in focus has work orders (its relations are what "它的工单" follows).
    with_orders = set(wo_asset.values())
    current_entity = rng.choice([a for a in assets if a[0] in with_orders] or assets)
    messages_append(conversation=current, user_id=user, messages=[
        {"role": "user", "content": f"查一下{current_entity[2]}的状态"},
        {"role": "assistant", "content": f"{current_entity[2]}目前正常运行。"},
        {"role": "user", "content": "好的，谢谢"}])
    mentions = EntityMention.objects.filter(conversation__in=[past, current]).count()

    def text_for(category: str) -> tuple[str, object]:
        if category == "explicit_id":
            e = rng.choice(refs)
            return rng.choice([f"{e[2]}的发动机有异响", f"please check {e[2]} today", f"{e[2]} 什么时候保养"]), None
        if category == "name":
            e = rng.choice(refs)
            return rng.choice([f"{e[3]}今天要保养", f"what is the status of {e[3]}"]), None
        if category == "alias":
            e = rng.choice(with_alias)
            return rng.choice([f"{rng.choice(e[4])}在哪里", f"where is {rng.choice(e[4])} now"]), None
        if category == "coreference":
            return rng.choice(["它的保养记录呢", "它现在在哪", "what is its service history", "这台还要多久修好"]), current
        if category == "long_term":
            return rng.choice(["上次那台收割机修好了吗", "上回说的那台怎么样了", "the one we discussed last time, is it fixed"]), current
        if category == "attribute":
            e = rng.choice(with_attrs)
            return rng.choice([f"那台 {e[5]['model']} 又报警了", f"is the {e[5]['model']} due for service"]), None
        if category == "qualifier":
            e = rng.choice(with_attrs)
            return f"{e[5]['site']}那台 {e[5]['model']} 的保养记录", None
        if category == "relation":
            return rng.choice(["它的工单派给谁了", "它的维修单到哪一步了", "who is assigned to its work order"]), current
        if category == "category_word":
            return rng.choice(["收割机的保养计划", "拖拉机都要换机油", "the tractors need service", "所有的机型列一下"]), None
        return rng.choice(["今天天气不错", "帮我写一份周报", "how many hours did we work this week"]), None

    per_cat = max(1, args.texts // len(CATEGORIES))
    texts = [(cat, *text_for(cat)) for cat in CATEGORIES for _ in range(per_cat)]
    rng.shuffle(texts)

    warm = [next(t for t in texts if t[0] == c) for c in CATEGORIES]
    bench.log(f"warm-up over {len(warm)} texts (one per category)")
    for _cat, text, conv in warm * 2:
        entity_resolve(org=org, user_id=user, text=text, conversation=conv)
        matcher.find(text)

    bench.log("measuring (interleaved with the floor)")
    from entities.resolver import resolve as pure_resolve

    samples = {c: {"resolve": [], "floor": [], "pure": []} for c in CATEGORIES}
    pure_refs = getattr(matcher, "refs", None) or entity_refs(org_id=org.id)
    statuses = {c: {} for c in CATEGORIES}
    candidates = {c: [] for c in CATEGORIES}
    truncated = {c: 0 for c in CATEGORIES}
    deadline = common.now() + args.max_seconds
    stopped_early = None
    for n, (cat, text, conv) in enumerate(texts):
        if common.now() > deadline:
            stopped_early = n
            bench.log(f"time budget reached after {n} texts")
            break
        def floor():
            return common.timed(matcher.find, text)[1]

        def service():
            return common.timed(entity_resolve, org=org, user_id=user, text=text, conversation=conv)

        if n % 2:
            f_ms = floor()
            (resolution, _), r_ms = service()
        else:
            (resolution, _), r_ms = service()
            f_ms = floor()
        samples[cat]["resolve"].append(r_ms)
        samples[cat]["floor"].append(f_ms)
        # Reference, not the floor: the pure resolver on the cached matcher's refs, no mentions, no DB.
        samples[cat]["pure"].append(common.timed(pure_resolve, text, matcher=matcher, entities=pure_refs,
                                                 max_candidates=settings.RESOLVE_MAX_CANDIDATES)[1])
        statuses[cat][resolution.status] = statuses[cat].get(resolution.status, 0) + 1
        candidates[cat].append(len(resolution.candidates) or (1 if resolution.entity_id else 0))
        truncated[cat] += bool(getattr(resolution, "truncated", False))

    # Components of one resolution (diagnosis): the per-call registry work outside the matcher.
    comp = {"registry_version_query": [], "entity_matcher_for_org_warm": [], "entity_refs_all": [],
            "allowed_entity_ids_1": [], "allowed_entity_ids_1_with_registry": []}
    some_id = refs[0][0]
    for _ in range(30):
        comp["registry_version_query"].append(common.timed(registry_generation, org.id)[1])
        comp["entity_matcher_for_org_warm"].append(common.timed(entity_matcher_for_org, org_id=org.id)[1])
        comp["allowed_entity_ids_1"].append(
            common.timed(allowed_entity_ids, org_id=org.id, user_id=user, entity_ids={some_id})[1])
        comp["allowed_entity_ids_1_with_registry"].append(
            common.timed(allowed_entity_ids, org_id=org.id, user_id=user, entity_ids={some_id}, registry=matcher,
                         org_slug=org.slug)[1])
    for _ in range(30):  # apart: its 50k allocations would slow the small timings above
        comp["entity_refs_all"].append(common.timed(entity_refs, org_id=org.id)[1])
    # SQL statements of one resolution per text kind (the first text of each kind, as measured).
    sql_counts = {}
    for cat, text, conv in warm:
        with CaptureQueriesContext(connection) as ctx:
            entity_resolve(org=org, user_id=user, text=text, conversation=conv)
        sql_counts[cat] = len(ctx.captured_queries)

    # ---------------------------------------------------------------- recall along relations
    from django.test.utils import override_settings

    from memory.recall import RecallQuery, recall

    bench.log(f"writing {args.memories} memories, a third linked to work orders, a sixth to assets")
    focus_assets = [a for a in assets if a[0] in with_orders][:200] or assets[:200]
    orders_of: dict[int, list[int]] = {}
    for wo, asset in wo_asset.items():
        orders_of.setdefault(asset, []).append(wo)
    for i in range(args.memories):
        asset = rng.choice(focus_assets)
        links = []
        if i % 3 == 0 and orders_of.get(asset[0]):
            links = [rng.choice(orders_of[asset[0]])]
        elif i % 6 == 1:
            links = [asset[0]]
        memory_write(MemoryInput(org=org, user_id=user, kind="fact", created_by="api", actor="bench", entity_ids=links,
                                 content=f"维修记录{i}：{rng.choice(['液压油', '滤芯', '皮带', '轴承', '传感器'])}在第{i % 50 + 1}周更换，"
                                         f"下次检查间隔{rng.randint(2, 12)}周。"))
    recall_ms = {"hop": [], "no_hop": []}
    queries = [f"{rng.choice(focus_assets)[3]}之前修的时候有什么要注意的？" for _ in range(args.recalls)]
    for q_text in queries[:5]:  # warm-up
        recall(RecallQuery(org=org, user_id=user, query=q_text, k=5))
    for n, q_text in enumerate(queries):
        order = ("hop", "no_hop") if n % 2 else ("no_hop", "hop")
        for mode in order:
            with override_settings(RECALL_ENTITY_FOCUS=mode == "hop"):
                recall_ms[mode].append(common.timed(recall, RecallQuery(org=org, user_id=user, query=q_text, k=5))[1])
    hop_st, plain_st = common.stats(recall_ms["hop"]), common.stats(recall_ms["no_hop"])
    hop_added = round(hop_st["p95"] - plain_st["p95"], 3)

    # ---------------------------------------------------------------- report
    all_r = [x for c in CATEGORIES for x in samples[c]["resolve"]]
    all_f = [x for c in CATEGORIES for x in samples[c]["floor"]]
    overall_p = common.stats([x for c in CATEGORIES for x in samples[c]["pure"]])
    overall_r, overall_f = common.stats(all_r), common.stats(all_f)
    cat_json, cat_rows = {}, []
    for c in CATEGORIES:
        if not samples[c]["resolve"]:
            continue
        rs, fs = common.stats(samples[c]["resolve"]), common.stats(samples[c]["floor"])
        cat_json[c] = {"resolve_ms": rs, "floor_ms": fs, "pure_resolver_ms": common.stats(samples[c]["pure"]),
                       "ratio": common.ratios(rs, fs), "statuses": statuses[c],
                       "candidates_mean": round(sum(candidates[c]) / len(candidates[c]), 1),
                       "truncated": truncated[c], "sql_statements": sql_counts.get(c)}
        ps = cat_json[c]["pure_resolver_ms"]
        cat_rows.append((c, rs["n"], rs["p50"], rs["p95"], fs["p50"], fs["p95"], common.ratio(rs["p95"], fs["p95"]),
                         ps["p50"], ps["p95"],
                         ", ".join(f"{k} {v}" for k, v in sorted(statuses[c].items())),
                         cat_json[c]["candidates_mean"]))
    comp_st = {k: common.stats(v) for k, v in comp.items()}
    goal = {"value": overall_r["p95"], "limit": 5.0, "status": common.goal_mark(overall_r["p95"], 5.0)}
    payload = {
        "config": {"entities": registered, "texts": len(texts), "measured": len(all_r), "stopped_early_at": stopped_early,
                   "per_category": per_cat, "mentions": mentions,
                   "restricted_share": args.restricted, "max_candidates": settings.RESOLVE_MAX_CANDIDATES},
        "setup": {"register_s": round(register_s, 2), "matcher_build_ms": round(matcher_build_ms, 1)},
        "overall": {"resolve_ms": overall_r, "floor_ms": overall_f, "pure_resolver_ms": overall_p,
                    "ratio": common.ratios(overall_r, overall_f)},
        "by_category": cat_json,
        "components_ms": comp_st,
        "sql_per_resolution": sql_counts,
        "recall_hop": {"with_hop_ms": hop_st, "without_hop_ms": plain_st, "p95_added_ms": hop_added,
                       "memories": args.memories, "relations": len(relations)},
        "goals": {"resolve_p95_le_5ms": goal,
                  "hop_adds_le_2ms_p95": {"value": hop_added, "limit": 2.0, "status": common.goal_mark(hop_added, 2.0)}},
        "rss_mb": common.rss_mb(), "peak_rss_mb": common.peak_rss_mb(),
    }
    out = common.write_results(bench, payload)

    common.print_facts(bench.facts)
    print(f"### bench.entities — {registered:,} entities, {len(all_r)} resolutions"
          + (f" (time budget of {args.max_seconds:.0f} s reached: {len(texts)} planned)" if stopped_early else "") + "\n")
    print(f"setup: bulk register {register_s:.1f} s; org matcher (Aho-Corasick) cold build {matcher_build_ms:,.0f} ms\n")
    print(common.table(["texts", "n", "resolve p50", "resolve p95", "floor p50", "floor p95", "ratio p95",
                        "pure p50", "pure p95", "statuses", "cands"],
                       cat_rows + [("all", overall_r["n"], overall_r["p50"], overall_r["p95"], overall_f["p50"],
                                    overall_f["p95"], common.ratio(overall_r["p95"], overall_f["p95"]),
                                    overall_p["p50"], overall_p["p95"], "", None)]))
    print("\nfloor = matcher.find(text); pure = entities.resolver.resolve() on the cached matcher's refs without "
          "mentions or DB, same candidate cap (a reference for the Django glue's cost, not the floor)")
    print()
    print("per-call work outside the matcher (ms):\n")
    print(common.table(["component", "p50", "p95"], [(k, v["p50"], v["p95"]) for k, v in comp_st.items()]))
    print()
    print(f"goal: resolution p95 = {overall_r['p95']} ms (≤ 5 ms: {goal['status']}); ratio p50/p95 = "
          f"{payload['overall']['ratio'].get('p50')}/{payload['overall']['ratio'].get('p95')}")
    print(f"recall with one hop p50/p95 {hop_st['p50']}/{hop_st['p95']} ms, without {plain_st['p50']}/{plain_st['p95']} ms: "
          f"the hop adds {hop_added} ms at p95 (≤ 2 ms: {common.goal_mark(hop_added, 2.0)})")
    print("SQL statements per resolution: " + ", ".join(f"{c} {n}" for c, n in sql_counts.items()))
    print(f"RSS {payload['rss_mb']} MiB (peak {payload['peak_rss_mb']} MiB)")
    print(f"\nresults: {out.relative_to(common.REPO_ROOT) if out.is_relative_to(common.REPO_ROOT) else out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
