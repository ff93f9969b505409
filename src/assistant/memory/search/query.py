"""What recall reads from a question, and from a memory, besides its words.

A question gives its search terms, the days it asks about ("last Saturday", "上周六",
resolved against the day it is asked), whether its asker speaks of themself ("I",
"my", "我"), and the names in it. A memory gives tags: who said it, whether that was
the user, the days it mentions and the days it was said on. Both come from the
memory's value, so anything that writes through :func:`assistant.memory.save_memory`
with ``speaker``, ``role`` and ``said_at`` metadata gets them.

>>> from datetime import date
>>> plan = analyze_query("What did I do last Saturday?", date(2023, 5, 14))
>>> plan.first_person, sorted(str(day) for day in plan.dates)
(True, ['2023-05-06', '2023-05-13'])
>>> item_tags({"content": "I went hiking yesterday", "speaker": "Caroline",
...            "role": "user", "said_at": "2023-05-08"})
['speaker:caroline', 'role:user', 'date:2023-05-07', 'said:2023-05-08']
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace
from datetime import date
from typing import Any

from assistant.memory.search.lexical import BM25Index, tokenize
from assistant.memory.search.temporal import item_dates, resolve_dates

__all__ = [
    "QueryPlan",
    "analyze_query",
    "asks_when",
    "frequent_names",
    "item_tags",
    "mentioned_speakers",
    "speaker_tag",
    "without_names",
]

_FIRST_PERSON = re.compile(r"\b(i|me|my|mine|myself|i'm|i've|i'd)\b|我(?!们)", re.IGNORECASE)
_WHEN = re.compile(
    r"\b(when|what day|what date|which day|how long ago|wann|cuándo|cuando|quand|quando|когда"
    r"|kiedy|wanneer|kapan|khi nào)\b|什么时候|哪天|哪一天|几号|几月|いつ(?!も)|언제(?!나)",
    re.IGNORECASE,
)
"""A question about when: English, Chinese, and the other languages users write most
("いつも" and "언제나" mean "always")."""


def asks_when(text: str) -> bool:
    """Whether ``text`` asks when something happened or will.

    >>> asks_when("When did I move to Berlin?"), asks_when("我什么时候搬的家？")
    (True, True)
    >>> asks_when("Wann bin ich umgezogen?"), asks_when("いつ引っ越しましたか")
    (True, True)
    >>> asks_when("Where do I live?"), asks_when("いつもありがとう")
    (False, False)
    """
    return bool(_WHEN.search(_fold(text)))


@dataclass(frozen=True, kw_only=True)
class QueryPlan:
    """A question, read for recall."""

    text: str
    """The question as asked."""
    terms: list[str]
    """Its keyword-search terms (:func:`assistant.memory.search.lexical.tokenize`)."""
    dates: frozenset[date]
    """The days it asks about, resolved against the day it is asked."""
    first_person: bool
    """Whether the asker speaks of themself ("what did I ...", "我...")."""
    asks_when: bool
    """Whether it asks for a date ("when did ...", "什么时候")."""
    words: frozenset[str]
    """Its words, case-folded, to spot the names of speakers."""


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def analyze_query(query: str, today: date, *, expand_dates: bool = True) -> QueryPlan:
    """Read ``query`` as asked on ``today``."""
    folded = _fold(query)
    return QueryPlan(
        text=query,
        terms=tokenize(query),
        dates=resolve_dates(query, today) if expand_dates else frozenset(),
        first_person=bool(_FIRST_PERSON.search(folded)),
        asks_when=asks_when(query),
        words=frozenset(re.findall(r"[^\W_]+", folded)),
    )


def speaker_tag(name: str) -> str:
    """The tag of memories said by ``name``."""
    return f"speaker:{_fold(name).strip()}"


def item_tags(value: dict[str, Any]) -> list[str]:
    """The exact-match tags a stored memory is indexed with (see the module doc)."""
    tags: list[str] = []
    speaker = value.get("speaker")
    if isinstance(speaker, str) and speaker.strip():
        tags.append(speaker_tag(speaker))
    role = value.get("role")
    if isinstance(role, str) and role:
        tags.append(f"role:{role}")
    mentioned, spoken = item_dates(value)
    tags += [f"date:{day.isoformat()}" for day in sorted(mentioned)]
    tags += [f"said:{day.isoformat()}" for day in sorted(spoken)]
    return tags


def mentioned_speakers(plan: QueryPlan, speakers: list[str]) -> list[str]:
    """The speaker tags among ``speakers`` whose name the question mentions."""
    found = []
    folded = _fold(plan.text)
    for tag in speakers:
        name = tag.removeprefix("speaker:")
        if name in plan.words or (not name.isascii() and name in folded):
            found.append(tag)
    return found


FREQUENT_NAME_MEMORIES = 10
"""The fewest memories a frequent name must be in (see :func:`frequent_names`)."""


def frequent_names(plan: QueryPlan, lexical: BM25Index, *, share: float) -> list[str]:
    """The names in the question that at least ``share`` of the memories hold, as tags.

    A name is a capitalised word after the question's first; it counts when it is in
    at least that share of ``lexical``'s memories and in :data:`FREQUENT_NAME_MEMORIES`
    of them. Such a name is someone the memories are said to or by (a conversation's
    two people), not what one of them is about. The tags are :func:`speaker_tag`'s, for
    :func:`without_names`.

    >>> index = BM25Index()
    >>> for n in range(10):
    ...     index.add(f"t{n}", f"Thanks Joanna! Turn {n}")
    >>> plan = analyze_query("What are Joanna's hobbies?", date(2023, 5, 14))
    >>> frequent_names(plan, index, share=0.1)
    ['speaker:joanna']
    >>> frequent_names(plan, index, share=0.5), frequent_names(plan, BM25Index(), share=0.1)
    (['speaker:joanna'], [])
    """
    found: list[str] = []
    total = len(lexical)
    for match in re.finditer(r"[^\W\d_]+", plan.text):
        word = match.group()
        terms = tokenize(word)
        if match.start() == 0 or not word.istitle() or len(terms) != 1:
            continue
        holding = lexical.holding(terms[0])
        if holding >= FREQUENT_NAME_MEMORIES and holding >= share * total:
            found.append(speaker_tag(word))
    return list(dict.fromkeys(found))


NAME_REPLACEMENT = ""
"""What a speaker's name in a question becomes for the embedding and keyword sides."""


def without_names(plan: QueryPlan, speakers: list[str]) -> QueryPlan:
    """The question with the named speakers' names taken out of its text and terms.

    >>> plan = analyze_query("Where did Caroline go hiking?", date(2023, 5, 14))
    >>> new = without_names(plan, ["speaker:caroline"])
    >>> new.text, new.terms
    ('Where did go hiking?', ['go', 'hike'])
    """
    text = plan.text
    for tag in speakers:
        name = tag.removeprefix("speaker:")
        pattern = rf"\b{re.escape(name)}\b" if name.isascii() else re.escape(name)
        text = re.sub(pattern + r"(?:'s)?\s?", NAME_REPLACEMENT, text, flags=re.IGNORECASE)
    text = re.sub(r"\s+", " ", text).strip()
    return replace(plan, text=text, terms=tokenize(text))
