"""Dates in what people say: "last Saturday", "two days ago", "上周六", "5月7日".

Recall resolves the date expressions of a stored memory against the day it was said,
and those of a question against the day it is asked; a memory whose dates meet the
question's is a candidate however different its words are ("What did I do last
Saturday?" finds "I went hiking two days ago" said on the Monday).

An English weekday after "last" is ambiguous ("last Saturday" on a Sunday is one or
eight days back), so both readings are kept; Chinese "上周六" names the Saturday of the
previous calendar week, and is exact.

>>> from datetime import date
>>> monday = date(2023, 5, 8)
>>> sorted(str(d) for d in resolve_dates("I went hiking two days ago", monday))
['2023-05-06']
>>> sorted(str(d) for d in resolve_dates("我上周六去爬山了", monday))
['2023-05-06']
>>> sunday = date(2023, 5, 14)
>>> sorted(str(d) for d in resolve_dates("What did I do last Saturday?", sunday))
['2023-05-06', '2023-05-13']
>>> sorted(str(d) for d in resolve_dates("on May 7", monday))
['2023-05-07']
>>> resolve_dates("Do you want coffee next Saturday?", monday)
frozenset()
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import Any

__all__ = ["MAX_SPAN_DAYS", "item_dates", "named_days", "parse_day", "resolve_dates"]

MAX_SPAN_DAYS = 31
"""The longest span an expression ("last month") or an episode adds, in days."""

_EN_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_EN_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_EN_NUMBERS = {
    "a": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "a couple of": 2,
    "a few": 3,
}
_ZH_DIGITS = {
    "零": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
    "十": 10,
}
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}

_NUMBER = r"(\d{1,2}|a couple of|a few|one|two|three|four|five|six|seven|eight|nine|ten|a)"
_WEEKDAY = "(" + "|".join(_EN_WEEKDAYS) + ")"
_MONTH = "(" + "|".join(m for m in _EN_MONTHS) + r"|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)"
_ZH_NUM = "([0-9零一二两三四五六七八九十]{1,3})"

_EN_PATTERNS = re.compile(
    rf"\b(?P<today>today|this morning|tonight|this afternoon|this evening)\b"
    rf"|\b(?P<before_yesterday>the day before yesterday)\b"
    rf"|\b(?P<yesterday>yesterday|last night)\b"
    rf"|\b(?P<days_ago>{_NUMBER}) days? ago\b"
    rf"|\b(?P<weeks_ago>{_NUMBER}) weeks? ago\b"
    rf"|\b(?P<last_weekend>last weekend|over the weekend|this past weekend)\b"
    rf"|\b(?P<last_week>last week)\b"
    rf"|\b(?P<this_week>this week)\b"
    rf"|\b(?P<last_month>last month)\b"
    rf"|\b(?P<next>next|this coming|coming) {_WEEKDAY}"
    rf"|\b(?:last|this past|past) (?P<last_weekday>{_WEEKDAY})\b"
    rf"|\bon (?P<on_weekday>{_WEEKDAY})\b"
    rf"|\b(?P<md_month>{_MONTH})\.? (?P<md_day>\d{{1,2}})(?:st|nd|rd|th)?\b"
    rf"|\b(?P<dm_day>\d{{1,2}})(?:st|nd|rd|th)? (?:of )?(?P<dm_month>{_MONTH})\b"
    rf"|\b(?P<iso>\d{{4}}-\d{{2}}-\d{{2}})\b",
    re.IGNORECASE,
)
_ZH_PATTERNS = re.compile(
    rf"(?P<today>今天|今早|今晚|今天早上)"
    rf"|(?P<before3>大前天)"
    rf"|(?P<before2>前天)"
    rf"|(?P<yesterday>昨天|昨晚|昨日)"
    rf"|(?P<days_ago>{_ZH_NUM})天(?:前|以前)"
    rf"|(?P<weeks_ago>{_ZH_NUM})(?:个)?(?:星期|周|礼拜)(?:前|以前)"
    rf"|(?P<last_weekend>上(?:个)?周末)"
    rf"|(?P<prev>上(?:个)?(?:周|星期|礼拜))(?P<prev_day>[一二三四五六日天])?"
    rf"|(?P<next>下(?:个)?(?:周|星期|礼拜)[一二三四五六日天]?)"
    rf"|(?P<this>这(?:个)?(?:周|星期|礼拜)|本周)(?P<this_day>[一二三四五六日天])?"
    rf"|(?P<last_month>上(?:个)?月)"
    rf"|(?P<month>{_ZH_NUM})月(?P<day>{_ZH_NUM})(?:日|号)"
    rf"|(?:周|星期|礼拜)(?P<bare_day>[一二三四五六日天])",
)


def _zh_number(text: str) -> int:
    if text.isdigit():
        return int(text)
    if text == "十":
        return 10
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (_ZH_DIGITS.get(tens, 1) if tens else 1) * 10 + (_ZH_DIGITS.get(ones, 0))
    return _ZH_DIGITS.get(text, 0)


def _en_number(text: str) -> int:
    text = text.lower()
    return int(text) if text.isdigit() else _EN_NUMBERS.get(text, 0)


def _span(start: date, days: int) -> set[date]:
    return {start + timedelta(days=i) for i in range(min(days, MAX_SPAN_DAYS))}


def _week_of(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _most_recent(weekday: int, today: date) -> date:
    """The latest ``weekday`` strictly before ``today``."""
    back = (today.weekday() - weekday) % 7 or 7
    return today - timedelta(days=back)


def _month_day(month: int, day: int, today: date) -> set[date]:
    """Month and day in the latest year that does not put it after ``today``."""
    for year in (today.year, today.year - 1):
        try:
            candidate = date(year, month, day)
        except ValueError:
            return set()
        if candidate <= today:
            return {candidate}
    return set()


def _month_index(name: str) -> int:
    name = name.lower().rstrip(".")
    for number, month in enumerate(_EN_MONTHS, start=1):
        if month.startswith(name[:3]):
            return number
    return 0


Rule = Callable[[re.Match[str], date], set[date]]
"""What one kind of expression (a named group of a pattern) resolves to, said on a day."""


def _last_month(today: date) -> set[date]:
    first = today.replace(day=1)
    previous = (first - timedelta(days=1)).replace(day=1)
    return _span(previous, (first - previous).days)


def _weeks_ago(weeks: int, today: date) -> set[date]:
    """The week around the day ``weeks`` before ``today``."""
    return _span(today - timedelta(weeks=weeks) - timedelta(days=3), 7)


def _iso(text: str) -> set[date]:
    try:
        return {date.fromisoformat(text)}
    except ValueError:
        return set()


def _en_last_weekday(match: re.Match[str], today: date) -> set[date]:
    """Both readings of "last Saturday": the most recent one, and the one of last week."""
    weekday = _EN_WEEKDAYS.index(match["last_weekday"].lower())
    return {
        _most_recent(weekday, today),
        _week_of(today) - timedelta(days=7) + timedelta(days=weekday),
    }


def _en_last_weekend(match: re.Match[str], today: date) -> set[date]:
    saturday = _most_recent(5, today)
    return {saturday, saturday + timedelta(days=1)} - {today}


_EN_RULES: dict[str, Rule] = {
    "today": lambda m, today: {today},
    "before_yesterday": lambda m, today: {today - timedelta(days=2)},
    "yesterday": lambda m, today: {today - timedelta(days=1)},
    "days_ago": lambda m, today: {today - timedelta(days=_en_number(m["days_ago"]))},
    "weeks_ago": lambda m, today: _weeks_ago(_en_number(m["weeks_ago"]), today),
    "last_weekend": _en_last_weekend,
    "last_week": lambda m, today: _span(_week_of(today) - timedelta(days=7), 7),
    "this_week": lambda m, today: _span(_week_of(today), today.weekday() + 1),
    "last_month": lambda m, today: _last_month(today),
    "next": lambda m, today: set(),  # the future: nothing has happened on it yet
    "last_weekday": _en_last_weekday,
    "on_weekday": lambda m, today: {
        _most_recent(_EN_WEEKDAYS.index(m["on_weekday"].lower()), today)
    },
    "md_month": lambda m, today: _month_day(_month_index(m["md_month"]), int(m["md_day"]), today),
    "dm_month": lambda m, today: _month_day(_month_index(m["dm_month"]), int(m["dm_day"]), today),
    "iso": lambda m, today: _iso(m["iso"]),
}
"""English expressions, in the order the pattern's groups are tried."""


def _zh_last_week(today: date) -> date:
    """The Monday of the previous calendar week."""
    return _week_of(today) - timedelta(days=7)


def _zh_previous(match: re.Match[str], today: date) -> set[date]:
    """A day of the previous calendar week ("上周六"), or all of it ("上周")."""
    day = match["prev_day"]
    if day:
        return {_zh_last_week(today) + timedelta(days=_ZH_WEEKDAYS[day])}
    return _span(_zh_last_week(today), 7)


def _zh_this(match: re.Match[str], today: date) -> set[date]:
    """A day of this week ("这周三"), or its days so far ("这周")."""
    day = match["this_day"]
    if day:
        return {_week_of(today) + timedelta(days=_ZH_WEEKDAYS[day])}
    return _span(_week_of(today), today.weekday() + 1)


def _zh_bare_day(match: re.Match[str], today: date) -> set[date]:
    """A bare weekday ("周三"): this week's, or last week's if this week's is to come."""
    this_week = _week_of(today) + timedelta(days=_ZH_WEEKDAYS[match["bare_day"]])
    return {this_week if this_week <= today else this_week - timedelta(days=7)}


_ZH_RULES: dict[str, Rule] = {
    "today": lambda m, today: {today},
    "before3": lambda m, today: {today - timedelta(days=3)},
    "before2": lambda m, today: {today - timedelta(days=2)},
    "yesterday": lambda m, today: {today - timedelta(days=1)},
    "days_ago": lambda m, today: {today - timedelta(days=_zh_number(m["days_ago"]))},
    "weeks_ago": lambda m, today: _weeks_ago(_zh_number(m["weeks_ago"]), today),
    "last_weekend": lambda m, today: {
        _zh_last_week(today) + timedelta(days=5),
        _zh_last_week(today) + timedelta(days=6),
    },
    "prev": _zh_previous,
    "next": lambda m, today: set(),
    "this": _zh_this,
    "last_month": lambda m, today: _last_month(today),
    "month": lambda m, today: _month_day(_zh_number(m["month"]), _zh_number(m["day"]), today),
    "bare_day": _zh_bare_day,
}
"""Chinese expressions, in the order the pattern's groups are tried."""


def _resolve(pattern: re.Pattern[str], rules: dict[str, Rule], text: str, today: date) -> set[date]:
    """The days of every expression of ``pattern`` in ``text``, by the first rule it matches."""
    found: set[date] = set()
    for match in pattern.finditer(text):
        kind = next((name for name in rules if match[name]), None)
        if kind is not None:
            found |= rules[kind](match, today)
    return found


def resolve_dates(text: str, today: date) -> frozenset[date]:
    """The calendar days ``text`` refers to, read as said on ``today``.

    Future expressions ("next Saturday", "下周六") are left out: nothing is remembered
    about them yet. Spans ("last week", "上个月") give every day in them.
    """
    return frozenset(
        _resolve(_EN_PATTERNS, _EN_RULES, text, today)
        | _resolve(_ZH_PATTERNS, _ZH_RULES, text, today)
    )


def named_days(value: dict[str, Any]) -> str:
    """The days a stored memory's words name, written out; "" when they name none.

    Read as said on the day it was said, as recall's date tags read them (`item_dates`:
    ``said_at``, else ``created_at``): a held message extracted the next morning still
    means the day before it was said by "yesterday". A run of days in a row is written as
    its first and last ("last week"); days apart are listed ("last Saturday" said on a
    Sunday is one of two).

    >>> def said(content, on): return {"content": content, "said_at": on}
    >>> named_days(said("Went to a support group yesterday", "2023-05-08T21:00:00+00:00"))
    '2023-05-07'
    >>> named_days(said("Started a new job last week", "2023-05-08"))
    '2023-05-01 to 2023-05-07'
    >>> named_days(said("Went hiking last Saturday", "2023-05-14"))
    '2023-05-06, 2023-05-13'
    >>> named_days({"content": "Left yesterday", "said_at": "2023-05-08T23:50:00+00:00",
    ...             "created_at": "2023-05-09T00:10:00+00:00"})  # held, extracted after midnight
    '2023-05-07'
    >>> named_days(said("Lives in Lyon", "2023-05-08")), named_days({"content": "Left yesterday"})
    ('', '')
    """
    runs: list[list[date]] = []
    for day in sorted(item_dates(value)[0]):
        if runs and (day - runs[-1][-1]).days == 1:
            runs[-1].append(day)
        else:
            runs.append([day])
    return ", ".join(
        run[0].isoformat() if len(run) == 1 else f"{run[0].isoformat()} to {run[-1].isoformat()}"
        for run in runs
    )


def parse_day(stamp: Any) -> date | None:
    """The calendar day of an ISO date or datetime string, or None.

    >>> parse_day("2023-05-07"), parse_day("2023-05-07T20:00:00+00:00"), parse_day("soon")
    (datetime.date(2023, 5, 7), datetime.date(2023, 5, 7), None)
    """
    if isinstance(stamp, datetime):
        return stamp.date()
    if isinstance(stamp, date):
        return stamp
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp).date()
    except ValueError:
        try:
            return date.fromisoformat(stamp[:10])
        except ValueError:
            return None


def item_dates(value: dict[str, Any]) -> tuple[frozenset[date], frozenset[date]]:
    """A stored memory's days: (the days its text refers to, the days it was said on).

    The day it was said is ``said_at``, else ``created_at`` (else an episode's
    ``ended_at``); an episode covers every day
    from ``started_at`` to ``ended_at`` (at most :data:`MAX_SPAN_DAYS`).
    """
    said = (
        parse_day(value.get("said_at"))
        or parse_day(value.get("created_at"))
        or parse_day(value.get("ended_at"))
    )
    started, ended = parse_day(value.get("started_at")), parse_day(value.get("ended_at"))
    spoken: set[date] = set()
    if started and ended and ended >= started:
        spoken |= _span(started, (ended - started).days + 1)
    elif said:
        spoken.add(said)
    mentioned = resolve_dates(str(value.get("content", "")), said) if said else frozenset()
    return frozenset(mentioned), frozenset(spoken)
