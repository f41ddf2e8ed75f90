"""Memory extraction: turn one message into memory candidates (pure Python, no models).

`get_extractor()` picks the LLM extractor when LLM_BASE_URL is set, else the rule extractor. It is
loaded on first use (PEP 562): the extractors read the learned gate (memory/learn/), whose rule
signals read this package's lexicons, so importing the package must not import the extractors.
"""
from memory.extraction.base import (
    Candidate,
    ExistingMemory,
    ExtractionInput,
    ExtractionResult,
    Extractor,
)

__all__ = ["Candidate", "ExistingMemory", "ExtractionInput", "ExtractionResult", "Extractor", "get_extractor"]


def __getattr__(name: str):
    if name == "get_extractor":
        from memory.extraction.configured import get_extractor

        return get_extractor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
