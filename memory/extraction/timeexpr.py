"""Relative time expressions (zh + en) resolved against the message time.

Events are stored with the time they happened, not the time they were mentioned: "上个月" said on
2026-03-15 is February 2026. The same table rewrites the expression inside stored content so a
memory read a month later does not say "今天" about a day long gone.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

__all__ = ["TimeRef", "find_times", "recurring", "rewrite_times"]


@dataclass(frozen=True)
class TimeRef:
    at: datetime  # resolved time, aware, in the message's time zone
    grain: str  # instant | day | week | month | year | recent
    tense: str  # past | present | future
    start: int
    end: int
    label: str | None  # absolute wording that replaces the span in content; None keeps it


# ---------------------------------------------------------------------------- arithmetic
def _midnight(d: date, ref: datetime) -> datetime:
    return datetime.combine(d, time(0), tzinfo=ref.tzinfo)


def _add_months(d: date, months: int) -> date:
    index = d.year * 12 + d.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _monday(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _tense(at: datetime, ref: datetime, grain: str) -> str:
    if grain in ("recent", "instant"):
        return "past" if at <= ref else "future"
    a, r = at.date(), ref.date()
    if grain == "week":
        a, r = _monday(a), _monday(r)
    elif grain == "month":
        a, r = a.replace(day=1), r.replace(day=1)
    elif grain == "year":
        a, r = a.replace(month=1, day=1), r.replace(month=1, day=1)
    return "past" if a < r else ("present" if a == r else "future")


_CN_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_EN_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
               "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a few": 3, "a couple of": 2,
               "couple of": 2, "few": 3, "several": 3}
_WEEKDAY_ZH = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6,
               "1": 0, "2": 1, "3": 2, "4": 3, "5": 4, "6": 5, "7": 6}
_WEEKDAYS_EN = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_MONTHS_EN = ["january", "february", "march", "april", "may", "june", "july", "august", "september",
              "october", "november", "december"]


def _cn_int(text: str) -> int | None:
    """Small Chinese or Arabic numbers (up to 99), enough for "十五天前" / "两周" / "3个月"."""
    if text.isdigit():
        return int(text)
    if text in ("几", "几个"):
        return 3
    if "十" in text:
        tens, _, units = text.partition("十")
        t = _CN_DIGITS.get(tens, 1) if tens else 1
        u = _CN_DIGITS.get(units, 0) if units else 0
        return t * 10 + u
    return _CN_DIGITS.get(text)


def _make(ref: datetime, at: datetime, grain: str, m: re.Match[str], lang: str, *, absolute: bool = False,
          had_year: bool = True) -> TimeRef:
    label: str | None = None
    if not absolute:
        label = _label(at, grain, lang)
    elif not had_year:
        label = _label(at, "day", lang) if lang == "zh" else f"{_MONTHS_EN[at.month - 1].title()} {at.day}, {at.year}"
    return TimeRef(at=at, grain=grain, tense=_tense(at, ref, grain), start=m.start(), end=m.end(), label=label)


def _label(at: datetime, grain: str, lang: str) -> str | None:
    d = at.date()
    if lang == "zh":
        if grain == "day":
            return f"{d.year}年{d.month}月{d.day}日"
        if grain == "week":
            mon = _monday(d)
            return f"{mon.year}年{mon.month}月{mon.day}日那一周"
        if grain == "month":
            return f"{d.year}年{d.month}月"
        if grain == "year":
            return f"{d.year}年"
        return None
    if grain == "day":
        return f"on {d.isoformat()}"
    if grain == "week":
        return f"in the week of {_monday(d).isoformat()}"
    if grain == "month":
        return f"in {_MONTHS_EN[d.month - 1].title()} {d.year}"
    if grain == "year":
        return f"in {d.year}"
    return None


# Words before a yearless date in its clause that say where it lies from the message: a date something was
# moved to, or that comes next, is ahead; one something was on last time is behind. A closed class of
# scheduling words, not of statements.
_AHEAD = re.compile(r"改到|改在|改成|推到|推迟到|延到|延期到|延后到|挪到|提前到|定在|约在|约到|安排在|下次|下回|下一次"
                    r"|将于|将在|预计|计划|打算|准备|\b(?:moved|pushed|postponed|rescheduled|delayed|next|will|going to"
                    r"|scheduled|planned|booked|due|upcoming)\b", re.I)
_BEHIND = re.compile(r"上次|上回|上一次|之前|那次|\b(?:last|was|were|did|had|ago)\b", re.I)
_CLAUSE_END = re.compile(r"[。！？!?；;，,\n]")


def _leaning(m: re.Match[str]) -> str | None:
    """"ahead", "behind" or None: what the date's clause, before it, says of where it lies."""
    clause = _CLAUSE_END.split(m.string[: m.start()])[-1]
    ahead, behind = bool(_AHEAD.search(clause)), bool(_BEHIND.search(clause))
    return "ahead" if ahead and not behind else ("behind" if behind and not ahead else None)


def _yearless(ref: datetime, month: int, day: int, leaning: str | None = None) -> date | None:
    """A date named without a year is in the message's year, unless that puts it half a year ahead:
    "12月28日" said on 5 January is last December. A date its clause says is ahead is the next one on or
    after the message's day ("复诊改到10月22日" said in March is this October, not last; said in November,
    next October's), one it says is behind the last one on or before it."""
    today = ref.date()
    options = []
    for year in (ref.year - 1, ref.year, ref.year + 1):
        try:
            options.append(date(year, month, day))
        except ValueError:
            continue
    if not options:
        return None
    if leaning == "ahead":
        return min((d for d in options if d >= today), default=None)
    if leaning == "behind":
        return max((d for d in options if d <= today), default=None)
    this_year = next((d for d in options if d.year == ref.year), None)
    if this_year is not None and this_year <= today + timedelta(days=180):
        return this_year
    return max((d for d in options if d.year < ref.year), default=None)


# ---------------------------------------------------------------------------- Chinese
_ZhResolver = Callable[[re.Match[str], datetime], "TimeRef | None"]
_ZH_DAY_OFFSETS = {"大前天": -3, "前天": -2, "昨天": -1, "昨日": -1, "昨晚": -1, "昨儿": -1, "今天": 0,
                   "今日": 0, "今早": 0, "今晚": 0, "今儿": 0, "明天": 1, "明日": 1, "明早": 1, "明晚": 1,
                   "后天": 2, "大后天": 3}
_ZH_WEEK_OFFSETS = {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1, "下下": 2}


def _zh_day(m: re.Match[str], ref: datetime) -> TimeRef:
    d = ref.date() + timedelta(days=_ZH_DAY_OFFSETS[m.group(0)])
    return _make(ref, _midnight(d, ref), "day", m, "zh")


def _zh_week(m: re.Match[str], ref: datetime) -> TimeRef:
    offset = _ZH_WEEK_OFFSETS[m.group("rel")] if m.group("rel") else 0
    wd = m.group("wd")
    if wd:
        d = _monday(ref.date()) + timedelta(weeks=offset, days=_WEEKDAY_ZH[wd])
        return _make(ref, _midnight(d, ref), "day", m, "zh")
    # "上周" is a week ago to the hour: the week itself is too vague to pin to a day.
    return _make(ref, ref + timedelta(weeks=offset), "week", m, "zh")


def _zh_month(m: re.Match[str], ref: datetime) -> TimeRef:
    offset = {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1}[m.group("rel")]
    return _make(ref, _midnight(_add_months(ref.date(), offset), ref), "month", m, "zh")


def _zh_year(m: re.Match[str], ref: datetime) -> TimeRef:
    offset = {"前年": -2, "去年": -1, "今年": 0, "明年": 1, "后年": 2}[m.group(0)]
    return _make(ref, _midnight(date(ref.year + offset, 1, 1), ref), "year", m, "zh")


def _zh_ago(m: re.Match[str], ref: datetime) -> TimeRef | None:
    unit, num = m.group("unit"), m.group("num")
    if num == "半":
        amount_days = {"天": 0, "日": 0, "周": 3, "星期": 3, "礼拜": 3, "月": 15, "年": 182}[unit]
        return _make(ref, _midnight(ref.date() - timedelta(days=amount_days), ref), "day", m, "zh")
    n = _cn_int(num)
    if n is None:
        return None
    if unit in ("天", "日"):
        return _make(ref, _midnight(ref.date() - timedelta(days=n), ref), "day", m, "zh")
    if unit in ("周", "星期", "礼拜"):
        return _make(ref, ref - timedelta(weeks=n), "week", m, "zh")
    if unit == "月":
        return _make(ref, _midnight(_add_months(ref.date(), -n), ref), "month", m, "zh")
    return _make(ref, _midnight(date(ref.year - n, 1, 1), ref), "year", m, "zh")


def _calendar_day(m: re.Match[str], ref: datetime, month: int, day: int, lang: str) -> TimeRef | None:
    """A written calendar day: with its year as given (None if there is no such day), without one the
    day `_yearless` picks."""
    if m.group("y"):
        try:
            d = date(int(m.group("y")), month, day)
        except ValueError:
            return None
        return _make(ref, _midnight(d, ref), "day", m, lang, absolute=True)
    d2 = _yearless(ref, month, day, _leaning(m))
    if d2 is None:
        return None
    return _make(ref, _midnight(d2, ref), "day", m, lang, absolute=True, had_year=False)


def _zh_date(m: re.Match[str], ref: datetime) -> TimeRef | None:
    month, day = _cn_int(m.group("m")), _cn_int(m.group("d"))
    if month is None or day is None:
        return None
    return _calendar_day(m, ref, month, day, "zh")


def _zh_year_month(m: re.Match[str], ref: datetime) -> TimeRef | None:
    year = ref.year + {"前年": -2, "去年": -1, "今年": 0}[m.group("rel")]
    month = _cn_int(m.group("m"))
    day = _cn_int(m.group("d")) if m.group("d") else None
    try:
        d = date(year, month or 0, day or 1)
    except ValueError:
        return None
    return _make(ref, _midnight(d, ref), "day" if day else "month", m, "zh")


def _iso_date(m: re.Match[str], ref: datetime) -> TimeRef | None:
    try:
        d = date(int(m.group("y")), int(m.group("m")), int(m.group("d")))
    except ValueError:
        return None
    return TimeRef(at=_midnight(d, ref), grain="day", tense=_tense(_midnight(d, ref), ref, "day"),
                   start=m.start(), end=m.end(), label=None)


def _zh_recent(m: re.Match[str], ref: datetime) -> TimeRef:
    word = m.group(0)
    grain = "instant" if word in ("刚才", "刚刚") else "recent"
    return TimeRef(at=ref, grain=grain, tense="past", start=m.start(), end=m.end(), label=None)


_CN_NUM = r"\d+|[一二两三四五六七八九十半几]+"
_ZH_PATTERNS: list[tuple[re.Pattern[str], _ZhResolver]] = [
    (re.compile(r"(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})"), _iso_date),
    (re.compile(r"(?:(?P<y>\d{4})年)?(?P<m>\d{1,2}|[一二三四五六七八九十]{1,2})月"
                r"(?P<d>\d{1,2}|[一二三四五六七八九十]{1,3})[日号]"), _zh_date),
    (re.compile(r"(?P<rel>前年|去年|今年)(?P<m>\d{1,2}|[一二三四五六七八九十]{1,2})月(?:份)?"
                r"(?:(?P<d>\d{1,2}|[一二三四五六七八九十]{1,3})[日号])?"), _zh_year_month),
    (re.compile(r"大前天|前天|昨天|昨日|昨晚|昨儿|今天|今日|今早|今晚|今儿|明天|明日|明早|明晚|大后天|后天"), _zh_day),
    # Without 上/下/这/本 only a weekday is a time: a bare 周 is as often a name (老周, 周姐) or a
    # word (周报) as "this week".
    (re.compile(r"(?:(?P<rel>上上|下下|上|下|这|本)个?|(?<![每一两二三四五六七八九十几\d])(?=(?:周|星期|礼拜)[一二三四五六日天1-7]))"
                r"(?:周|星期|礼拜)(?P<wd>[一二三四五六日天1-7])?(?![末度期])"), _zh_week),
    (re.compile(r"(?P<rel>上上|上|下|这|本)个?月(?!份?[\d一二三四五六七八九十])"), _zh_month),
    (re.compile(r"前年|去年|今年|明年|后年"), _zh_year),
    (re.compile(rf"(?P<num>{_CN_NUM})个?(?P<unit>天|日|周|星期|礼拜|月|年)(?:前|之前|以前)"), _zh_ago),
    (re.compile(r"最近|近来|近期|这几天|这两天|前几天|前两天|刚才|刚刚"), _zh_recent),
]


# ---------------------------------------------------------------------------- English
def _en_day(m: re.Match[str], ref: datetime) -> TimeRef:
    word = m.group(0).lower()
    offset = -2 if "before" in word else 2 if "after" in word else -1 if word == "yesterday" else 1 if word == "tomorrow" else 0
    d = ref.date() + timedelta(days=offset)
    return _make(ref, _midnight(d, ref), "day", m, "en")


def _en_rel(m: re.Match[str], ref: datetime) -> TimeRef:
    rel, unit = m.group("rel").lower(), m.group("unit").lower()
    offset = {"last": -1, "past": -1, "previous": -1, "this": 0, "next": 1, "coming": 1}[rel]
    if unit in _WEEKDAYS_EN:
        wd = _WEEKDAYS_EN.index(unit)
        if rel == "this":
            d = _monday(ref.date()) + timedelta(days=wd)
        elif offset < 0:  # "last Monday": the most recent Monday before today
            d = ref.date() - timedelta(days=(ref.weekday() - wd) % 7 or 7)
        else:
            d = ref.date() + timedelta(days=(wd - ref.weekday()) % 7 or 7)
        return _make(ref, _midnight(d, ref), "day", m, "en")
    if unit == "week":
        return _make(ref, ref + timedelta(weeks=offset), "week", m, "en")
    if unit == "month":
        return _make(ref, _midnight(_add_months(ref.date(), offset), ref), "month", m, "en")
    return _make(ref, _midnight(date(ref.year + offset, 1, 1), ref), "year", m, "en")


def _en_last_month_name(m: re.Match[str], ref: datetime) -> TimeRef | None:
    """"last September" said in March 2026 is September 2025; "last February" is February 2026."""
    month_word = m.group("mon").lower()[:3]
    month = next((i + 1 for i, name in enumerate(_MONTHS_EN) if name.startswith(month_word)), None)
    if month is None:
        return None
    year = ref.year if month < ref.month else ref.year - 1
    return _make(ref, _midnight(date(year, month, 1), ref), "month", m, "en")


def _en_ago(m: re.Match[str], ref: datetime) -> TimeRef | None:
    num = m.group("num").lower()
    n = int(num) if num.isdigit() else _EN_NUMBERS.get(num)
    if n is None:
        return None
    unit = m.group("unit").lower().rstrip("s")
    if unit == "day":
        return _make(ref, _midnight(ref.date() - timedelta(days=n), ref), "day", m, "en")
    if unit == "week":
        return _make(ref, ref - timedelta(weeks=n), "week", m, "en")
    if unit == "month":
        return _make(ref, _midnight(_add_months(ref.date(), -n), ref), "month", m, "en")
    return _make(ref, _midnight(date(ref.year - n, 1, 1), ref), "year", m, "en")


def _en_date(m: re.Match[str], ref: datetime) -> TimeRef | None:
    month_word = m.group("mon").lower()[:3]
    month = next((i + 1 for i, name in enumerate(_MONTHS_EN) if name.startswith(month_word)), None)
    if month is None:
        return None
    day = int(m.group("d"))
    return _calendar_day(m, ref, month, day, "en")


def _en_recent(m: re.Match[str], ref: datetime) -> TimeRef:
    word = m.group(0).lower()
    grain = "instant" if word in ("just now", "a moment ago") else "recent"
    return TimeRef(at=ref, grain=grain, tense="past", start=m.start(), end=m.end(), label=None)


_MON = (r"(?P<mon>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|jun(?:e)?|jul(?:y)?|aug(?:ust)?|"
        r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_EN_PATTERNS: list[tuple[re.Pattern[str], _ZhResolver]] = [
    (re.compile(r"(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})"), _iso_date),
    (re.compile(rf"\b{_MON}\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(?P<y>\d{{4}}))?", re.I), _en_date),
    (re.compile(rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MON}\b(?:,?\s+(?P<y>\d{{4}}))?", re.I), _en_date),
    (re.compile(rf"\blast\s+{_MON}(?!\s+\d)", re.I), _en_last_month_name),
    (re.compile(r"\bthe day before yesterday\b|\bthe day after tomorrow\b|\byesterday\b|\btoday\b|\btomorrow\b"
                r"|\bthis (?:morning|afternoon|evening)\b|\btonight\b", re.I), _en_day),
    (re.compile(r"\b(?P<rel>last|past|previous|this|next|coming)\s+(?P<unit>week|month|year|monday|tuesday|"
                r"wednesday|thursday|friday|saturday|sunday)\b", re.I), _en_rel),
    (re.compile(r"\b(?P<num>\d+|a couple of|couple of|a few|few|several|an?|one|two|three|four|five|six|seven|"
                r"eight|nine|ten|eleven|twelve)\s+(?P<unit>days?|weeks?|months?|years?)\s+ago\b", re.I), _en_ago),
    (re.compile(r"\brecently\b|\blately\b|\bjust now\b|\ba moment ago\b|\bthese days\b", re.I), _en_recent),
]


# ---------------------------------------------------------------------------- public
def find_times(text: str, ref: datetime, lang: str) -> list[TimeRef]:
    """Every time expression in `text`, resolved against `ref`; overlaps keep the earliest,
    then the longest match ("上周三" beats "周三", "大前天" beats "前天")."""
    found: list[TimeRef] = []
    for pattern, resolve in _ZH_PATTERNS if lang == "zh" else _EN_PATTERNS:
        for m in pattern.finditer(text):
            if m.end() == m.start():
                continue
            tr = resolve(m, ref)
            if tr is not None:
                found.append(tr)
    found.sort(key=lambda t: (t.start, -(t.end - t.start)))
    chosen: list[TimeRef] = []
    for tr in found:
        if chosen and tr.start < chosen[-1].end:
            continue
        chosen.append(tr)
    return chosen


_EN_PREPOSITIONS = re.compile(r"\b(?:since|until|till|from|by|before|after|on|in|during|as of|to|for)\s+$", re.I)


_BARE_WEEKDAY = re.compile(r"^(?:周|星期|礼拜)[一二三四五六日天1-7]$")


def recurring(text: str, ref: TimeRef) -> bool:
    """A weekday with no 上/下/这/本 ("周五") in a standing statement is a day of every week
    ("例会改到周三下午了"), not the next Wednesday: its words are kept."""
    return bool(_BARE_WEEKDAY.match(text[ref.start:ref.end]))


def rewrite_times(text: str, refs: list[TimeRef], lang: str) -> str:
    """Replace relative expressions with their absolute wording, right to left."""
    out = text
    for tr in sorted(refs, key=lambda t: t.start, reverse=True):
        if not tr.label:
            continue
        label = tr.label
        if lang == "en" and _EN_PREPOSITIONS.search(out[: tr.start]) and label.startswith(("on ", "in ")):
            label = label.split(" ", 1)[1]  # "since yesterday" -> "since 2026-03-01", not "since on ..."
        out = out[: tr.start] + label + out[tr.end:]
    return out
