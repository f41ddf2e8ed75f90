"""The vectors the learned gate reads (memory/learn/gate.py), taken from the write path's own encodes.

Extraction stores a vector for the message's episode and for every memory it writes; the gate reads
the same sentences. When the live model is the gate's, a message of one sentence is encoded once, for
both the gate and its episode, and a longer message's sentences once for the gate (a sentence a
candidate stores word for word reuses it). With another live model the gate encodes with its own
embedder (``vectors`` answers None), since its weights are for that model's vectors only.
"""
from __future__ import annotations

import numpy as np
from django.conf import settings

from memory.learn.encode import halves
from memory.learn.gate import get_gate
from memory.vectors import active_embedder

__all__ = ["GateVectors"]


class GateVectors:
    def __init__(self, stored: dict[str, np.ndarray] | None = None):
        # text[:MAX_MEMORY_CHARS] -> the vector as stored (the live model's), shared with a batch's.
        self.stored_vectors = stored if stored is not None else {}
        self._embedder = None

    def _live(self):
        if self._embedder is None:
            self._embedder = active_embedder()
        return self._embedder

    def serves_gate(self) -> bool:
        """The live model is the one the gate was trained on."""
        return self._live().model_id == get_gate().embedder_id

    def __call__(self, texts: list[str]) -> np.ndarray | None:
        """The gate's form of the texts' vectors, encoding those not seen yet in one call; None when
        the live model is not the gate's."""
        if not self.serves_gate():
            return None
        embedder = self._live()
        keys = [t[: settings.MAX_MEMORY_CHARS] for t in texts]
        missing = [k for k in dict.fromkeys(keys) if k not in self.stored_vectors]
        if missing:
            self.stored_vectors.update(zip(missing, embedder.encode(missing)))
        return halves(embedder, np.stack([self.stored_vectors[k] for k in keys]))

    def stored(self, text: str) -> np.ndarray | None:
        """The stored form of a text's vector when one was encoded here, else None."""
        return self.stored_vectors.get(text[: settings.MAX_MEMORY_CHARS])
