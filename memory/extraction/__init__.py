"""Memory extraction: turn one message into memory candidates (pure Python, no models).

`get_extractor()` picks the LLM extractor when LLM_BASE_URL is set, else the rule extractor.
"""
from memory.extraction.base import (
    Candidate,
    ExistingMemory,
    ExtractionInput,
    ExtractionResult,
    Extractor,
)
from memory.extraction.configured import get_extractor

__all__ = ["Candidate", "ExistingMemory", "ExtractionInput", "ExtractionResult", "Extractor", "get_extractor"]
