"""What a language has to provide to the rule extractor: cue patterns and a few text surgeries.

One flow (memory/extraction/rules.py) runs over every language; `rules_zh.py` and `rules_en.py`
build a language's Lexicon from its patterns (lexicons/rules_<lang>.toml). A cue that is a bare
keyword is a compiled pattern, and so is a value read from one named group (`subjectless`,
`old_values` read them the same way in every language); anything needing more than a search (a
correction that names the old value, a question that has no question mark) is a function.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from memory.extraction.slots import SlotParts
from memory.extraction.text import strip_end

Pattern = re.Pattern[str]


@dataclass(frozen=True)
class Lexicon:
    lang: str
    do_not_remember: Callable[[str], bool]
    forget_request: Pattern  # "forget my ex's address": a request about what was said before, not a statement
    is_question: Callable[[str], bool]
    is_request: Callable[[str], bool]
    proposal: Pattern  # "我们开会吧" / "let's ...": a suggestion to do something now, not a statement
    remember_lead: Pattern  # "记住，" / "remember that": an explicit request to keep the statement
    filler_lead: Pattern  # "对了，" / "by the way," carries nothing
    task_marker: Pattern  # "这次" / "this time"
    task_instruction: Pattern  # ...together with an instruction word, so "这次大修花了两万" is not one
    task_today: Pattern  # "今天只": expires with the day
    long_term: Pattern  # explicit standing instructions and likes
    habit: Pattern  # "我平时用" / "is my main": tool choices, stored as preferences
    correction_lead: Pattern
    correction_any: Pattern
    strip_correction: Callable[[str], tuple[str, list[str]]]  # -> (corrected statement, old values)
    bare_value: Pattern  # "是齐齐哈尔" / "it's in Harbin": a statement without a subject, its value in group v
    migration: Pattern
    update: Pattern
    now_time: Pattern  # when a state holds or the level it reached ("现在/these days", "调到800小时"): what an event needs to leave one
    old_value: tuple[Pattern, ...]  # "从X迁移" / "from X to": where a change names the value it leaves (group old)
    opinion: Pattern
    first_person: Pattern
    suggestion: Pattern
    slot: Callable[[str, str], SlotParts | None]
    event_subject: Callable[[str], str]
    finish: Callable[[str], str]  # last touch on stored content

    def subjectless(self, text: str) -> str | None:
        """"是齐齐哈尔" -> "齐齐哈尔"; None when a subject is present."""
        m = self.bare_value.match(strip_end(text))
        return m.group("v").strip() if m else None

    def old_values(self, text: str) -> list[str]:
        """The values a change says it leaves, pattern by pattern."""
        return [m.group("old").strip() for p in self.old_value for m in p.finditer(text) if m.group("old").strip()]
