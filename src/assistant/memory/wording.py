"""A fact's words: compared with case, width, punctuation and spacing aside, and redacted.

Forgetting a fact takes its words out of every text the memory layer keeps (`assistant.memory.
user_actions`); these are the rules for when a text says a fact.

>>> normalize_fact("Lives in  Hangzhou.") == normalize_fact("lives in hangzhou")
True
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from assistant.inference.tokens import is_cjk_text
from assistant.memory.records import FORGOTTEN

__all__ = ["MIN_QUOTED_CHARS", "normalize_fact", "quotes_fact", "redact_text"]


def normalize_fact(content: str) -> str:
    """Fold case, width, punctuation and spacing so trivially different wordings compare equal.

    >>> normalize_fact("Lives in  Hangzhou.") == normalize_fact("lives in hangzhou")
    True
    >>> normalize_fact("住在杭州。") == normalize_fact("住在杭州")
    True
    """
    folded = unicodedata.normalize("NFKC", content).casefold()
    return "".join(ch for ch in folded if ch.isalnum())


MIN_QUOTED_CHARS = 8
"""Shortest normalised fact (4 for Chinese, Japanese or Korean) that :func:`quotes_fact`
looks for inside a longer text; a shorter one only matches a text that says exactly it,
so that forgetting "Is 30" does not touch every text holding "this 30"."""


def _shortest(fact: str) -> int:
    return MIN_QUOTED_CHARS // 2 if is_cjk_text(fact) else MIN_QUOTED_CHARS


def quotes_fact(text: str, fact: str) -> bool:
    """Whether ``text`` says ``fact`` word for word (case, width, punctuation and spacing aside).

    >>> quotes_fact("I said: lives in  Hangzhou!", "Lives in Hangzhou")
    True
    >>> quotes_fact("我现在住在杭州了", "住在杭州"), quotes_fact("this 30", "Is 30")
    (True, False)
    """
    wanted, found = normalize_fact(fact), normalize_fact(text)
    if not wanted:
        return False
    return wanted in found if len(wanted) >= _shortest(fact) else wanted == found


def redact_text(text: str, facts: Iterable[str]) -> str:
    """``text`` with every word-for-word occurrence of each of ``facts`` replaced.

    Case and spacing are ignored, and so is a fact's final full stop; a fact shorter than
    :data:`MIN_QUOTED_CHARS` (after normalising) is left alone, as in :func:`quotes_fact`.

    >>> redact_text("The user lives in  Hangzhou and likes tea.", ["Lives in Hangzhou."])
    'The user [forgotten] and likes tea.'
    """
    for fact in sorted(facts, key=len, reverse=True):  # "X, near Y" before "X"
        words = fact.strip().rstrip(".。!！").split()
        if not words or len(normalize_fact(fact)) < _shortest(fact):
            continue
        pattern = r"\s+".join(re.escape(word) for word in words)
        text = re.sub(pattern, FORGOTTEN, text, flags=re.IGNORECASE)
    return text
