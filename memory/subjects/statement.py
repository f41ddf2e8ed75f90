"""The parts of one standing statement (shared by the Chinese and English parsers)."""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["PartsFound", "StatementParts", "norm_value"]


@dataclass(frozen=True)
class StatementParts:
    lang: str
    terms: tuple[str, ...]  # canonical subject words, in order (weak words included, marked by `weak`)
    weak: frozenset[str]
    heads: frozenset[str]  # the attribute each clause is about (last strong word before its value)
    idents: frozenset[str]  # identifiers that pick one thing out ("1号", "A3", "#2"): part of the subject
    values: tuple[str, ...]  # stated values, normalised
    old_values: tuple[str, ...]  # values of negated clauses ("不用短信了" -> 短信)
    preds: frozenset[str]  # marker classes used (be / loc / have / name / change)
    cue: bool  # a change cue is present
    masked: str  # the statement with its values replaced by a placeholder
    # Kinds of value the statement states (a clock time, a duration, a temperature, an amount of
    # money): "提前十五分钟" names its attribute (how early) only through the kind of its value.
    value_kinds: frozenset[str] = frozenset()
    # Who the statement is about when a transcript line names its speaker ("Caroline: I moved to
    # Boston", memory/extraction/rules.py); None: the user. Casefolded.
    speaker: str | None = None

    @property
    def strong_terms(self) -> set[str]:
        return {t for t in self.terms if t not in self.weak}


def norm_value(text: str) -> str:
    return re.sub(r"[\s，,。.！!？?；;：:、\"'“”‘’()（）-]+", "", text).casefold()


class PartsFound:
    """What a language walker gathers, clause by clause; ``parts()`` hands it over: terms deduplicated
    in order, the weak ones marked, values and old values normalised (empty ones dropped)."""

    def __init__(self, *, lang: str, weak_words) -> None:
        self.lang, self.weak_words = lang, weak_words
        self.terms: list[str] = []
        self.heads: set[str] = set()
        self.idents: set[str] = set()
        self.values: list[str] = []
        self.old_values: list[str] = []
        self.preds: set[str] = set()

    def parts(self, *, cue: bool, masked: str) -> StatementParts:
        def normed(raw: list[str]) -> tuple[str, ...]:
            return tuple(n for n in (norm_value(v) for v in raw) if n)

        return StatementParts(lang=self.lang, terms=tuple(dict.fromkeys(self.terms)),
                              weak=frozenset(t for t in self.terms if t in self.weak_words), heads=frozenset(self.heads),
                              idents=frozenset(self.idents), values=normed(self.values), old_values=normed(self.old_values),
                              preds=frozenset(self.preds), cue=cue, masked=masked)
