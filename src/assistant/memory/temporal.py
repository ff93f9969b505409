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
from datetime import date, datetime, timedelta
from typing import Any

__all__ = ["MAX_SPAN_DAYS", "item_dates", "parse_day", "resolve_dates"]

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


def _english(text: str, today: date) -> set[date]:
    found: set[date] = set()
    for match in _EN_PATTERNS.finditer(text):
        if match.group("today"):
            found.add(today)
        elif match.group("before_yesterday"):
            found.add(today - timedelta(days=2))
        elif match.group("yesterday"):
            found.add(today - timedelta(days=1))
        elif match.group("days_ago"):
            found.add(today - timedelta(days=_en_number(match.group("days_ago"))))
        elif match.group("weeks_ago"):
            back = today - timedelta(weeks=_en_number(match.group("weeks_ago")))
            found |= _span(back - timedelta(days=3), 7)
        elif match.group("last_weekend"):
            saturday = _most_recent(5, today)
            found |= {saturday, saturday + timedelta(days=1)} - {today}
        elif match.group("last_week"):
            found |= _span(_week_of(today) - timedelta(days=7), 7)
        elif match.group("this_week"):
            found |= _span(_week_of(today), today.weekday() + 1)
        elif match.group("last_month"):
            first = today.replace(day=1)
            previous = (first - timedelta(days=1)).replace(day=1)
            found |= _span(previous, (first - previous).days)
        elif match.group("next"):
            continue  # the future: nothing has happened on it yet
        elif match.group("last_weekday"):
            weekday = _EN_WEEKDAYS.index(match.group("last_weekday").lower())
            recent = _most_recent(weekday, today)
            found.add(recent)
            found.add(_week_of(today) - timedelta(days=7) + timedelta(days=weekday))
        elif match.group("on_weekday"):
            found.add(_most_recent(_EN_WEEKDAYS.index(match.group("on_weekday").lower()), today))
        elif match.group("md_month"):
            found |= _month_day(
                _month_index(match.group("md_month")), int(match.group("md_day")), today
            )
        elif match.group("dm_month"):
            found |= _month_day(
                _month_index(match.group("dm_month")), int(match.group("dm_day")), today
            )
        elif match.group("iso"):
            try:
                found.add(date.fromisoformat(match.group("iso")))
            except ValueError:
                pass
    return found


def _chinese(text: str, today: date) -> set[date]:
    found: set[date] = set()
    last_week = _week_of(today) - timedelta(days=7)
    for match in _ZH_PATTERNS.finditer(text):
        if match.group("today"):
            found.add(today)
        elif match.group("before3"):
            found.add(today - timedelta(days=3))
        elif match.group("before2"):
            found.add(today - timedelta(days=2))
        elif match.group("yesterday"):
            found.add(today - timedelta(days=1))
        elif match.group("days_ago"):
            found.add(today - timedelta(days=_zh_number(match.group("days_ago"))))
        elif match.group("weeks_ago"):
            back = today - timedelta(weeks=_zh_number(match.group("weeks_ago")))
            found |= _span(back - timedelta(days=3), 7)
        elif match.group("last_weekend"):
            found |= {last_week + timedelta(days=5), last_week + timedelta(days=6)}
        elif match.group("prev"):
            day = match.group("prev_day")
            if day:
                found.add(last_week + timedelta(days=_ZH_WEEKDAYS[day]))
            else:
                found |= _span(last_week, 7)
        elif match.group("next"):
            continue
        elif match.group("this"):
            day = match.group("this_day")
            if day:
                found.add(_week_of(today) + timedelta(days=_ZH_WEEKDAYS[day]))
            else:
                found |= _span(_week_of(today), today.weekday() + 1)
        elif match.group("last_month"):
            first = today.replace(day=1)
            previous = (first - timedelta(days=1)).replace(day=1)
            found |= _span(previous, (first - previous).days)
        elif match.group("month"):
            found |= _month_day(
                _zh_number(match.group("month")), _zh_number(match.group("day")), today
            )
        elif match.group("bare_day"):
            weekday = _ZH_WEEKDAYS[match.group("bare_day")]
            this_week = _week_of(today) + timedelta(days=weekday)
            found.add(this_week if this_week <= today else this_week - timedelta(days=7))
    return found


def resolve_dates(text: str, today: date) -> frozenset[date]:
    """The calendar days ``text`` refers to, read as said on ``today``.

    Future expressions ("next Saturday", "下周六") are left out: nothing is remembered
    about them yet. Spans ("last week", "上个月") give every day in them.
    """
    return frozenset(_english(text, today) | _chinese(text, today))


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
