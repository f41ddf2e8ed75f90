"""Chinese cues for the rule extractor: the patterns are data (lexicons/rules_zh.toml), the flow is in rules.py."""
from __future__ import annotations

import re

from memory.extraction.lexicon import Lexicon
from memory.extraction.patterns import load_patterns
from memory.extraction.slots_zh import event_subject_zh, slot_zh
from memory.extraction.text import strip_end, strip_leading

__all__ = ["ZH"]

_PATTERNS = load_patterns("rules_zh")  # memory/extraction/lexicons/rules_zh.toml


def _do_not_remember(text: str) -> bool:
    return bool(_PATTERNS.do_not_remember.phrase.search(text))


def _is_question(text: str) -> bool:
    return bool(_PATTERNS.question.end.search(text) or _PATTERNS.question.word.search(text))


def _is_request(text: str) -> bool:
    return bool(_PATTERNS.request.cue.search(strip_end(text)))


def _strip_correction(text: str) -> tuple[str, list[str]]:
    correction = _PATTERNS.correction
    s = correction.self_error.sub("", text)
    s = strip_leading(_PATTERNS.lexicon.correction_lead, s)
    olds: list[str] = []
    m = correction.not_x_but_y.match(s)
    if m and m.group("pre").strip():
        old, new = m.group("old").strip(), m.group("new").strip()
        olds.append(re.sub(r"^(?:在|用|住在|叫)", "", old))
        # "我们农场不是在佳木斯，是在齐齐哈尔" -> "我们农场在齐齐哈尔"; "车不是白的，是黑的" -> "车是黑的"
        joiner = "" if correction.predicate_start.match(new) or correction.predicate_start.match(old) else "是"
        s = m.group("pre") + joiner + new + m.group("post")
    for m2 in list(correction.y_not_x.finditer(s)):
        olds.append(re.sub(r"^(?:在|用|住在|叫)", "", m2.group("old").strip()))
    s = correction.y_not_x.sub("", s)
    return s.strip("，, "), [o for o in olds if o]


def _finish(text: str) -> str:
    return _PATTERNS.finish.particles.sub("", strip_end(text)).strip()


ZH = Lexicon(
    lang="zh", **_PATTERNS.lexicon, old_value=tuple(_PATTERNS.old_value.values()),
    do_not_remember=_do_not_remember, is_question=_is_question, is_request=_is_request,
    strip_correction=_strip_correction, slot=slot_zh, event_subject=event_subject_zh, finish=_finish,
)
