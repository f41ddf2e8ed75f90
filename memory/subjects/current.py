"""Current and history at read time (DESIGN §6): is a newer statement about the same subject as an
older standing one, so that the newer is current and the older is what held before?

The write path decides this once, when the newer statement arrives (memory/subjects/judge.py), and
leaves both standing when it is unsure. Recall asks again, per query, among the few items that
answer it, and only presents the older as history: nothing is superseded, so a wrong answer costs
a line's place, never a memory. It is built from the same signals as the write path's judge (the
parsed subject parts and `subject_score`), and it is conservative by construction:

- only a preference or fact can become history (an event is dated already: events never make
  events history), and only through a later item of the user's own (a standing memory, an event,
  or a user turn): an assistant's words, a model suggestion or a task-scoped instruction never make
  a user's memory history;
- the newer must say that something changed: a change cue ("改成", "现在", "now", "moved") or the
  older's value named as gone ("老张调走了"). Two look-alike facts stated plainly (two assets'
  settings, two children's allergies, two branches' hours) carry no such word and stay current;
- another identifier, another kind of predicate, another speaker, or the same value said again
  (a restatement) rules the pair out;
- and the two must be about one subject: a subject score at or above `subject` with the statements
  at least `alike` as written, or a cosine as written of at least `close`, or an open possible
  conflict between them (the write path's judge found them alike but left both standing).

The value-masked cosine of the write path is replaced by the cosine as written (the vectors recall
already holds): on the tuning sets the decisions were the same, and no text is encoded per query.
The thresholds are settings (RECALL_HISTORY), tuned on the tuning halves (`python -m bench.history`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from memory.choices import SUBJECT_KINDS, MemoryKind, MemoryScope
from memory.subjects import vocabulary as V
from memory.subjects.match import PairFeatures, pair_features, subject_score
from memory.subjects.parts import parse

__all__ = ["Said", "Verdict", "anchored_change", "can_replace", "may_say_change", "newer_is_current"]

_ZH_WORDS = V.ZH_CHANGE_CUES + V.ZH_NEGATION
_EN_WORDS = V.EN_CHANGE_CUES + V.EN_NEGATION
_ZH_NO_LONGER = re.compile(r"不[\u4e00-\u9fff]")

# The kinds a newer item may be to make an older one history: a standing statement, an event that
# tells the change ("sold the old car, bought…"), or a user turn shown as an episode.
_NEWER_KINDS = frozenset({MemoryKind.PREFERENCE, MemoryKind.FACT, MemoryKind.EVENT, MemoryKind.EPISODE})


@dataclass(frozen=True)
class Said:
    """One recalled item as the rule reads it."""
    content: str
    kind: str
    scope: str = MemoryScope.USER
    user_stated: bool = True  # an episode of a user turn (assistant turns and suggestions are not)


@dataclass(frozen=True)
class Verdict:
    history: bool
    reason: str
    score: float = 0.0
    features: PairFeatures | None = None
    judge: float | None = None  # the learned judge's P(replaces), when it decided

    def as_dict(self) -> dict:
        out = {"reason": self.reason, "subject_score": round(self.score, 3)}
        if self.judge is not None:
            out["judge"] = round(self.judge, 3)
        if self.features is not None:
            f = self.features
            out.update(cosine=round(f.full, 3), cue=f.cue, old_named=f.old_named, head=f.head)
        return out


def may_say_change(text: str) -> bool:
    """False only when the parsers could find neither a change cue nor a negated clause (so no old value
    named as gone): a substring test, run before any text is parsed (about a millisecond each)."""
    if any(w in text for w in _ZH_WORDS) or (_ZH_NO_LONGER.search(text) and "了" in text):
        return True
    lower = f" {text.lower()} "
    return any(w in lower for w in _EN_WORDS)


def can_replace(older: Said, newer: Said) -> bool:
    """The kinds and scopes alone allow the pair (cheap: no text is read)."""
    if older.kind not in SUBJECT_KINDS or newer.kind not in _NEWER_KINDS:
        return False
    if newer.scope == MemoryScope.TASK and older.scope != MemoryScope.TASK:
        return False  # a one-time instruction never makes a standing memory history
    return newer.user_stated


def newer_is_current(older: Said, newer: Said, *, cosine: float, limits, subject: float, alike: float,
                     close: float, conflict: bool = False, judged: bool = False) -> Verdict:
    """`cosine`: of the two items as written (stored vectors). `limits`: the model's Thresholds
    (memory/thresholds.py) for the subject score's embedding term; `subject`, `alike`, `close`:
    RECALL_HISTORY's thresholds. `conflict`: the write path's judge left the pair as a possible
    conflict (it found them alike, value-masked cosine included, but could not be sure); `judged`: that
    conflict came from the learned judge's band (MemoryConflict.signals["judge"])."""
    if not can_replace(older, newer):
        return Verdict(False, "kinds or scopes never replace")
    a, b = parse(older.content), parse(newer.content)
    f = pair_features(a, b, masked=cosine, full=cosine)
    if f.ident_conflict or f.pred_conflict or f.speaker_differs:
        return Verdict(False, "another thing, predicate or speaker", features=f)
    if judged:
        # The write path's learned judge read the pair as a likely change (its band, under the replace
        # floor) and left both standing: its reading stands for the change word, which no cue list can
        # hold for an open class of wordings ("Hung my license at Compass as of Monday").
        score = subject_score(replace(f, masked=cosine), masked_lo=limits.masked_lo, masked_hi=limits.masked_hi)
        return Verdict(True, "the learned judge's possible change", score, f)
    if f.value_same and not f.old_named:
        return Verdict(False, "the same value said again", features=f)
    if not (f.cue or f.old_named):
        return Verdict(False, "no change is said", features=f)
    score = subject_score(replace(f, masked=cosine), masked_lo=limits.masked_lo, masked_hi=limits.masked_hi)
    if conflict:
        return Verdict(True, "possible conflict, changed", score, f)
    if score >= subject and cosine >= alike:
        return Verdict(True, "same subject, changed", score, f)
    if cosine >= close:
        return Verdict(True, "close statement, changed", score, f)
    return Verdict(False, "not the same subject", score, f)


def anchored_change(older: Said, newer: Said, p_replaces: float, *, cosine: float) -> Verdict:
    """Two items that both answer the query, worded too far apart for the rule's cosine, which the write
    path's learned judge read as a change (P(replaces) `p_replaces`, kept only when sure): history unless
    the parsers see another thing, predicate or speaker (two look-alike facts stay current)."""
    if not can_replace(older, newer):
        return Verdict(False, "kinds or scopes never replace")
    f = pair_features(parse(older.content), parse(newer.content), masked=cosine, full=cosine)
    if f.ident_conflict or f.pred_conflict or f.speaker_differs:
        return Verdict(False, "another thing, predicate or speaker", features=f)
    return Verdict(True, "both answer the query; the learned judge read a change", features=f, judge=p_replaces)
