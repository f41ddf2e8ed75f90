"""A date said without a year: in the message's year unless half a year ahead, and where its clause
says it lies (moved to, next time; last time, was) the occurrence on that side of the message."""
from datetime import date, datetime, timezone

import pytest

from memory.extraction.timeexpr import find_times

MARCH, NOVEMBER = datetime(2026, 3, 1, 9, tzinfo=timezone.utc), datetime(2026, 11, 1, 9, tzinfo=timezone.utc)


def day(text: str, ref: datetime, lang: str = "zh") -> date:
    [found] = find_times(text, ref, lang)
    return found.at.date()


@pytest.mark.parametrize(("text", "lang", "expected"), [
    ("10月22日我们签了合同", "zh", date(2025, 10, 22)),  # unmarked, seven months ahead: last October
    ("复诊改到10月22日了", "zh", date(2026, 10, 22)),  # moved to: the one ahead
    ("下次复诊是10月22日", "zh", date(2026, 10, 22)),
    ("年会定在12月28日", "zh", date(2026, 12, 28)),
    ("上次体检是10月22日", "zh", date(2025, 10, 22)),
    ("They moved the review to Oct 22", "en", date(2026, 10, 22)),
    ("The review was on Oct 22", "en", date(2025, 10, 22)),
])
def test_in_march(text, lang, expected):
    assert day(text, MARCH, lang) == expected


@pytest.mark.parametrize(("text", "lang", "expected"), [
    ("10月22日我们签了合同", "zh", date(2026, 10, 22)),
    ("复诊改到10月22日了", "zh", date(2027, 10, 22)),  # this October is over: the next one
    ("上次体检是10月22日", "zh", date(2026, 10, 22)),
    ("The review was on Oct 22", "en", date(2026, 10, 22)),
])
def test_in_november(text, lang, expected):
    assert day(text, NOVEMBER, lang) == expected


def test_only_the_dates_own_clause_counts():
    # "上次" belongs to the first clause; the second date is unmarked and stays in the message's year.
    found = find_times("上次是2月3日，这回是5月6日", MARCH, "zh")
    assert [t.at.date() for t in found] == [date(2026, 2, 3), date(2026, 5, 6)]
