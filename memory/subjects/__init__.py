"""Subject matching: which statement is about the same attribute as which (DESIGN §5).

A standing statement (preference, fact, profile) is about a subject (提醒方式, 主力拖拉机, 维修师傅)
and states a value. `parse` separates the two with general signals (part of speech, the value
markers 是/用/改成/换成/in/is/switched to, numbers, names, models), `match` scores a pair of
statements on the subject alone and decides duplicate / supersede / coexist / possible conflict.
Pure functions plus the embedder: no ORM, so the pair benchmark and the write path share them.
"""
from memory.subjects.judge import Existing, judge
from memory.subjects.match import Decision, PairFeatures, decide, pair_features
from memory.subjects.parts import StatementParts, parse

__all__ = ["Existing", "judge", "Decision", "PairFeatures", "StatementParts", "decide", "pair_features", "parse"]
