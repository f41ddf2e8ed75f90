"""Judge one new standing statement against the user's standing memories (write path and
`bench.pairs` share this, so the figures in docs/evaluation.md are the write path's)."""
from __future__ import annotations

import threading
from dataclasses import dataclass, replace

import numpy as np
from cachetools import LRUCache

from memory.choices import SUBJECT_KINDS
from memory.subjects.match import Decision, decide, pair_features, subject_score
from memory.subjects.parts import parse

__all__ = ["Existing", "decide_with", "judge", "masked_seed", "masked_similarity"]

# Pairs whose subject score cannot reach the conflict band even with a perfect masked cosine are
# decided without embedding anything; of the rest, only the closest few are embedded.
MAX_EMBEDDED = 8
_CACHE_SIZE = 4096
_cache: LRUCache[tuple[str, str], np.ndarray] = LRUCache(maxsize=_CACHE_SIZE)
_cache_lock = threading.Lock()  # cachetools caches are not thread-safe


@dataclass(frozen=True)
class Existing:
    id: int
    content: str
    kind: str
    slot_key: str | None
    full: float  # cosine of the contents as written, from the stored vectors


def _masked_vectors(embedder, texts: list[str]) -> list[np.ndarray]:
    model = embedder.model_id
    out: dict[str, np.ndarray] = {}
    with _cache_lock:
        for t in texts:
            if (model, t) in _cache:
                out[t] = _cache[(model, t)]  # a read counts as a use
    todo = list(dict.fromkeys(t for t in texts if t not in out))
    if todo:
        encoded = embedder.encode(todo)
        with _cache_lock:
            for t, v in zip(todo, encoded):
                out[t] = v
                _cache[(model, t)] = v
    return [out[t] for t in texts]


def masked_seed(embedder, texts: list[str], vectors) -> None:
    """Vectors of value-masked forms encoded elsewhere (a batch's one encoder call), kept as if
    this module had encoded them."""
    model = embedder.model_id
    with _cache_lock:
        for t, v in zip(texts, vectors):
            _cache[(model, t)] = v  # the LRU cache evicts the least recently used itself


def masked_similarity(embedder, a: str, others: list[str]) -> list[float]:
    from common.text import is_cjk
    from memory.vectors import similarity

    if not others:
        return []
    vectors = _masked_vectors(embedder, [a] + others)
    cjk_a = is_cjk(a)
    sims = []
    for text, vec in zip(others, vectors[1:]):
        cjk = cjk_a or is_cjk(text)
        sims.append(float(similarity(embedder, vectors[0], vec, cjk=cjk)[0]))
    return sims


def decide_with(f, limits, *, kinds: tuple[str, str]) -> Decision:
    """`decide` with a model's thresholds (memory/thresholds.py): the write path's and `bench.pairs`'."""
    return decide(f, same=limits.subject_same, conflict=limits.subject_conflict, duplicate=limits.subject_duplicate,
                  masked_lo=limits.masked_lo, masked_hi=limits.masked_hi, kinds=kinds, cue_conflict=limits.cue_conflict,
                  cue_conflict_masked=limits.cue_conflict_masked, supersede_alike=limits.supersede_alike)


def judge(embedder, limits, *, content: str, kind: str, slot_key: str | None, existing: list[Existing],
          subject: str | None = None, replaces_only: bool = False) -> list[tuple[Existing, Decision]]:
    """A decision for every existing standing memory (coexist for most). `replaces_only`: the newer
    announces a change and is kept only as one (D17): when nothing else ties it to a memory, the one it
    reads clearly most alike is a possible conflict."""
    if kind not in SUBJECT_KINDS:
        return [(e, Decision("coexist", 0.0)) for e in existing]
    newer = parse(content, subject)
    bounds = dict(masked_lo=limits.masked_lo, masked_hi=limits.masked_hi)
    pending: list[tuple[Existing, object]] = []
    out: list[tuple[Existing, Decision]] = []
    for e in existing:
        if e.kind not in SUBJECT_KINDS:
            out.append((e, Decision("coexist", 0.0)))
            continue
        older = parse(e.content)
        f = pair_features(older, newer, masked=limits.masked_hi, full=e.full,
                          slot_equal=bool(slot_key and e.slot_key == slot_key))
        score = subject_score(f, **bounds)
        if score < limits.subject_conflict:
            out.append((e, Decision("coexist", score, f)))
        else:
            pending.append((e, (older, f)))
    pending.sort(key=lambda p: -p[0].full)
    embed_now, rest = pending[:MAX_EMBEDDED], pending[MAX_EMBEDDED:]
    sims = masked_similarity(embedder, newer.masked, [older.masked for _, (older, _) in embed_now])
    for (e, (older, f)), sim in zip(embed_now, sims):
        f = replace(f, masked=sim)
        out.append((e, decide_with(f, limits, kinds=(e.kind, kind))))
    for e, (older, f) in rest:
        f = replace(f, masked=limits.masked_lo)
        out.append((e, decide_with(f, limits, kinds=(e.kind, kind))))
    out = _one_announced(out, limits)
    return _nearest(out, limits) if replaces_only else out


def _one_announced(out: list[tuple[Existing, Decision]], limits) -> list[tuple[Existing, Decision]]:
    """A conflict that only the announced change makes (under the subject band: `decide`) is kept
    for the one memory the newer reads most alike, and for none when the subject score already tied
    the newer to a memory: a change replaces one value, and among a user's many memories several
    read alike to any sentence about their life."""
    announced = [e for e, d in out if d.action == "conflict" and d.score < limits.subject_conflict]
    if not announced:
        return out
    tied = any(d.action in ("supersede", "duplicate") or (d.action == "conflict" and d.score >= limits.subject_conflict)
               for _, d in out)
    keep = None if tied else max(announced, key=lambda e: e.full)
    return [(e, Decision("coexist", d.score, d.features) if e in announced and e is not keep else d) for e, d in out]


def _nearest(out: list[tuple[Existing, Decision]], limits) -> list[tuple[Existing, Decision]]:
    if any(d.action in ("supersede", "conflict", "duplicate") for _, d in out):
        return out
    standing = sorted(((e, d) for e, d in out if e.kind in SUBJECT_KINDS), key=lambda p: -p[0].full)
    if not standing:
        return out
    top, decision = standing[0]
    runner_up = standing[1][0].full if len(standing) > 1 else 0.0
    f = decision.features
    if top.full < limits.nearest_conflict or top.full - runner_up < limits.nearest_margin or (
            f is not None and (f.ident_conflict or f.pred_conflict or f.speaker_differs)):
        return out
    return [(e, Decision("conflict", d.score, d.features) if e is top else d) for e, d in out]
