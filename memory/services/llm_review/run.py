"""One run of the LLM reviewer (tier 3 of the write path's decisions, DESIGN §5; D28).

Collects up to LLM_REVIEW_MAX_PER_RUN unsettled items (open possible conflicts first, then memories
in the gate's uncertain band), groups them by (org, user) into batches of LLM_REVIEW_BATCH_SIZE, sends
each batch as one chat-completions request, validates the answer strictly and applies each decision
through the services (memory/services/llm_review/apply.py). It is a maintenance job: the scheduler
thread (embedded) or beat → worker runs it, never a request.

Failure modes, and what each leaves for the operator:
- no LLM configured (or LLM_REVIEW_ENABLED off): nothing is read, nothing is sent, nothing is queued;
- the endpoint is down or slow (timeout, transport error, 5xx, 408/429): the run stops at that batch,
  nothing is marked, the next run tries again;
- an answer that is not valid, or an item it leaves out: one attempt counted on each such item; after
  LLM_REVIEW_MAX_ATTEMPTS the item is given up ("no_answer") and stays with the operator;
- `unsure`: recorded, and the item stays with the operator.
Logs carry ids, counts, reasons and status codes, never memory or model text.
"""
from __future__ import annotations

import logging
from collections import Counter

from django.conf import settings
from django.core.cache import cache

from memory.enqueue import llm_review_configured
from memory.services.llm_review.answers import InvalidAnswer, parse_answer
from memory.services.llm_review.apply import conflict_apply, gate_apply, item_unanswered
from memory.services.llm_review.client import ReviewClient, ReviewRejected, ReviewUnavailable
from memory.services.llm_review.items import Batch, PairItem, batches, pending_conflicts, pending_gate

__all__ = ["llm_review_configured", "llm_review_run"]

logger = logging.getLogger(__name__)

RUN_LOCK_KEY = "llm_review:running"
# A standing statement is a sentence or two; a longer one (an API write) is judged on its head, which
# keeps one item from crowding out the rest of its batch.
MAX_CONTENT_CHARS = 1000


def _date(memory) -> str:
    return (memory.occurred_at or memory.created_at).isoformat()


def _side(memory) -> dict:
    return {"kind": memory.kind, "content": memory.content[:MAX_CONTENT_CHARS], "date": _date(memory)}


def batch_payload(batch: Batch) -> tuple[dict, dict[int, object]]:
    """The request's user message, and short id → item. Ids are 1..n, never database ids: a model
    copies long ids wrongly, and a wrong id would retire an unrelated memory."""
    pairs, statements, by_short = [], [], {}
    for short_id, item in enumerate(batch.items, start=1):
        by_short[short_id] = item
        if isinstance(item, PairItem):
            pairs.append({"id": short_id, "older": _side(item.older), "newer": _side(item.newer)})
        else:
            memory = item.memory
            statements.append({"id": short_id, **_side(memory), "scope": memory.scope})
    return {"pairs": pairs, "statements": statements}, by_short


def _ids(batch: Batch) -> str:
    return ",".join(f"{'c' if isinstance(i, PairItem) else 'm'}{i.row.id}" for i in batch.items)


def _review_batch(client: ReviewClient, batch: Batch, counts: Counter) -> None:
    payload, by_short = batch_payload(batch)
    pair_ids = {s for s, item in by_short.items() if isinstance(item, PairItem)}
    try:
        decided = parse_answer(client.complete(payload), pair_ids=pair_ids, statement_ids=set(by_short) - pair_ids)
    except ReviewRejected as exc:
        reason, decided = exc.reason, {}
        logger.warning("llm review batch rejected: reason=%s details=%s org=%s items=%s", exc.reason, exc.details,
                       batch.org_id, _ids(batch))
    except InvalidAnswer as exc:
        reason, decided = f"invalid:{exc.reason}", {}
        logger.warning("llm review answer invalid: reason=%s org=%s items=%s", exc.reason, batch.org_id, _ids(batch))
    else:
        reason = "missing"
    for short_id, item in by_short.items():
        answer = decided.get(short_id)
        if answer is None:
            outcome = item_unanswered(item, reason, actor=client.actor)
        elif isinstance(item, PairItem):
            outcome = conflict_apply(item, answer["decision"], actor=client.actor)
        else:
            outcome = gate_apply(item, answer["decision"], answer["kind"], actor=client.actor)
        counts[f"{'pair' if isinstance(item, PairItem) else 'gate'}_{outcome}"] += 1
    counts["batches"] += 1


def llm_review_run(*, client: ReviewClient | None = None) -> dict:
    """Review what is pending; returns counts (for logs and the maintenance record)."""
    if not llm_review_configured():
        return {"skipped": "no_llm"}
    try:
        # One run at a time (beat and an operator's command may overlap): a second run would send
        # the same items again. A cache that is down (None from django-redis, which ignores its errors,
        # or an exception) does not stop the run: decisions are idempotent anyway (rows re-read).
        if cache.add(RUN_LOCK_KEY, 1, timeout=max(60, int(settings.LLM_REVIEW_EVERY_MINUTES) * 60)) is False:
            return {"skipped": "running"}
    except Exception as exc:
        logger.warning("llm review run lock unavailable (%s); running anyway", type(exc).__name__)
    try:
        return _run(client or ReviewClient.from_settings())
    finally:
        try:
            cache.delete(RUN_LOCK_KEY)
        except Exception:
            pass


def _run(client: ReviewClient) -> dict:
    budget = max(0, int(settings.LLM_REVIEW_MAX_PER_RUN))
    items: list = pending_conflicts(budget)
    items += pending_gate(budget - len(items))
    counts: Counter = Counter(items=len(items))
    for batch in batches(items, int(settings.LLM_REVIEW_BATCH_SIZE)):
        try:
            _review_batch(client, batch, counts)
        except ReviewUnavailable as exc:
            # Down or slow: stop here, mark nothing; everything stays as it is for the next run.
            counts["unavailable"] += 1
            logger.warning("llm review stopped: reason=%s details=%s org=%s items=%s", exc.reason, exc.details,
                           batch.org_id, _ids(batch))
            break
    result = dict(counts)
    if items:
        logger.info("llm review run %s", result)
    return result
