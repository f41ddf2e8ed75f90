"""Synthetic zh + en memories, queries and conversations from templates and random vocabulary
(no external data), plus the fast bulk loader the recall and scale benchmarks share.

The loader writes what the write path would have left behind — Memory, MemoryVersion,
MemorySource and MemoryEmbedding rows, and points in the live collection with
``memory.projections.memory_payload`` payloads — with ``bulk_create`` and batch encoding instead
of one ``memory_write`` per memory.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

# --------------------------------------------------------------------------- vocabulary

ZH = {
    "machine": ["收割机", "拖拉机", "烘干机", "播种机", "插秧机", "喷药机", "植保无人机", "水泵", "发电机", "打捆机",
                "旋耕机", "深松机"],
    "brand": ["约翰迪尔", "久保田", "雷沃", "东方红", "沃得", "中联", "凯斯", "纽荷兰", "克拉斯", "洋马", "常发", "星光"],
    "city": ["佳木斯", "齐齐哈尔", "哈尔滨", "绥化", "黑河", "大庆", "牡丹江", "鸡西", "双鸭山", "鹤岗", "五常", "北安",
             "富锦", "讷河", "海伦", "宝清"],
    "crop": ["玉米", "大豆", "水稻", "小麦", "马铃薯", "甜菜", "高粱", "谷子", "燕麦", "向日葵"],
    "fault": ["漏油", "过热", "有异响", "突然熄火", "链条断了", "液压出故障", "一直报警", "轮胎磨损严重", "皮带打滑",
              "启动困难", "冒黑烟", "油耗偏高"],
    "maint": ["保养", "换机油", "全面检修", "更换滤芯", "校准", "润滑", "更换刀片", "更换轴承", "清理粮仓", "调整割台"],
    "when": ["昨天", "上周", "三天前", "上个月", "今天上午", "前天", "去年秋收时", "上周五", "月初", "春耕前"],
    "pref": ["简洁的回答", "表格形式", "按紧急程度排序", "先说结论", "中文回复", "带数据的报告", "图表展示", "要点列表",
             "公制单位", "详细的步骤", "每周一的汇总", "语音播报"],
    "person": ["张师傅", "李工", "王经理", "赵会计", "刘队长", "陈技术员", "孙主任", "周机手", "吴站长", "郑老板"],
    "part": ["发动机", "变速箱", "割台", "脱粒滚筒", "液压泵", "散热器", "离合器", "传动轴", "电瓶", "输粮搅龙"],
}
EN = {
    "machine": ["harvester", "tractor", "grain dryer", "seeder", "planter", "sprayer", "drone", "irrigation pump",
                "generator", "baler", "tiller", "subsoiler"],
    "brand": ["John Deere", "Kubota", "Case IH", "New Holland", "Claas", "Fendt", "Massey Ferguson", "Valtra",
              "Deutz-Fahr", "Kioti", "Mahindra", "AGCO"],
    "city": ["Fargo", "Bismarck", "Des Moines", "Omaha", "Lincoln", "Saskatoon", "Regina", "Winnipeg", "Ames",
             "Topeka", "Sioux Falls", "Grand Forks", "Brandon", "Lethbridge", "Wichita", "Salina"],
    "crop": ["corn", "soybeans", "wheat", "barley", "canola", "potatoes", "sugar beets", "oats", "sunflowers",
             "sorghum"],
    "fault": ["leaking oil", "overheating", "making a grinding noise", "stalling", "throwing a chain",
              "showing a hydraulic fault", "beeping a warning", "wearing its tires", "slipping its belt",
              "hard to start", "blowing black smoke", "burning too much fuel"],
    "maint": ["service", "oil change", "full inspection", "filter replacement", "calibration", "lubrication",
              "blade replacement", "bearing replacement", "grain tank cleaning", "header adjustment"],
    "when": ["yesterday", "last week", "three days ago", "last month", "this morning", "the day before yesterday",
             "during last harvest", "last Friday", "early this month", "before spring planting"],
    "pref": ["short answers", "tables", "sorting by urgency", "the conclusion first", "replies in English",
             "reports with numbers", "charts", "bullet points", "metric units", "step-by-step detail",
             "a Monday summary", "voice read-outs"],
    "person": ["Sam", "Maria", "Dave the mechanic", "Priya", "Tom from accounting", "Lena", "Carlos", "Ivy",
               "Hank", "Olga"],
    "part": ["engine", "gearbox", "header", "threshing drum", "hydraulic pump", "radiator", "clutch", "drive shaft",
             "battery", "unloading auger"],
}

# kind -> templates; {n}, {area}, {year} are numbers, the rest vocabulary slots.
ZH_TEMPLATES = {
    "preference": ["我喜欢{pref}", "以后回答请用{pref}", "我习惯用{brand}的{machine}", "默认给我{pref}",
                   "我比较喜欢{when}安排{maint}", "我偏好{pref}，尤其是关于{crop}的", "我不喜欢{brand}的{machine}"],
    "fact": ["我们农场在{city}", "我家有{n}台{brand}{machine}", "我们种了{area}亩{crop}", "{person}负责{n}号{machine}的{maint}",
             "我们的{n}号{machine}是{year}年买的", "我们在{city}还有一个{crop}基地", "{n}号{machine}的{part}是去年换的"],
    "event": ["{n}号{machine}{when}{fault}", "{when}给{n}号{machine}做了{maint}", "{when}在{city}收了{area}亩{crop}",
              "{person}{when}报修了{n}号{machine}", "{n}号{machine}的{part}{when}坏了", "{when}买了一台{brand}{machine}"],
    "context": ["这周主要在{city}抢收{crop}", "目前{n}号{machine}在{city}作业", "今年计划种{area}亩{crop}",
                "{person}这个月在{city}驻点", "{crop}地块最近缺水"],
    "suggestion": ["建议{when}对{n}号{machine}做{maint}", "可以考虑把{n}号{machine}调到{city}",
                   "建议检查{n}号{machine}的{part}", "最好提前给{crop}地块安排{machine}"],
    "episode": ["{person}说{n}号{machine}{fault}，需要尽快{maint}", "{n}号{machine}{when}{fault}了，怎么办",
                "帮我看看{city}那边{crop}的收割进度", "{n}号{machine}的{part}声音不对，{person}在看"],
}
EN_TEMPLATES = {
    "preference": ["I prefer {pref}", "From now on please use {pref}", "I usually work with the {brand} {machine}",
                   "By default give me {pref}", "I like to schedule {maint} {when}", "I really like {pref} for {crop}",
                   "I don't like the {brand} {machine}"],
    "fact": ["Our farm is in {city}", "We have {n} {brand} {machine}s", "We grow {area} acres of {crop}",
             "{person} is in charge of {maint} for {machine} no. {n}", "Our {machine} no. {n} was bought in {year}",
             "We also run a {crop} site near {city}", "The {part} of {machine} no. {n} was replaced last year"],
    "event": ["{machine} no. {n} started {fault} {when}", "We did the {maint} on {machine} no. {n} {when}",
              "We harvested {area} acres of {crop} in {city} {when}", "{person} reported {machine} no. {n} {when}",
              "The {part} of {machine} no. {n} broke {when}", "We bought a {brand} {machine} {when}"],
    "context": ["This week we are harvesting {crop} around {city}", "{machine} no. {n} is working in {city} right now",
                "We plan {area} acres of {crop} this year", "{person} is stationed in {city} this month",
                "The {crop} fields are short of water lately"],
    "suggestion": ["You should schedule a {maint} for {machine} no. {n} {when}",
                   "Consider moving {machine} no. {n} to {city}", "I'd suggest checking the {part} of {machine} no. {n}",
                   "It would be wise to book a {machine} for the {crop} fields early"],
    "episode": ["{person} says {machine} no. {n} is {fault} and needs a {maint} soon",
                "{machine} no. {n} was {fault} {when}, what should we do",
                "Can you check the {crop} harvest progress in {city}",
                "The {part} of {machine} no. {n} sounds wrong, {person} is looking at it"],
}
ZH_QUERIES = ["{kw}怎么样了", "关于{kw}的记录", "我之前说过{kw}吗", "{kw}的情况", "{kw}最近有什么问题", "查一下{kw}相关的事",
              "{kw}和{kw2}"]
EN_QUERIES = ["what about the {kw}", "anything on {kw}", "what did I say about {kw}", "{kw} status",
              "any problems with {kw} lately", "remind me about {kw}", "{kw} and {kw2}"]

KINDS = ["preference", "fact", "event", "context", "suggestion", "episode"]
KIND_WEIGHTS = [0.15, 0.25, 0.25, 0.1, 0.05, 0.2]
_KW_SLOTS = ("machine", "city", "crop", "pref", "brand", "part", "person", "maint")


@dataclass
class SynthMemory:
    user_id: str
    kind: str
    lang: str
    content: str
    keywords: list[str]
    memory_id: int = 0


class TextGen:
    """Deterministic (seeded) generator of memory texts and matching queries."""

    def __init__(self, seed: int, zh_share: float = 0.5):
        self.rng = random.Random(seed)
        self.zh_share = zh_share

    def memory(self, user_id: str, kind: str | None = None, lang: str | None = None) -> SynthMemory:
        r = self.rng
        kind = kind or r.choices(KINDS, KIND_WEIGHTS)[0]
        lang = lang or ("zh" if r.random() < self.zh_share else "en")
        vocab, templates = (ZH, ZH_TEMPLATES) if lang == "zh" else (EN, EN_TEMPLATES)
        template = r.choice(templates[kind])
        values = {slot: r.choice(words) for slot, words in vocab.items()}
        values.update(n=r.randint(1, 60), area=r.randint(5, 500) * 10, year=r.randint(2008, 2025))
        text = template.format(**values)
        keywords = [values[s] for s in _KW_SLOTS if "{" + s + "}" in template]
        return SynthMemory(user_id, kind, lang, text, keywords)

    def query_for(self, memory: SynthMemory, cross_lingual: bool = False) -> tuple[str, str]:
        """A query about one memory (its language; the other language when cross_lingual)."""
        r = self.rng
        kws = memory.keywords or [memory.content[:8]]
        kw = r.choice(kws)
        others = [k for k in kws if k != kw]
        kw2 = r.choice(others) if others else kw
        lang = memory.lang
        if cross_lingual:
            # Translate the slot word through the parallel vocab lists.
            src, dst = (ZH, EN) if lang == "zh" else (EN, ZH)
            for slot, words in src.items():
                if kw in words:
                    kw = dst[slot][words.index(kw)]
                    break
            kw2 = kw
            lang = "en" if lang == "zh" else "zh"
        templates = ZH_QUERIES if lang == "zh" else EN_QUERIES
        return r.choice(templates).format(kw=kw, kw2=kw2), lang


def spread_times(rng: random.Random, count: int, days: int = 365) -> list[datetime]:
    base = datetime.now(timezone.utc)
    return [base - timedelta(seconds=rng.randint(0, days * 86400)) for _ in range(count)]


# --------------------------------------------------------------------------- fast bulk loader

@dataclass
class LoadStats:
    n: int = 0
    gen_s: float = 0.0
    vectors_s: float = 0.0
    db_s: float = 0.0
    upsert_s: float = 0.0
    vectors: str = "encoded"
    samples: dict[str, list[SynthMemory]] = field(default_factory=dict)  # per user: a few memories (query seeds)
    counts_by_kind: dict[str, int] = field(default_factory=dict)

    @property
    def total_s(self) -> float:
        return self.gen_s + self.vectors_s + self.db_s + self.upsert_s

    def as_dict(self) -> dict:
        return {"n": self.n, "vectors": self.vectors, "total_s": round(self.total_s, 2),
                "generate_text_s": round(self.gen_s, 2), "vectors_s": round(self.vectors_s, 2),
                "db_insert_s": round(self.db_s, 2), "index_upsert_s": round(self.upsert_s, 2),
                "memories_per_s": round(self.n / self.total_s, 1) if self.total_s else None,
                "by_kind": dict(self.counts_by_kind)}


def user_ids(count: int) -> list[str]:
    width = max(4, len(str(count - 1)))
    return [f"u{i:0{width}d}" for i in range(count)]


def ensure_conversations(org, users: list[str]) -> dict[str, int]:
    """One conversation per user (memory sources point at it, so recall's readability check runs)."""
    from conversations.models import Conversation

    existing = dict(Conversation.objects.filter(org=org, owner_user__in=users, external_id__startswith="bench-")
                    .values_list("owner_user", "id"))
    missing = [u for u in users if u not in existing]
    for start in range(0, len(missing), 2000):
        Conversation.objects.bulk_create([Conversation(org=org, owner_user=u, external_id=f"bench-{u}", title="bench")
                                          for u in missing[start:start + 2000]])
    return dict(Conversation.objects.filter(org=org, owner_user__in=users, external_id__startswith="bench-")
                .values_list("owner_user", "id"))


class BulkLoader:
    """Adds memories in batches; call ``load(n)`` repeatedly to grow the corpus (scale benchmark)."""

    SAMPLES_PER_USER = 4
    # text -> stored vector under this loader's model, shared between builds (bench/store_cache.py
    # keeps one on disk): stores of other sizes or user counts reuse what earlier builds encoded.
    vector_cache: dict | None = None

    def __init__(self, org, users: list[str], *, seed: int, batch: int = 2000, sources: bool = True,
                 log=lambda msg: None):
        from memory.embeddings import get_embedder
        from memory.models import VectorCollection
        from memory.vector_index import get_vector_index
        from memory.vectors import active_collection

        self.org = org
        self.users = users
        self.batch = batch
        self.log = log
        self.gen = TextGen(seed)
        self.rng = random.Random(seed + 1)
        self.collection = active_collection()
        row = VectorCollection.objects.get(name=self.collection)
        self.model_id = row.model_id
        self.dim = row.dim
        self.embedder = get_embedder(row.model_name)
        self.index = get_vector_index()
        self.conversations = ensure_conversations(org, users) if sources else {}
        self.seen: set[tuple[str, str, str]] = set()  # (user, kind, hash prefix) of active non-episodes
        self.stats = LoadStats()

    def _unique(self, m: SynthMemory, digest_fn) -> str:
        """The content hash, regenerating or suffixing the text so (user, kind, active_hash) stays unique."""
        digest = digest_fn(m.content)
        if m.kind == "episode":
            return digest
        tries = 0
        while (m.user_id, m.kind, digest[:16]) in self.seen:
            tries += 1
            if tries < 4:
                fresh = self.gen.memory(m.user_id, m.kind, m.lang)
                m.content, m.keywords = fresh.content, fresh.keywords
            else:
                m.content = f"{m.content} ({tries})" if m.lang == "en" else f"{m.content}（{tries}）"
            digest = digest_fn(m.content)
        self.seen.add((m.user_id, m.kind, digest[:16]))
        return digest

    def load(self, n: int, *, vectors: str = "encode") -> LoadStats:
        """Add n memories. vectors: "encode" (the embedder) or "random" (normalised Gaussian vectors)."""
        import time

        import numpy as np
        from django.db import transaction

        from common.text import content_hash
        from memory.models import Memory, MemoryEmbedding, MemorySource, MemoryVersion
        from memory.projections import memory_payload
        from memory.projections.terms import terms_sync
        from memory.vector_index import VectorPoint
        from memory.vectors import to_bytes

        if vectors == "random":
            self.stats.vectors = "random" if self.stats.n == 0 else "mixed (encoded, then random)"
        np_rng = np.random.default_rng(self.rng.randint(0, 2**31))
        done = 0
        last_log = time.perf_counter()
        while done < n:
            size = min(self.batch, n - done)
            t = time.perf_counter()
            items = [self.gen.memory(self.rng.choice(self.users)) for _ in range(size)]
            digests = [self._unique(m, content_hash) for m in items]
            when = spread_times(self.rng, size)
            self.stats.gen_s += time.perf_counter() - t

            t = time.perf_counter()
            if vectors == "random":
                vecs = np_rng.standard_normal((size, self.dim), dtype=np.float32)
                vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            else:
                # Templated texts repeat: each distinct text is encoded once.
                distinct = list(dict.fromkeys(m.content for m in items))
                encoded = self._encode(distinct)
                row_of = {text: i for i, text in enumerate(distinct)}
                vecs = encoded[[row_of[m.content] for m in items]]
            self.stats.vectors_s += time.perf_counter() - t

            t = time.perf_counter()
            with transaction.atomic():
                rows = []
                for m, digest, at in zip(items, digests, when):
                    episode_or_event = m.kind in ("event", "episode")
                    rows.append(Memory(
                        org=self.org, user_id=m.user_id, scope="user", kind=m.kind,
                        assertion="model_suggestion" if m.kind == "suggestion" else "user_stated",
                        status="active", content=m.content, content_hash=digest,
                        active_hash=None if m.kind == "episode" else digest,
                        importance=0.3 if m.kind == "episode" else round(self.rng.uniform(0.3, 0.9), 2),
                        occurred_at=at if episode_or_event else None, created_at=at, created_by="extractor",
                        version=1, projected_version=1,
                        conversation_id=self.conversations.get(m.user_id) if m.kind == "episode" else None))
                rows = Memory.objects.bulk_create(rows)
                versions = MemoryVersion.objects.bulk_create([
                    MemoryVersion(memory=row, n=1, content=row.content, content_hash=row.content_hash,
                                  created_by="extractor", actor="bench", reason="ADD") for row in rows])
                if self.conversations:
                    MemorySource.objects.bulk_create([
                        MemorySource(memory=row, version=v, conversation_id=self.conversations[row.user_id])
                        for row, v in zip(rows, versions)])
                MemoryEmbedding.objects.bulk_create([
                    MemoryEmbedding(memory=row, model_id=self.model_id, version=1, vector=to_bytes(vec))
                    for row, vec in zip(rows, vecs)])
            self.stats.db_s += time.perf_counter() - t

            t = time.perf_counter()
            points = [VectorPoint(point_id=row.id, vector=vec, payload=memory_payload(row, [], self.model_id))
                      for row, vec in zip(rows, vecs)]
            for start in range(0, len(points), 500):
                self.index.upsert(points[start:start + 500], collection=self.collection)
            terms_sync(rows)  # the keyword terms the projection stores beside the vectors
            self.stats.upsert_s += time.perf_counter() - t

            for m, row in zip(items, rows):
                m.memory_id = row.id
                self.stats.counts_by_kind[m.kind] = self.stats.counts_by_kind.get(m.kind, 0) + 1
                bucket = self.stats.samples.setdefault(m.user_id, [])
                if len(bucket) < self.SAMPLES_PER_USER:
                    bucket.append(m)
                elif self.rng.random() < 0.1:
                    bucket[self.rng.randrange(self.SAMPLES_PER_USER)] = m
            done += size
            self.stats.n += size
            if time.perf_counter() - last_log > 10:
                self.log(f"  loaded {self.stats.n:,} memories")
                last_log = time.perf_counter()
        self._bump_generations()
        return self.stats

    def _encode(self, texts: list[str]):
        """The stored (unit) vectors of texts. A composite's two models run in two threads: both
        release the GIL in their kernels, so on two cores the build takes about the slower model's
        time instead of the sum (the vectors are the composite's own: [u, m] / sqrt(2), normalised)."""
        import numpy as np

        cache = self.vector_cache
        if cache is not None:
            missing = [t for t in texts if t not in cache]
            if missing:
                for text, vector in zip(missing, self._encode_models(missing)):
                    cache[text] = vector
            return np.stack([cache[t] for t in texts]) if texts else np.zeros((0, self.dim), dtype=np.float32)
        return self._encode_models(texts)

    def _encode_models(self, texts: list[str]):
        from concurrent.futures import ThreadPoolExecutor

        import numpy as np

        from memory.embeddings import CompositeEmbedder

        if not isinstance(self.embedder, CompositeEmbedder):
            return self.embedder.encode(texts)
        first, second = self.embedder.parts
        with ThreadPoolExecutor(2) as pool:
            a, b = pool.submit(first.encode, texts), pool.submit(second.encode, texts)
            vectors = (np.hstack([a.result(), b.result()]) / np.sqrt(2.0)).astype(np.float32)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return vectors

    def _bump_generations(self) -> None:
        """Rows were written behind the write path's back: mark every user's derived caches stale."""
        from memory.cache import user_generation_bump

        for u in self.users:
            user_generation_bump(self.org.id, u)


# --------------------------------------------------------------------------- conversations

_TOOLS = ["get_asset_status", "list_work_orders", "search_maintenance_log", "get_weather_window", "query_parts_stock"]


def _tool_result(rng: random.Random, lang: str, max_chars: int) -> str:
    """A tool result of random size: a JSON array of records or a plain log, 50..max_chars characters."""
    import json

    vocab = ZH if lang == "zh" else EN
    target = int(min(max_chars, max(50, rng.lognormvariate(7.0, 1.2))))  # median ~1.1k chars, long tail
    if rng.random() < 0.6:
        records, size = [], 2
        while size < target:
            rec = {"asset": f"{rng.choice(vocab['machine'])}-{rng.randint(1, 60)}", "status": rng.choice(vocab['fault']),
                   "hours": rng.randint(10, 9000), "site": rng.choice(vocab["city"]),
                   "last_service": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                   "note": rng.choice(vocab["maint"])}
            records.append(rec)
            size += len(json.dumps(rec, ensure_ascii=False)) + 1
        return json.dumps(records, ensure_ascii=False)
    lines, size = [], 0
    while size < target:
        line = (f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} {rng.choice(vocab['machine'])} "
                f"{rng.randint(1, 60)} {rng.choice(vocab['fault'])} {rng.choice(vocab['person'])} {rng.choice(vocab['maint'])}")
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def conversation_turns(seed: int, n_messages: int, *, tool_share: float = 0.4, max_tool_chars: int = 12_000,
                       zh_share: float = 0.5) -> list[dict]:
    """OpenAI-shaped messages (user / assistant / assistant tool_calls / tool results) for messages_append."""
    rng = random.Random(seed)
    gen = TextGen(seed + 1, zh_share=zh_share)
    gen.rng = rng
    out: list[dict] = []
    call_no = 0
    while len(out) < n_messages:
        lang = "zh" if rng.random() < zh_share else "en"
        stated = gen.memory("x", rng.choice(["preference", "fact", "event", "context", "episode"]), lang)
        if rng.random() < 0.3:  # a question instead of a statement
            user_text = gen.query_for(stated)[0] + ("？" if lang == "zh" else "?")
        else:
            user_text = stated.content + ("。" if lang == "zh" else ".")
        out.append({"role": "user", "content": user_text})
        if rng.random() < tool_share and len(out) + 3 <= n_messages:
            calls = []
            for _ in range(rng.choice([1, 1, 1, 2])):
                call_no += 1
                calls.append({"id": f"call_{call_no}", "name": rng.choice(_TOOLS),
                              "arguments": {"asset": rng.randint(1, 60), "site": rng.choice((ZH if lang == "zh" else EN)["city"])}})
            out.append({"role": "assistant", "content": "", "tool_calls": calls})
            for call in calls:
                out.append({"role": "tool", "tool_call_id": call["id"], "content": _tool_result(rng, lang, max_tool_chars)})
        reply = gen.memory("x", "suggestion", lang).content
        out.append({"role": "assistant", "content": reply + ("。" if lang == "zh" else ".")})
    out = out[:n_messages]
    while out and (out[-1]["role"] == "tool" or out[-1].get("tool_calls")):  # never end inside a tool group
        out.pop()
    return out
