"""Rolling summary of the part of a conversation that no longer fits the window.

A summary row covers messages 1..covers_until_seq. It is rolled forward in chunks (previous summary
+ the messages after it), so consecutive turns reuse the same row instead of summarising again.
LLM summariser when configured (conversations/llm_summary.py), extractive otherwise or when the LLM fails;
should the extractive one fail too, hard truncation.
"""
import logging

from django.conf import settings

from common.plain_reads import plain_instances, plain_rows
from conversations.llm_summary import SummaryUnavailable, produced_by, summarize_llm
from conversations.models import Conversation, HistorySummary, Message
from conversations.services import summary_store
from conversations.summarize import summarize_extractive
from conversations.tokens import count_tokens, truncate_to_tokens
from conversations.window import WindowMessage

logger = logging.getLogger(__name__)


def window_message(message: Message) -> WindowMessage:
    return WindowMessage(id=message.id, role=message.role, content=message.content, tool_call_id=message.tool_call_id,
                         tool_calls=message.tool_calls, occurred_at=message.occurred_at, seq=message.seq)


def _summarize(messages: list[WindowMessage], budget: int, previous: str | None) -> tuple[str, str]:
    if settings.LLM_BASE_URL:
        try:
            return summarize_llm(messages, budget_tokens=budget, previous_summary=previous), produced_by()
        except SummaryUnavailable as exc:  # the summary is best effort; never fail the context call
            logger.warning("llm summary unavailable: reason=%s messages=%d budget=%d details=%s; using extractive",
                           exc.reason, len(messages), budget, exc.details)
    try:
        return summarize_extractive(messages, budget_tokens=budget, previous_summary=previous), "extractive"
    except Exception as exc:  # a bug in the extractive summariser must not fail the context call either
        logger.warning("extractive summary failed (%s); truncating", type(exc).__name__)
        text = "\n".join(f"{m.role}: {m.content}" for m in messages if m.content)
        return truncate_to_tokens(((previous or "") + "\n" + text).strip(), budget), "truncation"


def _reusable(conversation_id: int, low: int, high: int, budget: int) -> HistorySummary | None:
    """The summary covering up to a seq in [low, high] within ``budget``, the shortest reach first.
    Every context call past the window asks this: plain reads of the conversation's few summary rows
    (their numbers, then the one chosen) instead of compiling an ORM query each time."""
    rows = [(until, -row_id, row_id) for row_id, until, tokens in
            plain_rows(HistorySummary, ("id", "covers_until_seq", "token_count"), [conversation_id], key="conversation")
            if low <= until <= high and tokens <= budget]
    if not rows:
        return None
    return next(iter(plain_instances(HistorySummary, [min(rows)[2]])), None)


def summary_covering(*, conversation: Conversation, last_dropped_seq: int, budget: int,
                     before_seq: int | None = None) -> tuple[HistorySummary | None, bool]:
    """A summary covering messages up to last_dropped_seq or a little further (but never reaching
    before_seq: those messages stay verbatim), reused when one exists. Returns (summary, reused)."""
    if last_dropped_seq <= 0 or budget <= 0:
        return None, False
    ahead = last_dropped_seq + settings.SUMMARY_ROLL_CHUNK
    if before_seq is not None:
        ahead = max(last_dropped_seq, min(ahead, before_seq - 1))
    best = _reusable(conversation.id, last_dropped_seq, ahead, budget)
    if best is not None:
        return best, True
    previous = (HistorySummary.objects.filter(conversation=conversation, covers_until_seq__lt=last_dropped_seq,
                                              token_count__lte=budget)
                .order_by("-covers_until_seq", "-id").first())
    start = previous.covers_until_seq if previous else 0
    # Roll a chunk past what is needed now, so the next turns can reuse this row.
    until = last_dropped_seq + settings.SUMMARY_ROLL_CHUNK // 2
    if before_seq is not None:
        until = max(last_dropped_seq, min(until, before_seq - 1))
    rows = list(Message.objects.filter(conversation=conversation, seq__gt=start, seq__lte=until, redacted=False,
                                       do_not_remember=False).order_by("seq"))
    text, produced_by = _summarize([window_message(m) for m in rows], budget, previous.text if previous else None)
    text = truncate_to_tokens(text, budget)
    summary = summary_store(conversation=conversation, covers_until_seq=until, text=text,
                            token_count=count_tokens(text), produced_by=produced_by)
    logger.info("summary stored conversation=%s until=%s by=%s", conversation.id, until, produced_by)
    return summary, False
