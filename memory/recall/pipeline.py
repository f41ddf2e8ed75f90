"""The read path (DESIGN §6): scope → candidates (vector + keyword, fused) → MySQL back-check →
dedup → rank → top-k. One `RecallRun` holds a recall's state; its methods are the stages, and every
stage can report what it kept and dropped (explain / console)."""
import dataclasses
import time

from django.conf import settings

from memory.choices import SUBJECT_KINDS as _CONFLICT_KINDS  # the kinds a possible conflict pairs
from memory.recall import access_stats
from memory.recall.back_check import back_check, memories_of
from memory.recall.candidates import minmax, read_vectors, semantic_candidates, semantic_scores
from memory.recall.conflict_marks import conflicts_apply, open_conflicts
from memory.recall.current_state import history_apply, history_window
from memory.recall.entity_focus import entity_focus
from memory.recall.lineage import Lineage, episode_lineage
from memory.recall.query import RecallItem, RecallQuery, RecallResult, keyword_text
from memory.recall.query_vectors import start_query_vectors
from memory.recall.ranking import choose_distinct, confident_seed, keyword_relevance, keyword_trust, rank, served_parts
from memory.recall.rerank import enabled as second_look_enabled
from memory.recall.rerank import neighbour_candidates, second_look
from memory.recall.snapshot import Candidate
from memory.recall.snapshot_cache import user_snapshot
from memory.vectors import active_embedder


def recall(q: RecallQuery) -> RecallResult:
    if not q.query.strip():
        return RecallResult(items=[])
    # The query is embedded on the encoder threads while this thread reads the user's snapshot and
    # scores keywords: on two cores the embedding and the reads overlap (memory/recall/query_vectors.py).
    run = RecallRun(q)
    run.scope()  # 1. the user's snapshot, and what the query names in the registry
    run.keyword_candidates()  # 2-3. keyword candidates, back-checked while the encoders run
    run.vector_candidates()  # 2-3. vector hits and their turn neighbours, back-checked
    run.follow_lineage()  # 3. episodes follow what their message became
    ranked = run.rerank(run.score())  # 5. rank; a second look around a confident seed
    chosen = run.choose(ranked)  # 4. dedup, chosen past k for current and history
    run.serve(chosen)  # rows read again; current and history; open conflicts
    run.explain(ranked)
    access_stats.record_access([item.memory.id for item in run.result.items])  # 6. off the read path
    return run.result


class RecallRun:
    """One recall's state. `kept` (the back-checked candidates), `sources`, `links` and `lineage` grow
    as later stages bring candidates in, and every candidate comes in through `admit` or the first
    back-checks: the same back-check and episode lineage whichever stage found it."""

    def __init__(self, q: RecallQuery) -> None:
        self.started = time.perf_counter()
        self.q = q
        self.result = RecallResult(items=[])
        self.k = max(1, min(q.k, settings.MAX_RECALL_K))
        self.limit = max(settings.RECALL_CANDIDATES, self.k * 3)
        self.embedder = active_embedder()
        self.pending = q.pending_vectors or start_query_vectors(q.query, self.embedder)
        self.kept: dict[int, Candidate] = {}
        self.sources: dict[int, list[dict]] = {}
        self.links: dict[int, list[int]] = {}
        self.lineage: dict[int, Lineage] = {}
        self.neighbours: dict[int, int] = {}
        self._semantic_of: dict[frozenset, dict[int, float]] = {}  # the second look scores the same candidates again
        self._static: dict[int, dict] = {}  # each candidate's parts that no round changes

    def _lap(self, name: str, since: float) -> None:
        self.result.timings_ms[name] = (time.perf_counter() - since) * 1000

    def scope(self) -> None:
        self.t0 = time.perf_counter()
        self.snapshot = user_snapshot(self.q.org.id, self.q.user_id)
        q = self.q
        self.focus = entity_focus(org=q.org, user_id=q.user_id, query=q.query, conversation_id=q.conversation_id)
        if self.focus is not None and self.focus.memory_ids:
            # Linked memories are candidates whatever their wording, and the relevance floor spares them.
            self.q = dataclasses.replace(q, include_ids=set(q.include_ids) | set(self.focus.memory_ids))

    def keyword_candidates(self) -> None:
        keyword_query = keyword_text(self.q.query)
        self.keyword_raw = self.snapshot.keyword_scores(keyword_query)
        self.keyword_mass = self.snapshot.keyword_mass(keyword_query) if self.keyword_raw else 0.0
        self.keyword_top = dict(sorted(self.keyword_raw.items(), key=lambda pair: -pair[1])[:self.limit])
        self._lap("keyword", self.t0)
        # Still while the encoders run: back-check the keyword candidates and read their vectors.
        self.early = set(self.keyword_top) | set(self.q.include_ids)
        self.kept, self.sources, self.links = back_check(self.q, self.early, self.result, self.snapshot)
        read_vectors(self.kept, self.embedder.model_id)
        self._lap("overlap", self.t0)

    def vector_candidates(self) -> None:
        self.vectors = self.pending()
        self._lap("embed", self.started)
        self.vector_hits = semantic_candidates(self.q, self.vectors, self.limit, self.result)
        if self.q.explain:
            self.result.stages.append({"stage": "candidates", "semantic": self.vector_hits, "keyword": self.keyword_top})
        self.t0 = time.perf_counter()
        # The turns next to the best candidates' turns: one statement (memory/recall/rerank.py).
        self.neighbours = neighbour_candidates(self.q, self.vector_hits, self.keyword_top, self.snapshot)
        self._back_check_into(self.kept, (set(self.vector_hits) | set(self.neighbours)) - self.early)

    def _back_check_into(self, pool: dict[int, Candidate], ids: set[int]) -> None:
        more, more_sources, more_links = back_check(self.q, ids, self.result, self.snapshot)
        pool.update(more)
        self.sources.update(more_sources)
        self.links.update(more_links)

    def follow_lineage(self) -> None:
        self.lineage = self._lineage_of(self.kept)
        read_vectors(self.kept, self.embedder.model_id)

    def _lineage_of(self, pool: dict[int, Candidate]) -> dict[int, Lineage]:
        """Episodes follow what their message became (memory/recall/lineage.py): drop from `pool` those
        restating forgotten content or another conversation's task instruction, and bring into it the
        current memories they point at, back-checked like any candidate."""
        q = self.q
        episodes = {memory_id for memory_id, memory in pool.items() if memory.kind == "episode"}
        lineage = episode_lineage(q.org.id, episodes, self.sources)
        dropped = {}
        for episode_id, line in lineage.items():
            if line.state == "forgotten":
                dropped[episode_id] = "restates a forgotten memory"
            elif line.state == "task" and line.conversation_id != q.conversation_id:
                dropped[episode_id] = "task-scoped instruction of another conversation"
            elif line.state == "none" and not self.links.get(episode_id) and pool[episode_id].small_talk:
                dropped[episode_id] = "small talk"
        for episode_id in dropped:
            pool.pop(episode_id)
            lineage.pop(episode_id)
        wanted = {ref for line in lineage.values() for ref in line.refs} - set(pool)
        if wanted:
            self._back_check_into(pool, wanted)
        if q.explain:
            self.result.stages.append({"stage": "episode_lineage", "dropped": dropped, "states": {
                e: {"state": line.state, "refs": sorted(line.refs)} for e, line in lineage.items()}})
        return lineage

    def admit(self, ids: set[int]) -> None:
        """Later candidates (the second look's): back-checked and lineage-checked like the first."""
        more: dict[int, Candidate] = {}
        self._back_check_into(more, ids - set(self.kept))
        self.lineage.update(self._lineage_of(more))
        read_vectors(more, self.embedder.model_id)
        self.kept.update(more)

    def score(self, bonus: dict[int, float] | None = None) -> list[tuple[int, float, dict]]:
        """Every candidate's score, best first (memory/recall/ranking.py); `bonus`: the second look's."""
        key = frozenset(self.kept)
        raw_semantic = self._semantic_of.get(key)
        if raw_semantic is None:
            raw_semantic = semantic_scores(self.q, self.vectors, self.kept)
            for memory_id in self.kept:  # no stored vector (e.g. mid re-embed): fall back to the index's score
                if memory_id not in raw_semantic and memory_id in self.vector_hits:
                    raw_semantic[memory_id] = self.vector_hits[memory_id]
            self._semantic_of.clear()
            self._semantic_of[key] = raw_semantic
        keyword = keyword_relevance(self.keyword_raw, self.kept, self.keyword_mass)
        semantic = minmax(raw_semantic) if settings.RECALL_NORMALIZE_SEMANTIC else raw_semantic
        share = keyword_trust(raw_semantic, keyword, self._same_evidence)
        return rank(self.q, self.kept, semantic=semantic, keyword=keyword, links=self.links, raw_semantic=raw_semantic,
                    lineage=self.lineage, bonus=bonus, static=self._static, focus=self.focus, keyword_share=share)

    def _same_evidence(self, a: int, b: int) -> bool:
        """One text, or one source turn (a memory and the episode of the turn it came from)."""
        if self.kept[a].content_hash == self.kept[b].content_hash:
            return True
        turns = lambda m: {s["message_id"] for s in self.sources.get(m, ()) if s["message_id"]}  # noqa: E731
        return bool(turns(a) & turns(b))

    def rerank(self, ranked: list[tuple[int, float, dict]]) -> list[tuple[int, float, dict]]:
        if not second_look_enabled(self.q.query) or not confident_seed(
                self._semantic_of.get(frozenset(self.kept), {}), settings.RECALL_SECOND_LOOK["seeds"],
                len(self.snapshot.ids), self.limit):
            return ranked
        return second_look(self, ranked)

    def choose(self, ranked: list[tuple[int, float, dict]]) -> list[tuple[int, float, dict]]:
        # Current and history are decided among the top of the ranked list, so it is chosen past k first.
        chosen, self.dedup_dropped = choose_distinct(ranked, self.kept, self.sources, self.lineage,
                                                     history_window(self.k))
        return chosen

    def serve(self, chosen: list[tuple[int, float, dict]]) -> None:
        q, result = self.q, self.result
        full = memories_of([memory_id for memory_id, _, _ in chosen])
        items = [RecallItem(memory=full[memory_id], score=round(score, 4), parts=served_parts(parts),
                            sources=self.sources[memory_id], entity_ids=self.links.get(memory_id, []))
                 for memory_id, score, parts in chosen if memory_id in full]  # gone since the back-check: left out
        # Open possible conflicts (the write path's judge: both kept, the newer first) among the window are
        # evidence for current and history too: one read serves both.
        t1 = time.perf_counter()
        pairs = open_conflicts(org=q.org, user_id=q.user_id,
                               ids=[item.memory.id for item in items if item.memory.kind in _CONFLICT_KINDS])
        items = history_apply(items, self.kept, self.lineage, self.embedder, k=self.k, explain=q.explain,
                              stages=result.stages,
                              flagged={(older, newer) for _, older, newer, _, vetoed in pairs if not vetoed},
                              judged={(older, newer) for _, older, newer, by_judge, _ in pairs if by_judge})
        self._lap("current_state", t1)  # part of back_check_rank
        result.items = conflicts_apply(items, org=q.org, user_id=q.user_id, explain=q.explain, pairs=pairs)
        self._lap("back_check_rank", self.t0)

    def explain(self, ranked: list[tuple[int, float, dict]]) -> None:
        if self.q.explain:
            self._merge_back_checks()
            self.result.stages.append({"stage": "dedup", "dropped": self.dedup_dropped})
            self.result.stages.append({"stage": "rank", "order": [(m, round(s, 4)) for m, s, _ in ranked]})
        self._lap("total", self.started)

    def _merge_back_checks(self) -> None:
        """The back-check runs in rounds (keyword candidates while the query is embedded, then the vector
        hits and neighbours, then what the episode lineage and the second look bring in): one stage for
        the explainer, right after the candidates."""
        stages = self.result.stages
        rounds = [stage for stage in stages if stage["stage"] == "back_check"]
        merged = {"stage": "back_check", "kept": sorted({i for r in rounds for i in r["kept"]}),
                  "dropped": {i: why for r in rounds for i, why in r["dropped"].items()}}
        stages[:] = [stage for stage in stages if stage["stage"] != "back_check"]
        at = next((i + 1 for i, stage in enumerate(stages) if stage["stage"] == "candidates"), 0)
        stages.insert(at, merged)
