"""The learned judge: what a new standing statement does to each active standing memory near it
(DESIGN §5, D25): duplicate / supersede (replaces) / conflict (possible conflict: both kept, the
newer first, queued for an operator) / coexist.

A model trained on labelled pairs (memory/learn/judge_train.py) gives the probabilities; rules stay
as guards only, applied before it:
- events never replace events, and a one-time instruction (task scope) never replaces a user's memory;
- two statements about different things (another identifier: 1号/2号, another person named as the
  speaker) are never the same memory, however alike they read.
And one after it: a change replaces one value, so among many memories only the likeliest is replaced
or flagged; others the model would also replace are flagged only when it is sure of them too.

The write path (memory/services/subject_tier.py), `bench.pairs` and `bench.changes` all call `judge`.
"""
from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field

import numpy as np

from common.text import split_speaker
from memory.learn.judge_model import MODEL_PATH, load_model
from memory.learn.pair_features import PairEncoder, PairInput, pair_matrix

__all__ = ["Decision", "Existing", "decide", "judge", "judge_pairs", "ruled_out", "seed"]

STANDING = frozenset({"fact", "preference", "profile"})
MAX_JUDGED = 8  # the existing memories judged per new statement: the closest by stored cosine


@dataclass(frozen=True)
class Existing:
    id: int
    content: str
    kind: str
    scope: str = "user"
    cosine: float = 0.0  # the write path's stored-vector cosine: only to pick which to judge, never a feature


@dataclass(frozen=True)
class Decision:
    action: str  # duplicate | supersede | conflict | coexist
    score: float  # the model's probability that the newer replaces the older
    proba: dict = field(default_factory=dict)
    reason: str = "model"

    def as_dict(self) -> dict:
        return {"reason": self.reason, **{k: round(float(v), 3) for k, v in self.proba.items()}}


_encoder: PairEncoder | None = None
_encoder_lock = threading.Lock()


def encoder() -> PairEncoder:
    """The judge's encoder: the model it was trained with, whatever the live collection's model is."""
    global _encoder
    with _encoder_lock:
        if _encoder is None:
            from memory.embeddings import get_embedder

            _encoder = PairEncoder(get_embedder(load_model().model_id))
        return _encoder


def seed(texts: list[str], vectors, model_id: str) -> None:
    """Vectors a batch encoded in its one encoder call (contents and their masked forms), kept as if
    the judge had encoded them: only under the judge's own model, so they are the same numbers."""
    enc = encoder()
    if model_id != enc.model_id:
        return
    for text, vector in zip(texts, vectors):
        enc.seed(text, vector)


def decide(proba: dict, bands: dict) -> str:
    sup, dup = proba["supersede"], proba["duplicate"]
    if sup >= bands["supersede"]:
        return "supersede"
    if dup >= bands["duplicate"] and dup > sup:
        return "duplicate"
    if sup >= bands["conflict"]:
        return "conflict"
    return "coexist"


def _bands_setting() -> dict:
    """MEMORY_JUDGE_BANDS: an operator's override of the trained bands (e.g. a wider possible-conflict
    band to send more pairs to review)."""
    from django.conf import settings

    return dict(getattr(settings, "MEMORY_JUDGE_BANDS", None) or {})


def _guard(p: PairInput, older_scope: str, newer_scope: str) -> str | None:
    """Why the pair may never be one memory, or None."""
    if p.older_kind not in STANDING and p.newer_kind not in STANDING:
        return "events never replace events"
    if (newer_scope == "task" or p.newer_kind == "task") and older_scope != "task":
        return "task scope never replaces user scope"
    return None


def _different_things(p: PairInput) -> bool:
    """Another speaker or another identifier (1号/2号 冷库): never one memory."""
    from memory.subjects.match import pair_features
    from memory.subjects.parts import parse

    f = pair_features(parse(p.older), parse(p.newer), masked=0.0, full=0.0)
    return f.speaker_differs or f.ident_conflict


def _unlabelled(p: PairInput) -> PairInput | None:
    """The pair without a transcript's speaker labels ("Melanie: ..."), or None when it has none."""
    older, newer = split_speaker(p.older)[1], split_speaker(p.newer)[1]
    if older == p.older and newer == p.newer:
        return None
    return dataclasses.replace(p, older=older, newer=newer)


def _label_guard(model, bands: dict, pairs: list[PairInput], out: list) -> None:
    """A replace between two labelled transcript lines is decided on the lines without the labels. The model was
    trained on statements without them, and one shared label made a speaker's unrelated remarks read as
    one subject (LoCoMo: 39 of one conversation's pairs at P(replaces) >= 0.9 with it, 17 without).
    Only replaces are read again: the duplicate verdicts stay as they were (reading every pair without
    its label turned more remarks into restatements, and LoCoMo's recall fell with them)."""
    again = [(i, q) for i, d in enumerate(out) if d is not None and d.action in ("supersede", "conflict")
             and (q := _unlabelled(pairs[i])) is not None]
    if not again:
        return
    scalars, vectors = pair_matrix(encoder(), [q for _, q in again])
    for (i, _), row in zip(again, model.proba(model.inputs(scalars, vectors))):
        named = dict(zip(model.labels, row))
        out[i] = Decision(decide(named, bands), float(named["supersede"]), named)


def ruled_out(p: PairInput, older_scope: str = "user", newer_scope: str = "user") -> str | None:
    """Why a rule, not the model, decides the pair is two memories (coexist), or None."""
    reason = _guard(p, older_scope, newer_scope)
    if reason is None and _different_things(p):
        reason = "another thing or person"
    return reason


def judge_pairs(pairs: list[PairInput], scopes: list[tuple[str, str]] | None = None,
                path=MODEL_PATH) -> list[Decision]:
    """A decision per pair, each judged on its own (no one-value rule across pairs)."""
    model = load_model(path)
    bands = {**model.bands, **_bands_setting()}
    scopes = scopes or [("user", "user")] * len(pairs)
    out: list[Decision | None] = [None] * len(pairs)
    todo = []
    for i, (p, (so, sn)) in enumerate(zip(pairs, scopes)):
        reason = ruled_out(p, so, sn)
        if reason:
            out[i] = Decision("coexist", 0.0, reason=reason)
        else:
            todo.append(i)
    if todo:
        scalars, vectors = pair_matrix(encoder(), [pairs[i] for i in todo])
        proba = model.proba(model.inputs(scalars, vectors))
        for i, row in zip(todo, proba):
            named = dict(zip(model.labels, row))
            out[i] = Decision(decide(named, bands), float(named["supersede"]), named)
        _label_guard(model, bands, pairs, out)
    return out  # type: ignore[return-value]


def judge(*, content: str, kind: str, existing: list[Existing], scope: str = "user",
          vector: np.ndarray | None = None, model_id: str | None = None) -> list[tuple[Existing, Decision]]:
    """A decision for every existing memory. `vector`/`model_id`: the new statement's embedding the
    caller already computed, reused only when it is the judge's own model (the same numbers)."""
    if not existing:
        return []
    if vector is not None and model_id == encoder().model_id:
        encoder().seed(content, vector)
    ranked = sorted(existing, key=lambda e: -e.cosine)
    judged, rest = ranked[:MAX_JUDGED], ranked[MAX_JUDGED:]
    pairs = [PairInput(e.content, content, e.kind, kind) for e in judged]
    decisions = judge_pairs(pairs, [(e.scope, scope) for e in judged])
    out = list(zip(judged, decisions)) + [(e, Decision("coexist", 0.0, reason="not among the closest")) for e in rest]
    return _one_value(out)


def _one_value(out: list[tuple[Existing, Decision]]) -> list[tuple[Existing, Decision]]:
    """A change replaces one value: the likeliest pair keeps its decision; another supersede becomes a
    possible conflict, and a possible conflict beside a stronger decision is dropped. Duplicates stand."""
    ranked = sorted((pair for pair in out if pair[1].action in ("supersede", "conflict")), key=lambda p: -p[1].score)
    if len(ranked) <= 1:
        return out
    top = ranked[0][0].id
    demoted = {}
    for e, d in ranked[1:]:
        action = "conflict" if d.action == "supersede" else "coexist"
        demoted[e.id] = Decision(action, d.score, d.proba, "one value replaced: another pair is likelier")
    return [(e, demoted.get(e.id, d) if e.id != top else d) for e, d in out]
