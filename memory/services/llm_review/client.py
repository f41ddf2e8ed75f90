"""One chat-completions call of the reviewer (any OpenAI-compatible endpoint).

The reviewer runs in a maintenance job, so it may wait longer than a request would
(`LLM_REVIEW_TIMEOUT`) and is never retried within a run: the next run is the retry. Failures are
told apart by what they mean for the items of the batch:

- `ReviewUnavailable`: the endpoint is down or slow (timeout, transport error, 5xx, 408, 429). The run
  stops at once and nothing is counted against the items: an outage is not the items' fault.
- `ReviewRejected`: the endpoint answered, but not with a usable completion (another 4xx, an envelope
  without content). The batch counts one attempt, like an invalid answer.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import httpx
from django.conf import settings

from common.chat_completion import completion_content

__all__ = ["PROMPT_VERSION", "ReviewClient", "ReviewRejected", "ReviewUnavailable", "review_prompt"]

PROMPT_VERSION = "review_v1"
PROMPTS_DIR = Path(__file__).resolve().parent.parent.parent / "prompts"


class ReviewUnavailable(Exception):
    """`reason` is a short category, safe to log."""

    def __init__(self, reason: str, **details: Any) -> None:
        super().__init__(reason)
        self.reason, self.details = reason, details


class ReviewRejected(ReviewUnavailable):
    pass


@lru_cache(maxsize=2)
def review_prompt(version: str = PROMPT_VERSION) -> str:
    return (PROMPTS_DIR / f"{version}.md").read_text(encoding="utf-8")


@dataclass(frozen=True)
class ReviewClient:
    base_url: str
    model: str
    api_key: str
    timeout: float

    @classmethod
    def from_settings(cls) -> "ReviewClient":
        return cls(base_url=settings.LLM_BASE_URL.rstrip("/"), model=settings.LLM_MODEL, api_key=settings.LLM_API_KEY,
                   timeout=float(settings.LLM_REVIEW_TIMEOUT))

    @property
    def actor(self) -> str:
        """Who decided, in versions, audit events and `resolved_by`."""
        return f"llm-review:{self.model}"[:200]

    def complete(self, payload: dict) -> str:
        """The assistant's content for one batch (a string the caller validates)."""
        body = {
            "model": self.model,
            "messages": [{"role": "system", "content": review_prompt()},
                         {"role": "user", "content": json.dumps(payload, ensure_ascii=False)}],
            "temperature": 0,
            "response_format": {"type": "json_object"},
        }
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        return completion_content(
            lambda: httpx.post(f"{self.base_url}/chat/completions", json=body, headers=headers,
                               timeout=httpx.Timeout(self.timeout)),
            ReviewRejected, unavailable=ReviewUnavailable)
