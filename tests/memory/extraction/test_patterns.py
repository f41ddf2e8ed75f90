"""The extraction patterns are data (memory/extraction/lexicons/*.toml); the loader compiles them."""
import re
import tomllib

import pytest

from memory.extraction.patterns import LEXICONS_DIR, compile_patterns, load_patterns

DOCUMENT = r"""
flags = "IGNORECASE"

[fragments]
NUM = '[\d一二三]'

[zh]
flags = ""
every = ['每⟨NUM⟩+', '(?:天|周)']
named = '(?P<v>\w{1,2})'

[en]
times = '\b⟨NUM⟩+ times\b'
"""


def test_parts_are_joined_fragments_substituted_as_written_and_flags_apply():
    patterns = compile_patterns(tomllib.loads(DOCUMENT), source="test.toml")
    assert patterns.zh.every.pattern == r"每[\d一二三]+(?:天|周)"
    assert patterns.zh.named.pattern == r"(?P<v>\w{1,2})"  # regex braces and groups are no placeholders
    assert patterns.zh.every.flags & re.IGNORECASE == 0  # the group's flags replace the file's
    assert patterns.en.times.pattern == r"\b[\d一二三]+ times\b"
    assert patterns.en.times.flags & re.IGNORECASE
    assert patterns.en.times.search("Twice? no: 3 TIMES a week")
    assert list(patterns.zh) == ["every", "named"]  # file order
    assert dict(patterns.zh) == {"every": patterns.zh.every, "named": patterns.zh.named}


@pytest.mark.parametrize("document, message", [
    ("[g]\nx = 'a⟨NUMBER⟩'", "unknown fragment ⟨NUMBER⟩"),
    ("[g]\nx = 'a⟨NUM'", "no ⟨NAME⟩ placeholder"),
    ("[g]\nflags = 'IGNORECASE|LOUD'\nx = 'a'", "unknown flag 'LOUD'"),
    ("[g]\nx = 3", "a string or a list of strings"),
    ("x = 'a'", "not a group"),
])
def test_mistakes_fail_loudly_naming_the_place(document, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        compile_patterns(tomllib.loads(document), source="test.toml")


def test_missing_pattern_is_an_attribute_error():
    patterns = compile_patterns(tomllib.loads("[g]\nx = 'a'"), source="test.toml")
    with pytest.raises(AttributeError, match="'y'"):
        _ = patterns.g.y


@pytest.mark.parametrize("path", sorted(LEXICONS_DIR.glob("*.toml")), ids=lambda p: p.name)
def test_every_lexicon_file_compiles(path):
    groups = vars(load_patterns(path.stem))
    assert groups and all(len(group) for group in groups.values())
