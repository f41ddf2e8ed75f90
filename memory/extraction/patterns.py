"""The rule extractor's regular expressions are data: `lexicons/<name>.toml` beside this module, one
file per module that reads them, compiled once when that module is imported.

A file holds groups of patterns (TOML tables); a module reads a group's patterns by name
(`patterns.question.wh`) or as a mapping (`Lexicon(**patterns.lexicon)`, `patterns.old_value.values()`
in file order).
- A pattern is Python `re` syntax in a TOML literal string, taken as written; a list of strings is
  one pattern written in parts, joined as they are (like adjacent string literals in Python).
- `⟨NAME⟩` stands for the fragment NAME of the file's `[fragments]` table: a piece several patterns
  share (a number, a unit, a word list). The angle brackets are not regex syntax, so a placeholder
  can never be read as part of a pattern. An unknown name is an error, as is a stray bracket.
- `flags` names the compile flags ("IGNORECASE", several joined by "|"): at the top of the file for
  every group, or in a group for that group.
"""
from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator, Mapping
from functools import reduce
from operator import or_
from pathlib import Path
from types import SimpleNamespace

__all__ = ["LEXICONS_DIR", "Patterns", "compile_patterns", "load_patterns"]

LEXICONS_DIR = Path(__file__).resolve().parent / "lexicons"

_PLACEHOLDER = re.compile(r"⟨(\w+)⟩")


class Patterns(Mapping[str, re.Pattern[str]]):
    """One group of a lexicon file: its compiled patterns by name, in file order."""

    def __init__(self, patterns: dict[str, re.Pattern[str]]):
        self._patterns = patterns

    def __getattr__(self, name: str) -> re.Pattern[str]:
        if name.startswith("_"):  # never look a private attribute up among the patterns (copy, pickle)
            raise AttributeError(name)
        try:
            return self._patterns[name]
        except KeyError:
            raise AttributeError(f"no pattern {name!r} in this group") from None

    def __getitem__(self, name: str) -> re.Pattern[str]:
        return self._patterns[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._patterns)

    def __len__(self) -> int:
        return len(self._patterns)


def load_patterns(name: str) -> SimpleNamespace:
    """The groups of `lexicons/<name>.toml`, compiled: `load_patterns("standing").zh.every`."""
    with (LEXICONS_DIR / f"{name}.toml").open("rb") as f:
        return compile_patterns(tomllib.load(f), source=f"{name}.toml")


def compile_patterns(document: dict, *, source: str) -> SimpleNamespace:
    """Compile a parsed lexicon document; every mistake raises ValueError naming where it is."""
    document = dict(document)
    file_flags = document.pop("flags", "")
    fragments = {key: _text(value, f"{source} [fragments] {key}") for key, value in document.pop("fragments", {}).items()}
    groups = {}
    for group, table in document.items():
        if not isinstance(table, dict):
            raise ValueError(f"{source}: {group!r} is not a group ([table]) of patterns")
        table = dict(table)
        flags = _flags(table.pop("flags", file_flags), f"{source} [{group}]")
        groups[group] = Patterns({key: re.compile(_expand(_text(value, f"{source} [{group}] {key}"), fragments,
                                                          f"{source} [{group}] {key}"), flags)
                                  for key, value in table.items()})
    return SimpleNamespace(**groups)


def _text(value: object, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(part, str) for part in value):
        return "".join(value)
    raise ValueError(f"{where}: a pattern is a string or a list of strings")


def _expand(text: str, fragments: dict[str, str], where: str) -> str:
    def fragment(m: re.Match[str]) -> str:
        if m.group(1) not in fragments:
            raise ValueError(f"{where}: unknown fragment ⟨{m.group(1)}⟩")
        return fragments[m.group(1)]

    expanded = _PLACEHOLDER.sub(fragment, text)  # a function's result is inserted as is: no escapes
    if "⟨" in expanded or "⟩" in expanded:
        raise ValueError(f"{where}: a bracket that is no ⟨NAME⟩ placeholder")
    return expanded


def _flags(names: object, where: str) -> re.RegexFlag:
    if not isinstance(names, str):
        raise ValueError(f"{where}: flags are flag names joined by '|'")
    try:
        return reduce(or_, (re.RegexFlag[n.strip()] for n in names.split("|") if n.strip()), re.RegexFlag(0))
    except KeyError as exc:
        raise ValueError(f"{where}: unknown flag {exc.args[0]!r}") from None
