"""The extractor the settings choose: the LLM extractor when LLM_BASE_URL is set, else the rules.

Apart from the contract (base.py) so that the contract does not import its implementations."""
from __future__ import annotations

import threading
from typing import Any

from common.setting import setting
from memory.extraction.base import Extractor
from memory.extraction.llm import LLMExtractor
from memory.extraction.rules import RuleExtractor

__all__ = ["get_extractor"]

_cache_lock = threading.Lock()
_cached: tuple[tuple[Any, ...], Extractor] | None = None


def get_extractor() -> Extractor:
    """The LLM extractor when LLM_BASE_URL is set, else the offline rule extractor.

    The instance is cached per configuration: the LLM extractor keeps a pooled HTTP client and
    the rule extractor is stateless, but settings may change between tests (override_settings).
    """
    global _cached
    config = (
        setting("LLM_BASE_URL", ""), setting("LLM_MODEL", ""), setting("LLM_API_KEY", ""),
        setting("LLM_TIMEOUT", 20.0),
    )
    with _cache_lock:
        if _cached is not None and _cached[0] == config:
            return _cached[1]
        if _cached is not None and hasattr(_cached[1], "close"):
            _cached[1].close()  # the LLM extractor's pooled connections belong to the old endpoint
        extractor: Extractor
        if config[0]:
            extractor = LLMExtractor()
        else:
            extractor = RuleExtractor()
        _cached = (config, extractor)
        return extractor
