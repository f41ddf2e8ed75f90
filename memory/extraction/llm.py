"""LLMExtractor: extraction through any OpenAI-compatible chat-completions endpoint.

The model sees the message, a few recent turns and the related existing memories under short
integer ids (1..n, never database ids: models copy long ids wrongly, and a wrong id would
supersede an unrelated memory). Its answer is validated strictly (llm_output.py); on timeout,
transport or HTTP error, non-JSON or invalid output the rule extractor answers instead and the
result says `produced_by="rules-fallback"`, so extraction never fails because the LLM did.
"""
from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import httpx
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_fixed

from common.chat_completion import completion_content
from common.setting import setting
from memory.extraction.base import ExtractionInput, ExtractionResult, Extractor
from memory.extraction.llm_output import InvalidOutput, parse_output
from memory.extraction.rules import RuleExtractor
from memory.extraction.rules_en import EN
from memory.extraction.rules_zh import ZH

__all__ = ["LLMExtractor", "Prompt", "load_prompt"]

logger = logging.getLogger(__name__)

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"
DEFAULT_PROMPT = "extract_v2"  # v2 asks for a `subject` per standing candidate
# Context for the model, not material to extract from: a few turns are enough to resolve "它"
# or "不对", more only costs tokens.
MAX_RECENT_TURNS = 6
MAX_RECENT_CHARS = 1000


@dataclass(frozen=True)
class Prompt:
    version: str  # the file name without .md, e.g. "extract_v1"; goes into produced_by
    text: str


@lru_cache(maxsize=8)
def load_prompt(name: str = DEFAULT_PROMPT) -> Prompt:
    """Prompts are versioned files: changing one means adding extract_v2.md, so every stored
    memory can say which prompt produced it."""
    return Prompt(version=name, text=(PROMPTS_DIR / f"{name}.md").read_text(encoding="utf-8"))


class _Fallback(Exception):
    def __init__(self, reason: str, **details: Any) -> None:
        super().__init__(reason)
        self.reason = reason
        self.details = details


def _retryable(exc: BaseException) -> bool:
    # Connection refused/reset is usually momentary: one more try. A timeout is not retried: the
    # model is slow, and a second attempt would double the time a write waits for nothing.
    return isinstance(exc, httpx.TransportError) and not isinstance(exc, httpx.TimeoutException)


class LLMExtractor(Extractor):
    name = "llm"
    remote = True

    def __init__(self, *, base_url: str | None = None, model: str | None = None, api_key: str | None = None,
                 timeout: float | None = None, prompt: str = DEFAULT_PROMPT, fallback: Extractor | None = None,
                 retry_wait: float = 0.2) -> None:
        # Constructor arguments win over settings (tests, or a second endpoint for one job).
        self.base_url = (base_url if base_url is not None else setting("LLM_BASE_URL", "")).rstrip("/")
        self.model = model if model is not None else setting("LLM_MODEL", "gpt-4o-mini")
        self.api_key = api_key if api_key is not None else setting("LLM_API_KEY", "")
        self.timeout = float(timeout if timeout is not None else setting("LLM_TIMEOUT", 20.0))
        self.prompt = load_prompt(prompt)
        self.fallback = fallback or RuleExtractor()
        self.retry_wait = retry_wait
        self._client: httpx.Client | None = None
        self._client_lock = threading.Lock()

    @property
    def produced_by(self) -> str:
        return f"llm:{self.model}:{self.prompt.version}"

    def extract(self, inp: ExtractionInput) -> ExtractionResult:
        # An explicit "别记 / don't remember" is honoured before the text leaves the process: the
        # message is not sent to a third-party model at all.
        if inp.role == "user" and (ZH.do_not_remember(inp.content) or EN.do_not_remember(inp.content)):
            return ExtractionResult(candidates=[], do_not_remember=True, produced_by=self.produced_by)
        try:
            raw = self._complete(inp)
            parsed = parse_output(raw, shown_ids={m.short_id for m in inp.existing}, role=inp.role,
                                  ref=inp.occurred_at)
        except _Fallback as exc:
            return self._fall_back(inp, exc.reason, **exc.details)
        except InvalidOutput as exc:
            return self._fall_back(inp, f"invalid:{exc.reason}", bad_ids=exc.ids)
        return ExtractionResult(candidates=parsed.candidates, do_not_remember=parsed.do_not_remember,
                                produced_by=self.produced_by)

    def close(self) -> None:
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    # ------------------------------------------------------------------ request
    def _messages(self, inp: ExtractionInput) -> list[dict[str, str]]:
        payload = {
            "message": {"role": inp.role, "content": inp.content, "time": inp.occurred_at.isoformat(),
                        "weekday": inp.occurred_at.strftime("%A")},
            "recent": [{"role": role, "content": content[:MAX_RECENT_CHARS]}
                       for role, content in inp.recent[-MAX_RECENT_TURNS:]],
            "existing": [{"id": m.short_id, "kind": m.kind, "content": m.content, "slot_key": m.slot_key}
                         for m in inp.existing],
        }
        return [
            {"role": "system", "content": self.prompt.text},
            {"role": "user", "content": json.dumps(payload, ensure_ascii=False)},
        ]

    def _http(self) -> httpx.Client:
        with self._client_lock:
            if self._client is None:
                headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
                self._client = httpx.Client(timeout=httpx.Timeout(self.timeout), headers=headers)
            return self._client

    def _complete(self, inp: ExtractionInput) -> str:
        body = {
            "model": self.model,
            "messages": self._messages(inp),
            "temperature": 0,
            "response_format": {"type": "json_object"},
        }
        return completion_content(lambda: self._post(f"{self.base_url}/chat/completions", body), _Fallback)

    def _post(self, url: str, body: dict) -> httpx.Response:
        for attempt in Retrying(stop=stop_after_attempt(2), retry=retry_if_exception(_retryable),
                                wait=wait_fixed(self.retry_wait), reraise=True):
            with attempt:
                response = self._http().post(url, json=body)
        return response

    # ------------------------------------------------------------------ fallback
    def _fall_back(self, inp: ExtractionInput, reason: str, **details: Any) -> ExtractionResult:
        # Lengths, counts, ids and status codes only: the message and the model's answer may hold
        # exactly what a user asked us to forget.
        logger.warning(
            "llm extraction fell back to rules: reason=%s model=%s prompt=%s message_chars=%d existing=%d details=%s",
            reason, self.model, self.prompt.version, len(inp.content or ""), len(inp.existing),
            {k: v for k, v in details.items() if v not in (None, [])},
        )
        result = self.fallback.extract(inp)
        result.produced_by = "rules-fallback"
        return result
