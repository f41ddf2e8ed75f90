"""JSON bodies, refused up front when the standard library would accept what nothing after it can handle.

`json.loads` accepts shapes that fail later, as a 500 instead of a 400, or that a console would show wrongly:
- deep nesting: ~100 kB of `[[[…]]]` raises RecursionError, which neither DRF nor the MCP transport
  expects; below that, anything nested deeper than MySQL's JSON limit (100) is rejected by the database;
- lone UTF-16 surrogates (`"\\ud800"`): valid JSON escapes, but not Unicode, so they fail when the value
  is encoded (UTF-8 for MySQL, SQLite and tiktoken). CharFields refuse them; JSON-valued fields
  (task `data`, entity `attributes`, tool-call `arguments`, context `tools`) did not.
- bidirectional control characters (U+202A-U+202E, U+2066-U+2069), which make text display
  differently from what it is in the console and in logs.
All are checked once here, for the REST API (JSONParser) and MCP (`loads_checked`).
"""
import json
import re
from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError, ValidationError

__all__ = ["MAX_JSON_DEPTH", "BodyProblem", "JSONParser", "body_problem", "loads_checked"]

# Far above any real body (task data, tool schemas), below MySQL's JSON depth limit of 100.
MAX_JSON_DEPTH = 64
# After decoding, a valid surrogate pair is one non-BMP character: any surrogate left is a lone one.
_SURROGATE = re.compile("[\ud800-\udfff]")
# Bidirectional embeddings, overrides and isolates (LRE RLE PDF LRO RLO, LRI RLI FSI PDI): they reorder
# how a console, a log viewer or an operator's terminal shows the text around them ("Trojan Source"),
# so stored text could read differently from what it is. Refused, not silently removed: the client
# learns which field it was. The plain marks LRM/RLM (U+200E/F) only set direction and stay allowed.
BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")


class BodyProblem(ValueError):
    """`field` is the top-level body field that holds the problem (None: the body itself)."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


def _path(parts: tuple) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def body_problem(data: Any) -> BodyProblem | None:
    """The first lone surrogate or over-deep nesting in a decoded body, naming where it is. Iterative,
    so the walk itself cannot recurse too deeply."""
    stack: list[tuple[Any, tuple, int]] = [(data, (), 0)]
    while stack:
        value, parts, depth = stack.pop()
        field = next((p for p in parts[:1] if isinstance(p, str)), None)
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return BodyProblem(f"{_path(parts) or 'The body'} contains a lone UTF-16 surrogate; "
                                   "text must be valid Unicode.", field)
            if BIDI_CONTROLS.search(value):
                return BodyProblem(f"{_path(parts) or 'The body'} contains a bidirectional control character "
                                   "(U+202A-U+202E, U+2066-U+2069); remove it.", field)
            continue
        if not isinstance(value, (dict, list)):
            continue
        if depth >= MAX_JSON_DEPTH:
            return BodyProblem(f"{_path(parts) or 'The body'} is nested deeper than {MAX_JSON_DEPTH} levels.", field)
        if isinstance(value, dict):
            for key, item in value.items():
                if _SURROGATE.search(key):
                    return BodyProblem(f"A key in {_path(parts) or 'the body'} contains a lone UTF-16 surrogate; "
                                       "text must be valid Unicode.", field)
                if BIDI_CONTROLS.search(key):
                    return BodyProblem(f"A key in {_path(parts) or 'the body'} contains a bidirectional control "
                                       "character; remove it.", field or key)
                stack.append((item, parts + (key,), depth + 1))
        else:
            stack.extend((item, parts + (i,), depth + 1) for i, item in enumerate(value))
    return None


def loads_checked(raw: bytes | str) -> Any:
    """json.loads for MCP: every refusal is a ValueError (BodyProblem), as a syntax error is."""
    try:
        data = json.loads(raw)
    except RecursionError:
        raise BodyProblem(f"The body is nested deeper than {MAX_JSON_DEPTH} levels.") from None
    problem = body_problem(data)
    if problem:
        raise problem
    return data


class JSONParser(parsers.JSONParser):
    """DRF's parser plus the two refusals above: a ValidationError naming the field when the problem is
    inside one (as every other field error), a ParseError when it is the body itself."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(f"JSON parse error - nested deeper than {MAX_JSON_DEPTH} levels.") from None
        problem = body_problem(data)
        if problem is None:
            return data
        if problem.field is None:
            raise ParseError(f"JSON parse error - {problem}")
        raise ValidationError({problem.field: [str(problem)]})
