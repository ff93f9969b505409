"""Keyword search over a user's memories: BM25 with CJK-aware tokenisation.

Chinese has no spaces, so CJK runs are split into overlapping character bigrams (as
Lucene's CJK analyzer does); other text is split into lower-cased words, English stop
words left out, and each word reduced to its Snowball stem in the language its script
tells (:data:`STEM`; plain ASCII words as English, Cyrillic as Russian, Greek as Greek;
other words only lose a plural "s"). On LoCoMo's dev conversations stemming raises
recall@10 from 0.595 to 0.627 text only and from 0.818 to 0.837 with turn metadata
(``bench/locomo.py --ablation``); the bilingual fact set (bench/recall.py) is unchanged.

:data:`CJK_MODE` ``"words"`` or ``"both"`` (jieba's word segmentation, ``rjieba``) stays
switchable for the benchmark's ablation (bench/conversations.py), which measured it not
to pay on long conversations; ``rjieba`` is only imported when switched on, and comes
with the ``dev`` and ``bench`` extras.

A memory is indexed with its own words and, at :data:`CONTEXT_WEIGHT`, the words of the
turn before it (``context``), so "Biscuit, the kids picked it." is found by "what is the
dog's name?" when the turn before asked "what did you name it?". At
:data:`NEXT_TURN_WEIGHT` it also holds the words of the turn after it, when the index
knows that turn (:class:`~assistant.memory.search.user_index.UserIndex` links turns by their
``thread_id`` and ``turn``): "Take a look at this." is found by what its reply says.
Tags (the speaker, the days it mentions or was said on) are kept in a separate
exact-match map; they never count in BM25.

The index is inverted and updated in place, so adding a memory costs microseconds and a
query only scores the memories that share a term with it.

>>> tokenize("I'm allergic to peanuts")
['allerg', 'peanut']
>>> tokenize("我对花生过敏")
['我对', '对花', '花生', '生过', '过敏']
>>> tokenize("住在Hangzhou西湖")
['住在', 'hangzhou', '西湖']
>>> index = BM25Index()
>>> index.add("a", "Allergic to peanuts")
>>> index.add("b", "住在杭州", tags=["speaker:li"])
>>> [key for key, _ in index.search("peanut allergy", limit=5)]
['a']
>>> index.tagged("speaker:li")
{'b'}
"""

from __future__ import annotations

import heapq
import math
import re
import threading
import unicodedata
from collections.abc import Iterable
from functools import cache, lru_cache
from typing import Any

import snowballstemmer

__all__ = ["CJK_LETTER", "BM25Index", "STOP_WORDS", "tokenize"]

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f"
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+", re.UNICODE)
_CJK_RUN = re.compile(rf"^[{_CJK}]+$")
CJK_LETTER = re.compile(rf"[{_CJK}]")
"""One Chinese, Japanese or Korean letter (ideograph, kana or hangul)."""

STOP_WORDS = frozenset(
    """a about am an and any are as at be been but by can could did do does doing for from
    get got had has have he her him his how i i'm im in into is it it's its just me my of
    on or our she so some than that the their them then there these they this to too us
    very was we were what when where which who whom why will with would you your yours""".split()
)
"""English words too common to say anything about a memory."""

CJK_MODE = "bigrams"
"""How CJK runs become terms: "bigrams", "words" (jieba's search cut), or "both"
(bigrams plus jieba words of three or more characters)."""

STEM = True
"""Reduce words to their Snowball stem (False: only fold English plurals)."""

CONTEXT_WEIGHT = 0.5
"""Term-frequency weight of the previous turn's words in a memory's document."""

NEXT_TURN_WEIGHT = 0.5
"""Term-frequency weight of the next turn's words in a memory's document (LoCoMo dev
recall@10 with turn metadata 0.859 at 0 -> 0.864)."""


_SCRIPT_LANGUAGES = (
    (re.compile(r"[a-z0-9]+"), "english"),
    (re.compile(r"[\u0400-\u04ff0-9]+"), "russian"),
    (re.compile(r"[\u0370-\u03ff\u1f00-\u1fff0-9]+"), "greek"),
)
"""The Snowball stemmer for a word all in one script that tells its language: plain
ASCII letters are read as English (the Latin-script language recall is measured on),
Cyrillic as Russian, Greek as Greek. Other words (accented Latin, whose language a
word cannot tell; scripts without a Snowball stemmer) only lose a plural "s"."""


_STEMMING = threading.Lock()
"""A Snowball stemmer keeps the word it works on in itself: one word at a time."""


@lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    for script, language in _SCRIPT_LANGUAGES:
        if script.fullmatch(word):
            with _STEMMING:
                return str(_stemmer(language).stemWord(word))
    return _fold(word)


@cache
def _stemmer(language: str) -> Any:
    return snowballstemmer.stemmer(language)


def _fold(word: str) -> str:
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _cjk_terms(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    bigrams = [run[i : i + 2] for i in range(len(run) - 1)]
    if CJK_MODE == "bigrams":
        return bigrams
    import rjieba

    words = [word for word in rjieba.cut_for_search(run) if _CJK_RUN.match(word)]
    if CJK_MODE == "words":
        return words
    return bigrams + [word for word in words if len(word) > 2]


def tokenize(text: str) -> list[str]:
    """Split ``text`` into search terms: stemmed words and Chinese bigrams."""
    terms: list[str] = []
    for run in _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold()):
        if _CJK_RUN.match(run):
            terms.extend(_cjk_terms(run))
        elif run not in STOP_WORDS and (len(run) > 1 or run.isdigit()):
            terms.append(_stem(run) if STEM else _fold(run))
    return [term for term in terms if term not in STOP_WORDS]


class BM25Index:
    """An Okapi BM25 inverted index over short texts, updated in place.

    ``k1`` and ``b`` are the usual BM25 constants (term-frequency saturation and
    length normalisation); the defaults are Anserini's, which suit short texts such as
    turns and facts better than the textbook 1.2 and 0.75 (LoCoMo dev recall@10, text
    only: 0.607 -> 0.627).
    """

    def __init__(self, *, k1: float = 0.9, b: float = 0.4) -> None:
        """Create an empty index."""
        self.k1 = k1
        self.b = b
        self._postings: dict[str, dict[str, float]] = {}
        self._terms: dict[str, list[str]] = {}
        self._lengths: dict[str, float] = {}
        self._total_length = 0.0
        self._tagged: dict[str, set[str]] = {}
        self._tags: dict[str, list[str]] = {}
        self._kinds: dict[str, set[str]] = {}

    def __len__(self) -> int:
        """Number of indexed texts."""
        return len(self._lengths)

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is indexed."""
        return key in self._lengths

    def add(
        self,
        key: str,
        text: str,
        *,
        context: str = "",
        next_turn: str = "",
        tags: Iterable[str] = (),
    ) -> None:
        """Index ``text`` (``context`` and ``next_turn`` at their weights) under ``key``.

        ``tags`` are exact labels found again with :meth:`tagged`. Replaces what ``key``
        had.
        """
        self.remove(key)
        counts: dict[str, float] = {}
        for term in tokenize(text):
            counts[term] = counts.get(term, 0.0) + 1.0
        for around, weight in ((context, CONTEXT_WEIGHT), (next_turn, NEXT_TURN_WEIGHT)):
            if around and weight:
                for term in tokenize(around):
                    counts[term] = counts.get(term, 0.0) + weight
        for term, count in counts.items():
            self._postings.setdefault(term, {})[key] = float(count)
        self._terms[key] = list(counts)
        length = float(sum(counts.values()))
        self._lengths[key] = length
        self._total_length += length
        unique_tags = list(dict.fromkeys(tags))
        for tag in unique_tags:
            self._tagged.setdefault(tag, set()).add(key)
            self._kinds.setdefault(tag.partition(":")[0], set()).add(tag)
        self._tags[key] = unique_tags

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
        for tag in self._tags.pop(key, []):
            keys = self._tagged[tag]
            keys.discard(key)
            if not keys:
                del self._tagged[tag]
                self._kinds[tag.partition(":")[0]].discard(tag)

    def tagged(self, tag: str) -> set[str]:
        """The keys indexed with ``tag`` (a copy)."""
        return set(self._tagged.get(tag, ()))

    def tags_of_kind(self, kind: str) -> list[str]:
        """The tags in use that start with ``kind:``, sorted."""
        return sorted(self._kinds.get(kind, ()))

    def search(self, query: str, *, limit: int) -> list[tuple[str, float]]:
        """The best ``limit`` keys for ``query`` with their BM25 scores, best first.

        Ties are broken by key so results are deterministic.
        """
        return self.search_terms(tokenize(query), limit=limit)

    def holding(self, term: str) -> int:
        """How many indexed texts hold ``term`` (its document frequency)."""
        return len(self._postings.get(term, ()))

    def term_counts(self, key: str) -> dict[str, float]:
        """The terms of ``key``'s document with their (weighted) counts."""
        return {term: self._postings[term][key] for term in self._terms.get(key, ())}

    def search_terms(self, terms: Iterable[str], *, limit: int) -> list[tuple[str, float]]:
        """Like :meth:`search`, for a query already split into terms."""
        return self.best(self.scores(dict.fromkeys(terms, 1.0)), limit=limit)

    def search_weighted(self, query: dict[str, float], *, limit: int) -> list[tuple[str, float]]:
        """Like :meth:`search_terms`, each term's BM25 score times its weight in ``query``.

        >>> index = BM25Index()
        >>> index.add("a", "dance studio")
        >>> index.add("b", "studio rent")
        >>> [key for key, _ in index.search_weighted({"studio": 1.0, "rent": 0.1}, limit=2)]
        ['b', 'a']
        """
        return self.best(self.scores(query), limit=limit)

    def scores(
        self, query: dict[str, float], *, among: Iterable[str] | None = None
    ) -> dict[str, float]:
        """Every text that holds a term of ``query``, with its weighted BM25 score.

        ``among``: score only these keys (cheaper than the whole index for common terms).
        """
        if not self._lengths:
            return {}
        total = len(self._lengths)
        average = self._total_length / total or 1.0
        k1, b = self.k1, self.b
        lengths = self._lengths
        scores: dict[str, float] = {}
        for term, weight in query.items():
            docs = self._postings.get(term)
            if not docs:
                continue
            idf = weight * math.log(1 + (total - len(docs) + 0.5) / (len(docs) + 0.5))
            if among is not None:
                docs = {key: docs[key] for key in among if key in docs}
            for key, frequency in docs.items():
                norm = k1 * (1 - b + b * lengths[key] / average)
                scores[key] = scores.get(key, 0.0) + idf * frequency * (k1 + 1) / (frequency + norm)
        return scores

    @staticmethod
    def best(scores: dict[str, float], *, limit: int) -> list[tuple[str, float]]:
        """The ``limit`` best of ``scores``, best first; ties broken by key."""
        if len(scores) > limit:
            return heapq.nsmallest(limit, scores.items(), key=lambda pair: (-pair[1], pair[0]))
        return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))
