"""English cues for the rule extractor: the patterns are data (lexicons/rules_en.toml), the flow is in rules.py."""
from __future__ import annotations

import re

from memory.extraction.lexicon import Lexicon
from memory.extraction.patterns import load_patterns
from memory.extraction.slots_en import event_subject_en, slot_en
from memory.extraction.text import strip_end, strip_leading

__all__ = ["EN"]

_PATTERNS = load_patterns("rules_en")  # memory/extraction/lexicons/rules_en.toml


def _do_not_remember(text: str) -> bool:
    if _PATTERNS.do_not_remember.phrase.search(text):
        return True
    # "forget this" asks us not to keep it; "don't forget this" asks the opposite.
    return any(not m.group("neg") for m in _PATTERNS.do_not_remember.forget.finditer(text))


def _is_question(text: str) -> bool:
    t = text.strip()
    if t.endswith("?"):
        return True
    # Without a question mark a wh-word or an auxiliary first asks only in a one-clause sentence: "When
    # you explain code, show me the diff" is an instruction a subordinate clause opens.
    return "," not in t and bool(_PATTERNS.question.wh.match(t) or _PATTERNS.question.inversion.match(t))


def _is_request(text: str) -> bool:
    return bool(_PATTERNS.request.cue.search(text.strip()))


def _strip_correction(text: str) -> tuple[str, list[str]]:
    correction, lead = _PATTERNS.correction, _PATTERNS.lexicon.correction_lead
    s = text
    while True:
        stripped = correction.self_error.sub("", lead.sub("", s, count=1), count=1)
        if stripped == s:
            break
        s = stripped
    s = strip_leading(lead, s)
    olds: list[str] = []
    m = correction.not_x_but_y.match(s)
    if m and m.group("pre").strip():
        olds.append(re.sub(r"^(?:in|at|on)\s+", "", m.group("old").strip(), flags=re.I))
        s = m.group("pre") + m.group("new") + m.group("post")
    for m2 in correction.y_not_x.finditer(s):
        olds.append(m2.group("old").strip())
    s = correction.y_not_x.sub("", s)
    return s.strip(" ,"), [o for o in olds if o]


def _finish(text: str) -> str:
    s = strip_end(text)
    return s[:1].upper() + s[1:] if s else s


EN = Lexicon(
    lang="en", **_PATTERNS.lexicon, old_value=tuple(_PATTERNS.old_value.values()),
    do_not_remember=_do_not_remember, is_question=_is_question, is_request=_is_request,
    strip_correction=_strip_correction, slot=slot_en, event_subject=event_subject_en, finish=_finish,
)
