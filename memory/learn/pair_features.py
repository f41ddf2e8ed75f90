"""Features of one (older, newer) pair of statements for the learned judge (DESIGN §5, D25).

Every feature is computed here from the two texts and their kinds, identically when the judge is
trained (`memory.learn.judge_train`) and when the write path asks it: no cosine or vector is taken
from the caller (a caller once passed a different cosine than training used, and a paraphrase
flipped from duplicate to conflict). Vectors come from one encoder, cached by text.

The features, in groups:
- the cosine of the two statements as written and with their values masked (numbers, quantities,
  codes, names, the value after a marker replaced), per model of a composite encoder, and their
  difference (the same slot with another value scores high masked, lower as written);
- |a−b| and a⊙b of the multilingual vectors (as written and masked), and the newer statement's own
  vectors (as written and masked);
- word overlap (jieba for Chinese), words only one side has, numbers on each side and whether they
  differ;
- cue flags of the newer (a change: 现在/改/换/不再/now/switched…; an addition: 也/另外/还/also…;
  a stop: 不…了/no longer) and of the older;
- the kinds, the languages, and the subject parser's signals (memory/subjects: the same head, another
  identifier or predicate, the old value named as gone, a value restated).
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass

import numpy as np
from cachetools import LRUCache

from common.text import cjk_ratio, tokenize

__all__ = ["BLOCK_WIDTHS", "PairInput", "PairEncoder", "mask_values", "numbers", "pair_matrix", "pair_texts", "scalar_names"]

KINDS_OLDER = ("fact", "preference", "event")
KINDS_NEWER = ("fact", "preference", "event", "task")

_CN_NUM = "零一二两三四五六七八九十百千万亿半几"
_UNIT = "个只台辆块元度点分秒天周年月岁斤公里米次片号层楼位名家套粒颗瓶杯张本辆栋户倍成折毫克升寸码"
_NUMBER = re.compile(rf"\d+(?:[.:,]\d+)*\s?(?:%|[A-Za-z]{{1,3}}\b|[{_UNIT}])?|[{_CN_NUM}]+[{_UNIT}]|第[{_CN_NUM}\d]+")
_DIGITS = re.compile(r"\d+(?:[.:]\d+)*")
_LATIN_IN_ZH = re.compile(r"[A-Za-z][A-Za-z0-9.+#-]*")
_EN_NAME = re.compile(r"(?<=[a-z,;] )[A-Z][\w.+#-]*|\b[A-Za-z]*\d[\w.-]*")
_CN_DIGIT = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"两": 2}

# Cue words of the newer statement: evidence, not rules; the model weighs them with everything else.
ZH_CHANGE = ("现在", "改", "换", "升", "降", "不再", "不用", "已经", "变成", "调", "搬", "转", "如今", "目前", "最近",
             "后来", "离职", "退休", "接手", "接替", "卖了", "戒", "停了", "取消", "加到", "减到", "涨", "提到")
EN_CHANGE = ("now", "switch", "chang", "upgrad", "downgrad", "moved", "no longer", "anymore", "instead", "replac",
             "migrat", "took over", "taken over", "bumped", "raised", "lowered", "these days", "quit", "stopped",
             "sold", "new ", "started", "left", "retired", "since ")
ZH_ADD = ("也", "另外", "还", "又", "再加", "以及", "同时", "除了")
EN_ADD = ("also", "another", "too", "as well", "in addition", "besides", "additionally", "second ", "both")
ZH_STOP = ("不再", "不用", "停", "不吃", "不喝", "没再", "取消", "戒", "退")
EN_STOP = ("no longer", "not anymore", "anymore", "stopped", "quit", "gave up", "don't", "doesn't", "no more")


def mask_values(text: str) -> str:
    """The statement with its values replaced: numbers and quantities, codes and model names, names in
    English, and the value the subject parser finds after a marker (是/用/改成/is/switched to)."""
    from memory.subjects.parts import parse

    masked = parse(text).masked or text
    masked = _NUMBER.sub("#", masked)
    if cjk_ratio(masked) >= 0.3:
        return _LATIN_IN_ZH.sub("X", masked)
    return _EN_NAME.sub("X", masked)


def numbers(text: str) -> frozenset[str]:
    found = set(_DIGITS.findall(text))
    for run in re.findall(rf"[{_CN_NUM}]+(?=[{_UNIT}])", text):
        if all(c in _CN_DIGIT for c in run):
            found.add("".join(str(_CN_DIGIT[c]) for c in run))
        else:
            found.add(run)
    return frozenset(found)


def _cues(text: str, zh: tuple[str, ...], en: tuple[str, ...]) -> float:
    lower = f" {text.lower()} "
    return float(any(w in text for w in zh) or any(w in lower for w in en))


@dataclass(frozen=True)
class PairInput:
    older: str
    newer: str
    older_kind: str = "fact"
    newer_kind: str = "fact"


class PairEncoder:
    """Unit vectors of texts under one embedding model, cached by (model, text). `split`: the widths of
    a composite's models ([512, 384] for USE + MiniLM), each model's part scored on its own."""

    def __init__(self, embedder, cache_size: int = 8192) -> None:
        self.embedder = embedder
        self.model_id = embedder.model_id
        parts = getattr(embedder, "parts", None)
        self.split = [p.dim for p in parts] if parts else [embedder.dim]
        self._cache: LRUCache[str, np.ndarray] = LRUCache(maxsize=cache_size)
        self._lock = threading.Lock()  # cachetools caches are not thread-safe

    def seed(self, text: str, vector: np.ndarray) -> None:
        """A vector of `text` this model already computed (the write path's own encode): the same bytes."""
        with self._lock:
            self._cache[text] = np.asarray(vector, dtype=np.float32)

    def vectors(self, texts: list[str]) -> np.ndarray:
        out: dict[str, np.ndarray] = {}
        with self._lock:
            for t in texts:
                if t in self._cache:
                    out[t] = self._cache[t]
        todo = list(dict.fromkeys(t for t in texts if t not in out))
        if todo:
            encoded = self.embedder.encode(todo)
            with self._lock:
                for t, v in zip(todo, encoded):
                    out[t] = self._cache[t] = v
        return np.vstack([out[t] for t in texts]) if texts else np.zeros((0, sum(self.split)), np.float32)

    def parts(self, matrix: np.ndarray) -> list[np.ndarray]:
        """Each model's unit vectors of a matrix of (composite) vectors."""
        out, start = [], 0
        for width in self.split:
            part = matrix[:, start:start + width]
            norms = np.linalg.norm(part, axis=1, keepdims=True)
            out.append(part / np.where(norms == 0, 1.0, norms))
            start += width
        return out


def scalar_names() -> list[str]:
    names = []
    for which in ("raw", "masked"):
        names += [f"cos_{which}_m{i}" for i in range(2)]
    names += ["cos_gap_m0", "cos_gap_m1", "cos_cross", "jaccard", "overlap", "only_older", "only_newer", "len_ratio",
              "nums_older", "nums_newer", "nums_shared", "nums_differ", "new_numbers",
              "change_new", "change_old", "add_new", "stop_new", "cjk_older", "cjk_newer", "cross_lang",
              "sub_head", "sub_lex", "sub_ident", "sub_pred", "sub_old_named", "sub_value_same", "sub_value_differs",
              "sub_heads_differ", "sub_restated", "sub_speaker", "sub_cue"]
    names += [f"older_{k}" for k in KINDS_OLDER] + [f"newer_{k}" for k in KINDS_NEWER]
    return names


def _scalars(p: PairInput, cos_raw: list[float], cos_masked: list[float], cos_cross: float) -> list[float]:
    from memory.subjects.match import pair_features
    from memory.subjects.parts import parse

    ta, tb = set(tokenize(p.older)), set(tokenize(p.newer))
    union = ta | tb
    na, nb = numbers(p.older), numbers(p.newer)
    ca, cb = cjk_ratio(p.older), cjk_ratio(p.newer)
    f = pair_features(parse(p.older), parse(p.newer), masked=cos_masked[0], full=cos_raw[0])
    out = list(cos_raw) + list(cos_masked)
    out += [cos_masked[0] - cos_raw[0], cos_masked[-1] - cos_raw[-1], cos_cross]
    out += [len(ta & tb) / len(union) if union else 0.0, len(ta & tb) / min(len(ta), len(tb)) if ta and tb else 0.0,
            len(ta - tb) / max(1, len(ta)), len(tb - ta) / max(1, len(tb)),
            min(len(p.older), len(p.newer)) / max(1, len(p.older), len(p.newer))]
    out += [float(bool(na)), float(bool(nb)), float(bool(na & nb)), float(bool(na and nb and na != nb)),
            float(bool(nb - na))]
    out += [_cues(p.newer, ZH_CHANGE, EN_CHANGE), _cues(p.older, ZH_CHANGE, EN_CHANGE), _cues(p.newer, ZH_ADD, EN_ADD),
            _cues(p.newer, ZH_STOP, EN_STOP), ca, cb, float((ca >= 0.3) != (cb >= 0.3))]
    out += [f.head, f.lex, float(f.ident_conflict), float(f.pred_conflict), float(f.old_named), float(f.value_same),
            float(f.value_differs), float(f.heads_differ), float(f.value_restated), float(f.speaker_differs), float(f.cue)]
    out += [float(p.older_kind == k) for k in KINDS_OLDER] + [float(p.newer_kind == k) for k in KINDS_NEWER]
    return out


# The vector features, in blocks the model reads whole (judge_model: one hidden layer over them):
# the pair's interactions (|a−b| and a⊙b, raw and masked: 4 widths of the first model), then the newer
# statement itself (raw and masked: 2 widths), which reads as a change, an addition or an event in any
# domain's words.
BLOCK_WIDTHS = (4, 2)


def _texts(pairs: list[PairInput]) -> tuple[dict[str, str], list[str]]:
    masked = {t: mask_values(t) for p in pairs for t in (p.older, p.newer)}
    return masked, list(dict.fromkeys([t for p in pairs for t in (p.older, p.newer)] + list(masked.values())))


def pair_texts(pairs: list[PairInput]) -> list[str]:
    """Every text `pair_matrix` encodes for these pairs, once each (training encodes them ahead, cached)."""
    return _texts(pairs)[1]


def pair_matrix(encoder: PairEncoder, pairs: list[PairInput]) -> tuple[np.ndarray, np.ndarray]:
    """(scalar features, vector features) of every pair; the vector features are BLOCK_WIDTHS × the
    first model's width."""
    if not pairs:
        return np.zeros((0, len(scalar_names()))), np.zeros((0, sum(BLOCK_WIDTHS) * encoder.split[0]))
    masked, texts = _texts(pairs)
    index = {t: i for i, t in enumerate(texts)}
    parts = encoder.parts(encoder.vectors(texts))
    scalars, vectors = [], []
    for p in pairs:
        io, in_ = index[p.older], index[p.newer]
        mo, mn = index[masked[p.older]], index[masked[p.newer]]
        cos_raw = [float(m[io] @ m[in_]) for m in parts]
        cos_masked = [float(m[mo] @ m[mn]) for m in parts]
        cos_raw, cos_masked = (cos_raw * 2)[:2], (cos_masked * 2)[:2]  # one model: its cosine in both places
        cos_cross = float(parts[0][mo] @ parts[0][in_] + parts[0][io] @ parts[0][mn]) / 2
        scalars.append(_scalars(p, cos_raw, cos_masked, cos_cross))
        m0 = parts[0]
        vectors.append(np.concatenate([np.abs(m0[io] - m0[in_]), m0[io] * m0[in_],
                                       np.abs(m0[mo] - m0[mn]), m0[mo] * m0[mn], m0[in_], m0[mn]]))
    return np.asarray(scalars, dtype=np.float32), np.asarray(vectors, dtype=np.float32)
