"""Similarity thresholds of the write path, per embedding model.

Cosine scales differ between models (USE multilingual puts paraphrases near 0.7 and unrelated
Chinese pairs near 0.2; MiniLM is higher across the board), so one number cannot serve both.
The defaults below come from the calibration in docs/decisions.md; MEMORY_THRESHOLDS overrides.
"""
from dataclasses import dataclass

from django.conf import settings


@dataclass(frozen=True)
class Thresholds:
    duplicate: float  # at or above: the same memory said again → skip and touch
    supersede: float  # between this and duplicate, same subject (entity) → replaces the old one
    forget: float  # at or above a forget rule's embedding → blocked


DEFAULTS = {
    "use-multilingual-v3": Thresholds(duplicate=0.82, supersede=0.65, forget=0.82),
    "st:all-MiniLM-L6-v2": Thresholds(duplicate=0.88, supersede=0.75, forget=0.88),
    # Composite similarity is USE alone where Chinese is involved, a USE/MiniLM mix otherwise.
    "use-multilingual-v3+st:all-MiniLM-L6-v2": Thresholds(duplicate=0.85, supersede=0.68, forget=0.85),
}
FALLBACK = Thresholds(duplicate=0.85, supersede=0.75, forget=0.85)


def thresholds_for(model_id: str) -> Thresholds:
    override = settings.MEMORY_THRESHOLDS.get(model_id)
    if override:
        return Thresholds(**{**DEFAULTS.get(model_id, FALLBACK).__dict__, **override})
    return DEFAULTS.get(model_id, FALLBACK)
