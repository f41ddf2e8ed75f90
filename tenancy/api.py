"""Small API building blocks shared by every app's views."""
from django.conf import settings
from rest_framework import serializers
from rest_framework.pagination import CursorPagination

from tenancy.parsers import BIDI_CONTROLS

# The largest id a BIGINT column holds. Every id (or version) in a body is capped with it: a larger one
# is a 400 here, where SQLite would raise OverflowError (a 500) in an `IN (...)` lookup.
MAX_DB_INT = 2**63 - 1


def at_most(value, limit: int, unit: str = ""):
    """``value`` itself when it (a number, or the length of a text or list) is at most ``limit``; a 400
    "At most <limit> <unit>." otherwise. Callers pass the limit from settings at validation time, so a
    changed setting applies to the next request."""
    size = value if isinstance(value, (int, float)) else len(value)
    if size > limit:
        raise serializers.ValidationError(f"At most {limit} {unit}." if unit else f"At most {limit}.")
    return value


def distinct_by(items: list[dict], key: str, message: str) -> list[dict]:
    """``items`` itself when no two share ``key``; a 400 saying ``message`` otherwise."""
    keys = [item[key] for item in items]
    if len(set(keys)) != len(keys):
        raise serializers.ValidationError(message)
    return items


class StrictSerializer(serializers.Serializer):
    """Rejects fields it does not know, so a typo or an identity field in a body is a 400, not ignored."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
            if hasattr(data, "getlist"):  # query parameters: JSON bodies were checked by the parser already
                problems = query_problems(data)
                if problems:
                    raise serializers.ValidationError(problems)
        return super().to_internal_value(data)


def query_problems(params) -> dict[str, list[str]]:
    """Query parameters refused as docs/api.md says, by name: a bidirectional control character, or bytes
    that are not UTF-8. Django decodes a query string with errors="replace", so `%FF` arrives as U+FFFD;
    searching for it would answer an empty 200, as if the value were fine and matched nothing."""
    problems = {}
    for key in params:
        values = [v for v in params.getlist(key) if isinstance(v, str)]
        if "\ufffd" in key or any("\ufffd" in v for v in values):
            problems[key] = ["Contains bytes that are not valid UTF-8 (percent-encode UTF-8 text)."]
        elif any(BIDI_CONTROLS.search(v) for v in values) or BIDI_CONTROLS.search(key):
            problems[key] = ["Contains a bidirectional control character (U+202A-U+202E, U+2066-U+2069); remove it."]
    return problems


class StrictCharField(serializers.CharField):
    """A CharField that refuses numbers and booleans instead of silently turning them into text."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class BoundedDateTimeField(serializers.DateTimeField):
    """A DateTimeField that refuses dates outside DATE_MIN_YEAR..DATE_MAX_YEAR (settings): a date in
    year 9999 would pin an item to the top of every list and win every recency score."""

    def to_internal_value(self, value):
        parsed = super().to_internal_value(value)
        low, high = settings.DATE_MIN_YEAR, settings.DATE_MAX_YEAR
        if not low <= parsed.year <= high:
            raise serializers.ValidationError(f"Dates must lie between {low}-01-01 and {high}-12-31.", code="out_of_range")
        return parsed


class SeqCursorPagination(CursorPagination):
    """Opaque cursors: stable under concurrent appends, unlike offsets."""

    page_size_query_param = "limit"
    ordering = "id"

    def get_page_size(self, request) -> int:
        # Read the limits per request so they stay settings (and tests can change them).
        self.max_page_size = settings.MAX_PAGE_SIZE
        self.page_size = settings.DEFAULT_PAGE_SIZE
        return super().get_page_size(request)


def principal(request):
    return request.user
