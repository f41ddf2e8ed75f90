"""The rolling summary written by an LLM (any OpenAI-compatible chat-completions endpoint).

Used by conversations/summaries.py when `LLM_BASE_URL` is set. It runs inside a context request, so it has
its own short timeout (`SUMMARY_LLM_TIMEOUT`) and is never retried. Anything but a well-formed answer
(timeout, transport error, non-200, an envelope without content, as common/chat_completion.py reads
them; content that is not the JSON object the prompt asks for, an empty summary) raises
`SummaryUnavailable`, and the caller falls back to the extractive summary. Logs carry reasons, sizes
and status codes, never conversation text.
"""
from __future__ import annotations

import json
import logging
from functools import lru_cache
from pathlib import Path

import httpx
from django.conf import settings

from common.chat_completion import completion_content
from conversations.tokens import count_tokens, truncate_to_tokens
from conversations.window import WindowMessage

__all__ = ["PROMPT_VERSION", "SummaryUnavailable", "produced_by", "summarize_llm"]

logger = logging.getLogger(__name__)

PROMPT_VERSION = "summary_v1"
PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
# The model needs what was said, not whole tool outputs or pasted documents: each message is cut.
MAX_MESSAGE_CHARS = 2000
MAX_TOOL_CHARS = 300


class SummaryUnavailable(Exception):
    def __init__(self, reason: str, **details) -> None:
        super().__init__(reason)
        self.reason = reason
        self.details = details


@lru_cache(maxsize=4)
def _prompt(version: str = PROMPT_VERSION) -> str:
    return (PROMPTS_DIR / f"{version}.md").read_text(encoding="utf-8")


def produced_by() -> str:
    return f"llm:{settings.LLM_MODEL}:{PROMPT_VERSION}"[:100]  # HistorySummary.produced_by is 100 characters


def _payload(messages: list[WindowMessage], budget_tokens: int, previous_summary: str | None) -> str:
    items = []
    for m in messages:
        limit = MAX_TOOL_CHARS if m.role == "tool" else MAX_MESSAGE_CHARS
        item = {"role": m.role, "content": (m.content or "")[:limit]}
        if m.tool_calls:
            item["tool_calls"] = [str((c.get("function") or c).get("name") or "") for c in m.tool_calls]
        items.append(item)
    return json.dumps({"previous_summary": previous_summary or None, "messages": items, "max_tokens": budget_tokens},
                      ensure_ascii=False)


def _summary_text(body: dict) -> str:
    headers = {"Authorization": f"Bearer {settings.LLM_API_KEY}"} if settings.LLM_API_KEY else {}
    content = completion_content(
        lambda: httpx.post(f"{settings.LLM_BASE_URL.rstrip('/')}/chat/completions", json=body, headers=headers,
                           timeout=httpx.Timeout(settings.SUMMARY_LLM_TIMEOUT)),
        SummaryUnavailable)
    try:
        summary = json.loads(content)["summary"]
    except (ValueError, KeyError, TypeError) as exc:
        raise SummaryUnavailable("invalid_output", content_chars=len(content)) from exc
    if not isinstance(summary, str) or not summary.strip():
        raise SummaryUnavailable("empty_summary", content_chars=len(content))
    return summary.strip()


def summarize_llm(messages: list[WindowMessage], *, budget_tokens: int, previous_summary: str | None = None) -> str:
    """A summary of ``messages`` merged with ``previous_summary``, at most ``budget_tokens`` tokens."""
    if not settings.LLM_BASE_URL:
        raise SummaryUnavailable("not_configured")
    body = {
        "model": settings.LLM_MODEL,
        "messages": [{"role": "system", "content": _prompt()},
                     {"role": "user", "content": _payload(messages, budget_tokens, previous_summary)}],
        "temperature": 0,
        "response_format": {"type": "json_object"},
    }
    summary = _summary_text(body)
    if count_tokens(summary) > budget_tokens:
        # Models overshoot length limits; the head of a chronological summary is still a summary.
        logger.info("llm summary over budget: tokens=%d budget=%d; cut", count_tokens(summary), budget_tokens)
        summary = truncate_to_tokens(summary, budget_tokens)
    return summary
