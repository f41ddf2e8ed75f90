"""Context assembly (DESIGN §7): the token-budgeted input for the agent's next turn.

Messages, in this order ("lost in the middle" puts rules and evidence first and the live turn last):
system → evidence [n] → task state → long-term memories → past episodes → summary → recent messages
→ new message. Who gets room when the budget is short is a separate order, highest first:
system prompt and new message (never cut silently) → evidence → task state → standing preferences →
recent messages → other memories → episodes → summary → older history (memory/context/placement.py).
Every section is counted with tiktoken; the total budget is a hard cap.
"""
import logging
import time

from django.conf import settings

from conversations.context_view import conversation_context
from memory.cache import standing_memories
from memory.choices import MemoryKind, MemoryScope
from memory.context.placement import Candidates, place, shares_of, shrink, window_ids_beside_memory
from memory.context.render import render
from memory.context.request import ContextRequest, ContextResult, priced_inputs
from memory.context.sections import Lines, memory_sections, task_lines
from memory.recall.pipeline import recall
from memory.recall.query import RecallItem, RecallQuery
from memory.recall.query_vectors import start_query_vectors
from memory.vectors import active_embedder

logger = logging.getLogger(__name__)


def assemble_context(req: ContextRequest) -> ContextResult:
    timings: dict[str, float] = {}
    clock = _Clock(timings)
    budget = min(req.budget or settings.CONTEXT_DEFAULT_BUDGET, settings.MAX_CONTEXT_BUDGET)
    # The message is embedded on the encoder threads while everything up to recall is read and priced;
    # recall takes the vectors when it needs them. A request refused below leaves its encode unused.
    pending = None if req.recent_only or not req.message.strip() else start_query_vectors(req.message, active_embedder())
    inputs = priced_inputs(req, budget)  # raises for a system prompt over the budget
    room = budget - inputs.tokens
    clock.lap("prepare")
    conversation = conversation_context(conversation=req.conversation, at=req.at, query=req.message,
                                        tool_result_max_tokens=settings.CONTEXT_TOOL_RESULT_MAX_TOKENS, room=room)
    clock.lap("window")
    shares = shares_of(req.section_budgets, room)
    candidates = Candidates(inputs.evidence, task_lines(conversation.task_states), Lines(), Lines(), Lines())
    in_window = window_ids_beside_memory(candidates, shares, room, conversation.newest, recent_only=req.recent_only)
    clock.lap("window")
    items, degraded = _recall_items(req, in_window, pending)
    clock.lap("recall")
    candidates.preferences, candidates.memories, candidates.episodes = memory_sections(items)
    placement = place(conversation, candidates, shares, room)
    clock.lap("placement")
    sections, out, total = render(candidates, placement, inputs)
    while total > budget and shrink(placement):  # hard cap
        sections, out, total = render(candidates, placement, inputs)
    clock.lap("render")
    clock.stop()
    return ContextResult(sections=sections, messages=out, total_tokens=total, budget=budget, recall_degraded=degraded,
                         message_truncated=inputs.truncated, timings_ms=timings)


def _recall_items(req: ContextRequest, exclude_message_ids: set[int],
                  pending_vectors=None) -> tuple[list[RecallItem], bool]:
    if pending_vectors is None:
        return [], False
    # Standing preferences apply to every turn, relevant-looking or not: they are always
    # candidates (the Redis hash says which exist), and still pass the same back-check.
    preferences = {i for i, m in standing_memories(req.org.id, req.user_id).items()
                   if m["kind"] == MemoryKind.PREFERENCE and m["scope"] == MemoryScope.USER}
    k = (req.k or settings.CONTEXT_RECALL_K) + min(len(preferences), settings.CONTEXT_MAX_PREFERENCES)
    result = recall(RecallQuery(org=req.org, user_id=req.user_id, query=req.message, k=k, at=req.at,
                                conversation_id=req.conversation.id, exclude_message_ids=exclude_message_ids,
                                include_ids=set(sorted(preferences)[-settings.CONTEXT_MAX_PREFERENCES:]),
                                pending_vectors=pending_vectors))
    return result.items, result.degraded


class _Clock:
    """Wall time per stage into ``timings_ms``: `bench.context` reports where a call's time goes."""

    def __init__(self, timings: dict[str, float]) -> None:
        self.timings = timings
        self.started = self.last = time.perf_counter()

    def lap(self, stage: str) -> None:
        """Time since the last lap, added to `stage` (the window is read, then placed beside memory)."""
        now = time.perf_counter()
        self.timings[stage] = self.timings.get(stage, 0.0) + (now - self.last) * 1000
        self.last = now

    def stop(self) -> None:
        self.timings["total"] = (time.perf_counter() - self.started) * 1000
