"""Importance prior of a new memory (0..1), shared by the rule and LLM extractors.

It feeds ranking and eviction (value = recency x frequency x importance), so it encodes what
hurts most when lost, not how true something is:
- preferences are standing instructions the user gave on purpose; forgetting them is the most
  visible failure of a memory service -> highest base;
- facts about the user/organisation come next; events are dated and lose relevance with time;
- model suggestions are unconfirmed, and task-scoped context dies with its task anyway;
- a correction means the user already saw us get it wrong once: it must win over the old value
  in ranking, so it gets the largest bump; other updates (migrations, changed preferences) a
  smaller one; an explicit "记住 / remember" adds a little.
Chit-chat never reaches this point: the extractor returns no candidate for it.
"""
from __future__ import annotations

_BASE = {"preference": 0.8, "fact": 0.7, "event": 0.6, "suggestion": 0.4, "context": 0.3}
_TASK_CAP = 0.3


def importance_for(*, kind: str, scope: str = "user", change: str | None = None, explicit: bool = False) -> float:
    score = _BASE.get(kind, 0.5)
    if change == "correction":
        score += 0.15
    elif change:
        score += 0.1
    if explicit:
        score += 0.1
    if scope == "task":
        score = min(score, _TASK_CAP)
    return round(min(score, 1.0), 2)
