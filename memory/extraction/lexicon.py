"""What a language has to provide to the rule extractor: cue patterns and a few text surgeries.

One flow (memory/extraction/rules.py) runs over every language; `rules_zh.py` and `rules_en.py`
only hold the data. A cue that is a bare keyword is a compiled pattern; anything needing more
than a search (a correction that names the old value, a question that has no question mark) is
a function.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from memory.extraction.slots import SlotParts

Pattern = re.Pattern[str]


@dataclass(frozen=True)
class Lexicon:
    lang: str
    do_not_remember: Callable[[str], bool]
    is_question: Callable[[str], bool]
    is_request: Callable[[str], bool]
    proposal: Pattern  # "我们开会吧" / "let's ...": a suggestion to do something now, not a statement
    remember_lead: Pattern  # "记住，" / "remember that": an explicit request to keep the statement
    filler_lead: Pattern  # "对了，" / "by the way," carries nothing
    chit_chat: Pattern
    task_marker: Pattern  # "这次" / "this time"
    task_instruction: Pattern  # ...together with an instruction word, so "这次大修花了两万" is not one
    task_today: Pattern  # "今天只": expires with the day
    long_term: Pattern  # explicit standing instructions and likes
    habit: Pattern  # "我平时用" / "is my main": tool choices, stored as preferences
    correction_lead: Pattern
    correction_any: Pattern
    strip_correction: Callable[[str], tuple[str, list[str]]]  # -> (corrected statement, old values)
    subjectless: Callable[[str], str | None]  # "是齐齐哈尔" -> "齐齐哈尔"; None when a subject is present
    migration: Pattern
    update: Pattern
    old_values: Callable[[str], list[str]]
    opinion: Pattern
    first_person: Pattern
    fact_predicate: Pattern  # a statement, not a feeling: "是/在/有/用", "have/use/own"
    event_verb: Pattern
    completion: Pattern
    asset: Pattern
    suggestion: Pattern
    slot: Callable[[str, str], SlotParts | None]
    event_subject: Callable[[str], str]
    finish: Callable[[str], str]  # last touch on stored content
