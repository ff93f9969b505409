"""Dates in what people say, and what recall reads from a question and a memory."""

from __future__ import annotations

from datetime import date

import pytest

from assistant.memory.search.lexical import BM25Index
from assistant.memory.search.query import (
    analyze_query,
    frequent_names,
    item_tags,
    mentioned_speakers,
    without_names,
)
from assistant.memory.search.temporal import item_dates, resolve_dates

MONDAY = date(2023, 5, 8)
SUNDAY = date(2023, 5, 14)


def days(*isos: str) -> frozenset[date]:
    return frozenset(date.fromisoformat(iso) for iso in isos)


@pytest.mark.parametrize(
    ("text", "today", "expected"),
    [
        ("I went hiking yesterday", MONDAY, days("2023-05-07")),
        ("We flew home three days ago", MONDAY, days("2023-05-05")),
        ("the day before yesterday", MONDAY, days("2023-05-06")),
        ("I ran a race last Saturday", MONDAY, days("2023-05-06")),
        # On a Sunday, "last Saturday" is yesterday or eight days back: both are kept.
        ("What did I do last Saturday?", SUNDAY, days("2023-05-06", "2023-05-13")),
        ("on Friday we met", MONDAY, days("2023-05-05")),
        ("What did I do on May 7?", MONDAY, days("2023-05-07")),
        ("on 7th May", MONDAY, days("2023-05-07")),
        ("What happened on December 30?", MONDAY, days("2022-12-30")),  # not in the future
        ("see 2023-04-01", MONDAY, days("2023-04-01")),
        ("last weekend", MONDAY, days("2023-05-06", "2023-05-07")),
        ("today", MONDAY, days("2023-05-08")),
        ("Let's meet next Saturday", MONDAY, frozenset()),
        ("I love Saturdays", MONDAY, frozenset()),
        ("我昨天去爬山了", MONDAY, days("2023-05-07")),
        ("我们前天到的", MONDAY, days("2023-05-06")),
        ("三天前坐飞机回的家", MONDAY, days("2023-05-05")),
        ("我上周六跑了半马", MONDAY, days("2023-05-06")),
        ("这周五做了什么？", SUNDAY, days("2023-05-12")),
        ("5月7日他做了什么？", MONDAY, days("2023-05-07")),
        ("我5月7号去的", MONDAY, days("2023-05-07")),
        ("下周六一起喝咖啡吧", MONDAY, frozenset()),
    ],
)
def test_resolve_dates(text: str, today: date, expected: frozenset[date]) -> None:
    assert resolve_dates(text, today) == expected


@pytest.mark.parametrize(
    ("text", "count", "first", "last"),
    [
        ("What did I do last week?", 7, "2023-05-01", "2023-05-07"),
        ("我上周都干了些什么？", 7, "2023-05-01", "2023-05-07"),
        ("last month", 30, "2023-04-01", "2023-04-30"),
        ("上个月", 30, "2023-04-01", "2023-04-30"),
    ],
)
def test_spans_give_every_day(text: str, count: int, first: str, last: str) -> None:
    found = sorted(resolve_dates(text, MONDAY))
    assert (len(found), found[0].isoformat(), found[-1].isoformat()) == (count, first, last)


def test_a_memory_is_dated_by_when_it_was_said_and_what_it_mentions() -> None:
    turn = {"content": "I went hiking two days ago", "said_at": "2023-05-08"}
    assert item_dates(turn) == (days("2023-05-06"), days("2023-05-08"))
    fact = {"content": "Allergic to peanuts", "created_at": "2023-05-08T10:00:00+00:00"}
    assert item_dates(fact) == (frozenset(), days("2023-05-08"))


def test_an_episode_spans_its_days() -> None:
    episode = {
        "content": "Planned the Kyoto trip; booked the hotel yesterday.",
        "started_at": "2023-05-06T09:00:00+00:00",
        "ended_at": "2023-05-08T18:00:00+00:00",
    }
    assert item_dates(episode) == (
        days("2023-05-07"),
        days("2023-05-06", "2023-05-07", "2023-05-08"),
    )


def test_a_memory_without_dates_has_none() -> None:
    assert item_dates({"content": "yesterday"}) == (frozenset(), frozenset())


def test_item_tags() -> None:
    value = {
        "content": "我昨天去爬山了",
        "speaker": "李娜",
        "role": "user",
        "said_at": "2023-05-08",
        "thread_id": "session-3",
        "turn": 0,
    }
    assert item_tags(value) == [
        "speaker:李娜",
        "role:user",
        "date:2023-05-07",
        "said:2023-05-08",
    ]
    assert item_tags({"content": "Likes tea", "turn": 0}) == []


def test_a_question_is_read_for_dates_speakers_and_the_first_person() -> None:
    plan = analyze_query("What did Caroline do last Saturday?", SUNDAY)
    assert plan.dates == days("2023-05-06", "2023-05-13")
    assert not plan.first_person and not plan.asks_when
    speakers = mentioned_speakers(plan, ["speaker:caroline", "speaker:melanie"])
    assert speakers == ["speaker:caroline"]
    stripped = without_names(plan, speakers)
    assert stripped.text == "What did do last Saturday?"
    assert "carolin" not in stripped.terms and stripped.dates == plan.dates

    chinese = analyze_query("李娜什么时候去的泰山？", SUNDAY)
    assert chinese.asks_when and not chinese.first_person
    assert mentioned_speakers(chinese, ["speaker:李娜", "speaker:王芳"]) == ["speaker:李娜"]
    assert without_names(chinese, ["speaker:李娜"]).text == "什么时候去的泰山？"

    assert analyze_query("我上周做了什么？", SUNDAY).first_person
    assert not analyze_query("我们上周做了什么？", SUNDAY).first_person
    assert analyze_query("where did I go?", SUNDAY, expand_dates=False).dates == frozenset()


def test_a_name_many_memories_hold_is_read_as_one_of_the_people_talking() -> None:
    index = BM25Index()
    for n in range(10):
        index.add(f"talk-{n}", f"Wow Joanna, great news about the Dance Studio! ({n})")
    for n in range(10, 30):
        index.add(f"other-{n}", f"Emily liked it ({n})" if n < 13 else f"Nothing much ({n})")
    plan = analyze_query("When did Joanna visit Emily's Dance Studio?", SUNDAY)
    # Joanna: in 10 of 30 memories. Emily: in 3, too few. Dance and Studio: titled words
    # too, and as frequent, but "When" is the question's first word and never a name.
    assert frequent_names(plan, index, share=0.1) == [
        "speaker:joanna",
        "speaker:dance",
        "speaker:studio",
    ]
    assert frequent_names(plan, index, share=0.5) == []
    stripped = without_names(plan, frequent_names(plan, index, share=0.1))
    assert stripped.text == "When did visit Emily's ?"
    assert "emili" in stripped.terms and "joanna" not in stripped.terms
