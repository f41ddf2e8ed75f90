"""Score two statements on their subject and decide what the newer does to the older.

Signals, strongest first: the same slot key; an identifier or a marker class that differs (1号 vs
2号 收割机, 农场在… vs 农场有…) rules a pair out; the attribute heads and subject words (with the
synonym table); the cosine of the two statements with their values masked (catches wording the
table lacks); the newer naming the older's value as gone ("李明离职了"); a change cue. Weights and
thresholds are per embedding model (memory/thresholds.py), tuned on the pair set's tuning half
(evaluation/pairs/, `python -m bench.pairs --tune`).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from memory.choices import SUBJECT_KINDS, MemoryKind
from memory.subjects.parts import StatementParts

__all__ = ["Decision", "PairFeatures", "decide", "distinct", "pair_features", "subject_score"]

_SPECIFIC = frozenset({"loc", "have", "name"})
_GENERIC_HEADS = frozenset({"@be", "@change", "@have"})

WEIGHTS = {"head": 0.45, "lex": 0.2, "emb": 0.3, "old": 0.25, "cue": 0.05}


@dataclass(frozen=True)
class PairFeatures:
    slot_equal: bool
    ident_conflict: bool
    pred_conflict: bool
    head: float  # 1 when the attributes' heads match
    lex: float  # weighted overlap of subject words
    masked: float  # cosine of the value-masked statements
    full: float  # cosine of the statements as written
    value_same: bool
    old_named: bool  # the newer says the older's value no longer holds
    cue: bool
    heads_differ: bool = False  # both name an attribute, and not the same one
    value_differs: bool = False  # both give a value, and no value of one is related to the other's
    speaker_differs: bool = False  # said by (about) different people: never one subject
    value_restated: bool = False  # a value of the older is among the newer's words

    def as_dict(self) -> dict:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in asdict(self).items()}


@dataclass(frozen=True)
class Decision:
    action: str  # duplicate | supersede | conflict | coexist
    score: float
    features: PairFeatures | None = None
    by_judge: bool = False  # the learned judge, not the rules, decided it (memory/services/subject_tier.py)
    vetoed: bool = False  # the rules' replace the learned judge read as two memories (subject_tier.judge_veto)


def _char_related(a: str, b: str) -> bool:
    """Chinese words segmented differently share characters ("维修师傅" / "师傅"); English words are
    compared as stems only ("accountant" is not "account")."""
    if a.isascii() or b.isascii():
        return a == b
    return len(a) >= 2 and len(b) >= 2 and (a in b or b in a)


def _head_match(a: StatementParts, b: StatementParts) -> float:
    """1 when the attributes' heads match (synonyms are already folded; "维修师傅"/"师傅" match on
    characters). A head is matched against the other's heads only: "农场在…" (head 农场) and
    "农场面积是…" (head 面积) are about different attributes of the same farm."""
    for h in a.heads:
        for g in b.heads:
            if h in _GENERIC_HEADS or g in _GENERIC_HEADS:
                continue  # "I want X" / "I want Y": a bare copula or stance verb names no attribute
            if h == g or (not h.startswith("@") and not g.startswith("@") and _char_related(h, g)):
                return 1.0
    return 0.0


def _lex(a: StatementParts, b: StatementParts) -> float:
    def weight(t: str, parts: StatementParts) -> float:
        return 0.3 if t in parts.weak else 1.0

    sa, sb = set(a.terms), set(b.terms)
    if not sa and not sb:
        return 0.0
    inter = sum(weight(t, a) for t in sa & sb)
    # Words segmented differently ("保养提醒" / "保养 提醒") still count, at half weight.
    inter += 0.5 * sum(weight(t, a) for t in sa - sb if any(_char_related(t, u) for u in sb - sa))
    union = sum(weight(t, a) for t in sa | sb)
    return min(1.0, inter / union) if union else 0.0


KIND_HEAD = 0.5


def _shares_subject_word(a: StatementParts, b: StatementParts) -> bool:
    strong_a, strong_b = a.strong_terms, b.strong_terms
    return any(t == u or _char_related(t, u) for t in strong_a for u in strong_b)


def _nested_head(a: StatementParts, b: StatementParts, values_related: bool) -> bool:
    """One statement names the thing, the other an attribute of that thing: "记录仪用的是精创的" /
    "记录仪品牌是精创", "my salary goes to my Chase account" / "my salary account is now at Citi".
    The thing alone does not say which attribute ("农场在齐齐哈尔" / "农场面积是三百亩" are two),
    so it counts only when the values are the same or one value is of the kind the other names
    (a "Chase account" is an account)."""
    for x, y in ((a, b), (b, a)):
        named = {h for h in y.heads if not h.startswith("@")}
        if not any(h in y.strong_terms for h in x.heads if not h.startswith("@")) or not named:
            continue
        if values_related or any(v.endswith(h) and v != h for v in x.values for h in named):
            return True
    return False


def distinct(older: StatementParts, newer: StatementParts) -> bool:
    """Two statements that name different things, or give one attribute different values, are never
    the same memory, however close their embeddings (1号/2号收割机的保养周期 score above 0.85).
    Neither are two people's statements ("Caroline: I love it" / "Melanie: I love it")."""
    if older.speaker != newer.speaker:
        return True
    if older.idents and newer.idents and not (older.idents & newer.idents):
        return True
    if older.values and newer.values and _head_match(older, newer):
        # The same attribute with another value is an update, which the subject tier decides.
        return not any(v == w or _char_related(v, w) for v in older.values for w in newer.values)
    return False


def pair_features(older: StatementParts, newer: StatementParts, *, masked: float, full: float,
                  slot_equal: bool = False) -> PairFeatures:
    ident_conflict = bool(older.idents and newer.idents and not (older.idents & newer.idents))
    spec_o, spec_n = older.preds & _SPECIFIC, newer.preds & _SPECIFIC
    pred_conflict = bool(spec_o and spec_n and not (spec_o & spec_n))
    related = any(v == w or _char_related(v, w) for v in older.values for w in newer.values)
    value_same = related and not (set(older.values) & set(newer.old_values))
    value_differs = bool(older.values and newer.values) and not related
    old_named = bool(set(older.values) & set(newer.old_values)) or any(
        len(v) >= 2 and any(v in o or o in v for o in newer.old_values) for v in older.values)
    head = _head_match(older, newer)
    kind_head = False
    if not head and older.value_kinds & newer.value_kinds and _shares_subject_word(older, newer):
        # "日程提醒默认提前十五分钟" / "提醒时间…统一提前半小时": the attribute is named only by the
        # kind of its value; one kind of value on a shared subject word is half a head match.
        head, kind_head = KIND_HEAD, True
    if not head and _nested_head(older, newer, related):
        head, kind_head = KIND_HEAD, True
    named = lambda p: any(not h.startswith("@") for h in p.heads)  # noqa: E731
    return PairFeatures(slot_equal=slot_equal, ident_conflict=ident_conflict, pred_conflict=pred_conflict,
                        speaker_differs=older.speaker != newer.speaker,
                        value_restated=any(v == t or _char_related(v, t) for v in older.values
                                           for t in (*newer.values, *newer.terms)),
                        heads_differ=not head and not kind_head and named(older) and named(newer), head=head,
                        lex=_lex(older, newer), masked=float(masked), full=float(full),
                        value_same=value_same, value_differs=value_differs, old_named=old_named, cue=newer.cue)


def subject_score(f: PairFeatures, *, masked_lo: float, masked_hi: float) -> float:
    if f.slot_equal:
        return 1.0
    if f.ident_conflict or f.pred_conflict or f.speaker_differs:
        return 0.0
    emb = min(1.0, max(0.0, (f.masked - masked_lo) / max(1e-6, masked_hi - masked_lo)))
    score = (WEIGHTS["head"] * f.head + WEIGHTS["lex"] * f.lex + WEIGHTS["emb"] * emb
             + WEIGHTS["old"] * f.old_named + WEIGHTS["cue"] * f.cue)
    # Two named attributes that differ (农场在… / 农场的面积…): the rest of the evidence counts half.
    return score * 0.5 if f.heads_differ and not f.old_named else score


def decide(f: PairFeatures, *, same: float, conflict: float, masked_lo: float, masked_hi: float,
           duplicate: float, kinds: tuple[str, str] = (MemoryKind.FACT, MemoryKind.FACT),
           cue_conflict: float | None = None, cue_conflict_masked: float = 0.0, supersede_alike: float = 0.0) -> Decision:
    """What the newer statement does to the older one. Events (and anything not standing) never
    replace anything; a pair on the same subject is a duplicate when it states the same value."""
    if not all(k in SUBJECT_KINDS for k in kinds):
        return Decision("coexist", 0.0, f)
    score = subject_score(f, masked_lo=masked_lo, masked_hi=masked_hi)
    if score >= same:
        if f.value_same and not f.old_named:
            return Decision("duplicate", score, f)
        # A close embedding alone makes a paraphrase a duplicate only when the values could not be
        # told apart: the embedding scores 佳木斯 / 齐齐哈尔 above 0.9, so two different values of one
        # attribute are an update, never a duplicate.
        if f.full >= duplicate and not f.cue and not f.old_named and not f.ident_conflict and not f.value_differs:
            return Decision("duplicate", score, f)
        if not (f.slot_equal or f.cue or f.old_named or f.value_differs):
            # Nothing says the older no longer holds: no change cue, no old value named as gone, no
            # second value of the attribute. Saying the older's value again restates it
            # (习惯用微信沟通 / 发微信最方便: the newer takes its place, possibly as another kind);
            # otherwise a shared head word alone does not replace a statement ("My store is open" /
            # "My store has been a roller coaster"): both stand.
            if not f.value_restated:
                return Decision("coexist", score, f)
        if f.full < supersede_alike and f.masked < supersede_alike and not (f.slot_equal or f.old_named):
            # Only words tie the two (a shared head, a change cue): they read unlike as written and with
            # the values masked ("I commute to work by bike" / "Joined the climbing gym near work"), and
            # every statement of a user's life shares some word with many others. Both stand.
            return Decision("coexist", score, f)
        return Decision("supersede", score, f)
    if score >= conflict:
        return Decision("conflict", score, f)
    if cue_conflict is not None and f.cue and f.full >= cue_conflict and f.masked >= cue_conflict_masked and not (
            f.ident_conflict or f.pred_conflict or f.speaker_differs or f.value_same):
        # "我平时喝美式" / "最近改喝拿铁了": the change is announced, the two read alike, and the parts
        # could not name the attribute of either. Not enough to replace (that would hide a true memory
        # when wrong); enough to put the newer first and ask an operator.
        return Decision("conflict", score, f)
    return Decision("coexist", score, f)
