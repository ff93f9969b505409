"""Keyword search over a user's facts: BM25 with CJK-aware tokenisation.

Chinese has no spaces, so CJK runs are split into overlapping character bigrams (as
Lucene's CJK analyzer does); other text is split into lower-cased words with a small
stop-word list and a light plural/possessive fold. The index is an inverted index that
is updated in place, so adding a fact costs microseconds and a query only scores the
facts that share a term with it.

>>> tokenize("I'm allergic to peanuts")
['allergic', 'peanut']
>>> tokenize("我对花生过敏")
['我对', '对花', '花生', '生过', '过敏']
>>> tokenize("住在Hangzhou西湖")
['住在', 'hangzhou', '西湖']
>>> index = BM25Index()
>>> index.add("a", "Allergic to peanuts")
>>> index.add("b", "住在杭州")
>>> [key for key, _ in index.search("peanut allergy", limit=5)]
['a']
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter

__all__ = ["BM25Index", "tokenize"]

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f"
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+", re.UNICODE)
_CJK_RUN = re.compile(rf"^[{_CJK}]+$")

STOP_WORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have he her
    him his how i i'm im in into is it its me my of on or our she so than that the their them
    then there these they this to too us was we were what when where which who why will with
    would you your yours""".split()
)
"""English words too common to say anything about a fact."""


def _fold(word: str) -> str:
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """Split ``text`` into search terms: CJK character bigrams and folded words."""
    terms: list[str] = []
    for run in _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold()):
        if _CJK_RUN.match(run):
            if len(run) == 1:
                terms.append(run)
            else:
                terms.extend(run[i : i + 2] for i in range(len(run) - 1))
        elif run not in STOP_WORDS and (len(run) > 1 or run.isdigit()):
            terms.append(_fold(run))
    return [term for term in terms if term not in STOP_WORDS]


class BM25Index:
    """An Okapi BM25 inverted index over short texts, updated in place.

    ``k1`` and ``b`` are the usual BM25 constants (term-frequency saturation and
    length normalisation).
    """

    def __init__(self, *, k1: float = 1.2, b: float = 0.75) -> None:
        """Create an empty index."""
        self.k1 = k1
        self.b = b
        self._postings: dict[str, dict[str, int]] = {}
        self._terms: dict[str, list[str]] = {}
        self._lengths: dict[str, int] = {}
        self._total_length = 0

    def __len__(self) -> int:
        """Number of indexed texts."""
        return len(self._lengths)

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is indexed."""
        return key in self._lengths

    def add(self, key: str, text: str) -> None:
        """Index ``text`` under ``key``, replacing what was there."""
        self.remove(key)
        counts = Counter(tokenize(text))
        for term, count in counts.items():
            self._postings.setdefault(term, {})[key] = count
        self._terms[key] = list(counts)
        length = sum(counts.values())
        self._lengths[key] = length
        self._total_length += length

    def remove(self, key: str) -> None:
        """Drop ``key`` from the index, if present."""
        length = self._lengths.pop(key, None)
        if length is None:
            return
        self._total_length -= length
        for term in self._terms.pop(key):
            docs = self._postings[term]
            del docs[key]
            if not docs:
                del self._postings[term]

    def search(self, query: str, *, limit: int) -> list[tuple[str, float]]:
        """The best ``limit`` keys for ``query`` with their BM25 scores, best first.

        Ties are broken by key so results are deterministic.
        """
        if not self._lengths:
            return []
        total = len(self._lengths)
        average = self._total_length / total or 1.0
        scores: dict[str, float] = {}
        for term in set(tokenize(query)):
            docs = self._postings.get(term)
            if not docs:
                continue
            idf = math.log(1 + (total - len(docs) + 0.5) / (len(docs) + 0.5))
            for key, frequency in docs.items():
                norm = self.k1 * (1 - self.b + self.b * self._lengths[key] / average)
                scores[key] = scores.get(key, 0.0) + idf * frequency * (self.k1 + 1) / (
                    frequency + norm
                )
        ranked = sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))
        return ranked[:limit]
