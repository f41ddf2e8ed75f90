"""Temporal scope of a user sentence, read from its function words (issue 15; D25).

Whether a sentence is worth keeping, and as what, is the learned gate's to say (memory/learn/gate.py);
this module keeps the two readings of *when* a statement holds that the gate uses as a closed class
and as a signal:

- task scope: a deictic-now anchor (今天/今晚/这+量词/本+量词/这次, this time/for this X/for now/tonight)
  together with a provisional instruction (先/暂时/只/就行/不用 or an English imperative) marks the
  sentence as an instruction for the task at hand, which must never become a standing preference.
  "以后/每次/默认/一直" (lasting) overrides it;
- onset: "从下个月起 / starting next month", from when a new state holds.

Only function words decide (the patterns are in lexicons/standing.toml): no domain noun decides anything.
"""
from __future__ import annotations

import re

from memory.extraction.patterns import load_patterns

__all__ = ["onset", "onset_at", "reverts", "task_scope"]

# The patterns, by language: memory/extraction/lexicons/standing.toml.
_PATTERNS = load_patterns("standing")
_ZH, _EN = _PATTERNS.zh, _PATTERNS.en


def task_scope(s: str, lang: str) -> bool:
    """An instruction for the task at hand only ("今天这份先发Word版", "for this order, round up")."""
    if lang == "zh":
        if _ZH.lasting.search(s) or not _ZH.deictic.search(s):
            return False
        # "这次大修花了两万" / "今天早上投影仪坏了": an occasion that happened is not an instruction.
        return bool(_ZH.provisional.search(s)) and not _ZH.past_done.search(s)
    if _EN.lasting.search(s):
        return False
    m = _EN.deictic.search(s)
    if not m:
        return False
    # What is left once the anchor phrase is removed must be an instruction: an imperative verb
    # ("leave out the billing codes") or a provisional "only/just/skip".
    rest = (s[:m.start()] + " " + s[m.end():]).strip(" ,;:-")
    rest = re.sub(r"^(?:just|only|please)\s+", "", rest, flags=re.I)
    return bool(rest) and not _EN.not_imperative.match(rest)


def onset(s: str, lang: str) -> bool:
    """"从下个月起 / starting next month": the sentence says from when a new state holds."""
    return bool((_ZH.onset if lang == "zh" else _EN.onset).search(s))


def onset_at(s: str, times, lang: str) -> bool:
    """One of the sentence's times (`times`: TimeRefs of s) says from when a state holds ("下周起发货全换极兔",
    "今天开始去心内科报到", "as of today the night shift is Priya's"): it dates a change, not an occurrence."""
    if lang == "zh":
        return any(_ZH.onset_after.match(s[t.end:]) for t in times)
    return any(_EN.onset_before.search(s[:t.start]) for t in times)


def reverts(s: str, lang: str) -> re.Match[str] | None:
    """"下次还是照旧", "back to normal after that": what the message asked holds until the usual comes back."""
    return (_ZH.reverts if lang == "zh" else _EN.reverts).search(s)
