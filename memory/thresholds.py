"""Similarity thresholds of the write path, per embedding model.

Cosine scales differ between models (USE multilingual puts paraphrases near 0.7 and unrelated
Chinese pairs near 0.2; MiniLM is higher across the board), so one number cannot serve both.
The defaults below come from the calibration in docs/decisions.md; MEMORY_THRESHOLDS overrides.
The subject-matching figures (subject_*, masked_*) are tuned on the tuning half of the labelled
pair set (`python -m bench.pairs --tune`, docs/evaluation.md).
"""
from dataclasses import dataclass

from django.conf import settings


@dataclass(frozen=True)
class Thresholds:
    duplicate: float  # at or above: the same memory said again → skip and touch
    supersede: float  # between this and duplicate, same subject (entity) → replaces the old one
    forget: float  # at or above a forget rule's embedding → blocked
    subject_same: float = 0.4  # subject score at or above: same subject → supersede (or duplicate)
    subject_conflict: float = 0.3  # between this and subject_same: a possible conflict, both kept
    masked_lo: float = 0.5  # value-masked cosine mapped to 0 at or below this ...
    masked_hi: float = 0.9  # ... and to 1 at or above this
    subject_duplicate: float = 0.85  # same subject and a cosine at or above this (no change cue): a restatement
    # A newer statement that announces a change, by the same speaker, with a cosine at or above this to an
    # older one whose subject the matcher could not tell: a possible conflict (both kept, the newer first)
    # rather than two unrelated statements. Everyday wording of a change rarely names the attribute.
    cue_conflict: float = 0.5
    cue_conflict_masked: float = 0.45  # ... and with the values masked at or above this (both read alike)
    # A statement that only replaces (a change announced in words no rule reads: memory/extraction/rules.py)
    # and that the matcher ties to nothing: the standing memory it reads most alike is a possible conflict
    # when the cosine is at least `nearest_conflict` and ahead of the next one by `nearest_margin`.
    nearest_conflict: float = 0.35
    nearest_margin: float = 0.1
    # A supersede whose two statements read unlike both as written and value-masked (cosines under
    # this) and that no slot or named old value ties leaves both standing.
    supersede_alike: float = 0.35


DEFAULTS = {
    "use-multilingual-v3": Thresholds(duplicate=0.82, supersede=0.65, forget=0.82,
                                      subject_same=0.3, subject_conflict=0.15, masked_lo=0.3, masked_hi=0.9,
                                      subject_duplicate=0.75),
    # English only (most Chinese becomes [UNK]), so its masked cosine says less.
    "st:all-MiniLM-L6-v2": Thresholds(duplicate=0.88, supersede=0.75, forget=0.88,
                                      subject_same=0.32, subject_conflict=0.32, masked_lo=0.3, masked_hi=0.8,
                                      subject_duplicate=0.7),
    # Composite similarity is USE alone where Chinese is involved, a USE/MiniLM mix otherwise.
    "use-multilingual-v3+st:all-MiniLM-L6-v2": Thresholds(duplicate=0.85, supersede=0.68, forget=0.85,
                                                          subject_same=0.3, subject_conflict=0.15,
                                                          masked_lo=0.3, masked_hi=1.0, subject_duplicate=0.75),
}
FALLBACK = Thresholds(duplicate=0.85, supersede=0.75, forget=0.85)


def thresholds_for(model_id: str) -> Thresholds:
    override = settings.MEMORY_THRESHOLDS.get(model_id)
    if override:
        return Thresholds(**{**DEFAULTS.get(model_id, FALLBACK).__dict__, **override})
    return DEFAULTS.get(model_id, FALLBACK)
