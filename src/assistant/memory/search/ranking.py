"""How hybrid recall ranks a user's memories: pure functions of the index and the question.

Three rankings (embedding similarity, BM25, and the question's days) are fused by
reciprocal rank, and memories said by the speaker asked about gain a boost. The BM25
ranking is then redone with the words of the first pass's best memories added to the
question's (RM3 pseudo-relevance feedback), and the rankings fused again. Nothing here
reads the store or embeds anything: :mod:`assistant.memory.search.index` brings the index and
the query's vector, so each step can be tested on its own.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from langgraph.store.base import SearchItem

from assistant.inference.tokens import is_cjk_text
from assistant.memory.search.lexical import BM25Index, tokenize
from assistant.memory.search.query import QueryPlan
from assistant.memory.search.user_index import UserIndex

__all__ = [
    "WEIGHTS",
    "FusionWeights",
    "Keywords",
    "date_ranking",
    "feedback_terms",
    "favoured",
    "fuse",
    "keyword_side",
    "match_scores",
    "rank",
    "store_ranking",
    "vector_scores",
    "with_next_turns",
]


@dataclass(frozen=True, kw_only=True)
class FusionWeights:
    """The fixed weights of hybrid recall.

    score = Σ over rankings of weight / (rrf_k + rank), then
    × (1 + speaker_boost) for memories said by the speaker asked about

    Each default is what LoCoMo's dev conversations and the bilingual fact set measured
    (``python bench/locomo.py --ablation``); features that helped on neither (a recency
    and an importance boost, a small-talk penalty, neighbouring turns) were removed.
    """

    rrf_k: int = 10
    """Reciprocal-rank-fusion constant; larger flattens the difference between ranks.
    10 rather than the customary 60: the best few of each ranking decide (LoCoMo dev
    recall@10, text only 0.454 at 60 -> 0.627 at 10, with turn metadata 0.814 -> 0.837;
    no change on the fact set)."""
    vector_weight: float = 0.7
    """Weight of the embedding ranking. Below BM25's: on conversations the embedding ranks
    small talk that names the person asked about high (LoCoMo dev recall@10, text only
    0.430 at 1.5 -> 0.627 at 0.7; the fact set, which needs it across languages, is the
    same at both)."""
    lexical_weight: float = 1.0
    """Weight of the BM25 ranking."""
    latin_query_offset: float = 0.006
    """Added to the cosine of a CJK fact when the query is not CJK (English, say)."""
    cjk_query_offset: float = 0.086
    """Added to the cosine of a non-CJK fact when the query is CJK (Chinese, say).

    multilingual-e5 scores same-language pairs higher whatever they mean, and much more
    so for Chinese queries. Both offsets are the gap between same- and cross-script
    pairs of *unrelated* texts (facts and queries of different users), measured per
    query script by ``bench/recall.py --calibrate``; no relevance label is used."""

    def cross_language_offset(self, query_cjk: bool) -> float:
        """The offset for facts in the other script than a query in this one."""
        return self.cjk_query_offset if query_cjk else self.latin_query_offset

    candidates: int = 50
    """How many candidates each ranking contributes."""
    window_weight: float = 1.0
    """Weight of a memory's window (the turn before it and its text, embedded together) in
    its embedding similarity, beside its text's own (weight 1). A memory without a
    ``context`` is its own window. "Yes, since I moved from Sweden" answers "Where did
    she move from?" only with the turn before it (LoCoMo dev recall@10 with turn
    metadata, with the next turn's share on: 0.852 at 0 -> 0.864 at 1)."""
    next_turn_weight: float = 0.3
    """Share of the best similarity among the memories of the next turn in the thread
    added to a memory's own, above the lowest similarity (turns are linked by their
    ``thread_id`` and ``turn``): a turn is also judged by its reply ("Take a look at
    this." -> "What a beautiful sunrise painting!"; LoCoMo dev recall@10 with turn metadata
    0.857 at 0 -> 0.864)."""
    date_weight: float = 3.0
    """Weight of the date ranking, for a question that names days ("last Saturday",
    "上周六"): memories that mention one of them first, then those said on one."""
    expand_dates: bool = True
    """Resolve the question's relative dates against the day it is asked."""
    speaker_boost: float = 1.0
    """Gain for memories said by a speaker the question names (or by the user, when
    the question says "I"/"my"/"我")."""
    frequent_name_share: float = 0.1
    """A name in the question (a capitalised word after its first) that at least this
    share of the memories hold, and at least ten of them, is taken out of the question,
    as a speaker's name is (0: never). Such a name is someone the memories talk to, not
    a topic: without turn metadata, "What are Joanna's hobbies?" otherwise finds every
    "Wow Joanna, ..." (LoCoMo dev recall@10 text only 0.612 -> 0.751)."""
    feedback_weight: float = 0.3
    """Pseudo-relevance feedback (RM3): the share of the keyword query given to the
    words of the first pass's best memories (0: off). Only memories the keyword ranking
    found feed it, so a first pass found by the embedding alone (a question in another
    language than its memories) adds nothing (LoCoMo dev recall@10 text only 0.732 ->
    0.751, with turn metadata 0.837 -> 0.838; the fact set unchanged)."""
    feedback_memories: int = 5
    """How many of the first pass's best memories feed the keyword query."""
    feedback_terms: int = 10
    """How many of their words, most weighty first, join the keyword query."""
    feedback_max_share: float = 0.1
    """A word more than this share of the memories hold never joins the keyword query:
    like a frequent name, it says little about which memory answers ("great", "thanks",
    the other person's name). Small indexes (under ten memories) are never widened (LoCoMo
    dev recall@10 0.746 -> 0.751 text only, 0.833 -> 0.838 with turn metadata; 0.05 and
    0.2 gave 0.739 / 0.840 and 0.744 / 0.840: a gain of a few questions)."""


WEIGHTS = FusionWeights()
"""The weights recall uses."""


def fuse(
    rankings: Iterable[tuple[float, Sequence[str]]],
    *,
    limit: int,
    weights: FusionWeights = WEIGHTS,
    favoured: set[str] | frozenset[str] = frozenset(),
) -> list[tuple[str, float]]:
    """Reciprocal rank fusion of ``(weight, keys best first)`` rankings.

    Keys in ``favoured`` (said by the speaker the question is about) gain
    ``weights.speaker_boost``. Deterministic: ties are broken by key.

    >>> [key for key, _ in fuse([(1.0, ["a", "b"]), (1.0, ["c", "b"])], limit=3)]
    ['b', 'a', 'c']
    """
    scores: dict[str, float] = {}
    for weight, keys in rankings:
        for rank, key in enumerate(keys, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (weights.rrf_k + rank)
    boosted = {
        key: score * (1.0 + weights.speaker_boost * (key in favoured))
        for key, score in scores.items()
    }
    return sorted(boosted.items(), key=lambda pair: (-pair[1], pair[0]))[:limit]


def vector_scores(
    index: UserIndex, query_vector: Sequence[float], *, query_cjk: bool, weights: FusionWeights
) -> np.ndarray[Any, Any]:
    """Each memory's similarity to the query, by row.

    Its text's cosine plus ``window_weight`` times its window's, each with the
    cross-language offset, then the share of its next turn's (:func:`with_next_turns`).
    """
    count = len(index)
    query = np.asarray(query_vector, dtype=np.float32)
    norm = math.sqrt(float(np.dot(query, query))) or 1.0
    weight = weights.window_weight
    if weight == 1.0:  # text + window: one product, which reads half the memory of two
        scores = index.sums[:count] @ query
    elif weight:  # (1 - w) text + w (text + window)
        texts = index.vectors[:count] @ query
        scores = (1.0 - weight) * texts + weight * (index.sums[:count] @ query)
    else:
        scores = index.vectors[:count] @ query
    offset = weights.cross_language_offset(query_cjk) * (1 + weights.window_weight)
    adjusted: np.ndarray[Any, Any] = scores / norm + offset * (index.cjk[:count] != query_cjk)
    return with_next_turns(index, adjusted, weights)


def with_next_turns(
    index: UserIndex, scores: np.ndarray[Any, Any], weights: FusionWeights
) -> np.ndarray[Any, Any]:
    """``scores`` with each memory's share of its next turn's best, above the lowest score.

    Only the memories that can reach the candidates are scored again: the best
    4 × ``candidates`` by their own score and the turns before them.
    """
    if not weights.next_turn_weight or not index.turn_of or not len(scores):
        return scores
    pool = min(len(scores), 4 * weights.candidates)
    keys = {index.keys[row] for row in np.argpartition(-scores, pool - 1)[:pool].tolist()}
    keys |= {before for key in list(keys) for before in index.previous_turn_keys(key)}
    lowest = float(scores.min())
    adjusted = scores.copy()
    for key in keys:
        following = index.next_turn_keys(key)
        if following:
            best = max(float(scores[index.rows[after]]) for after in following)
            adjusted[index.rows[key]] += weights.next_turn_weight * (best - lowest)
    return adjusted


def _best(index: UserIndex, scores: np.ndarray[Any, Any], limit: int) -> list[str]:
    """The keys of the ``limit`` best scores, best first (ties by row)."""
    take = min(limit, len(index))
    top = np.argpartition(-scores, take - 1)[:take]
    return [index.keys[row] for row in sorted(top.tolist(), key=lambda r: (-scores[r], r))]


def date_ranking(
    index: UserIndex, plan: QueryPlan, scores: np.ndarray[Any, Any], weights: FusionWeights
) -> list[str]:
    """Memories on the question's days, each group by embedding similarity.

    Those that mention one of the days come first, then those said on one.
    """
    mentioned: set[str] = set()
    spoken: set[str] = set()
    for day in plan.dates:
        mentioned |= index.lexical.tagged(f"date:{day.isoformat()}")
        spoken |= index.lexical.tagged(f"said:{day.isoformat()}")
    spoken -= mentioned

    def by_similarity(keys: set[str]) -> list[str]:
        return sorted(keys, key=lambda key: (-float(scores[index.rows[key]]), key))

    return [*by_similarity(mentioned), *by_similarity(spoken)][: weights.candidates]


def favoured(index: UserIndex, plan: QueryPlan, speakers: list[str]) -> set[str]:
    """Memories said by the speakers the question names, or by the user when it says "I"."""
    keys: set[str] = set()
    for tag in speakers:
        keys |= index.lexical.tagged(tag)
    if plan.first_person:
        keys |= index.lexical.tagged("role:user")
    return keys


@dataclass(frozen=True)
class Keywords:
    """The keyword side of a query: each memory's BM25 score, and the best of them in order.

    It needs no query vector, so it is worked out while the query is embedded.
    """

    scores: dict[str, float]
    ranking: list[str]


def keyword_side(index: UserIndex, plan: QueryPlan, weights: FusionWeights) -> Keywords:
    """The BM25 scores of ``plan``'s terms over ``index``, and the ``candidates`` best."""
    scores = index.lexical.scores(dict.fromkeys(plan.terms, 1.0))
    found = BM25Index.best(scores, limit=weights.candidates)
    return Keywords(scores, [key for key, _ in found])


def _rankings(
    index: UserIndex,
    plan: QueryPlan,
    scores: np.ndarray[Any, Any],
    keywords: Keywords,
    weights: FusionWeights,
) -> list[tuple[float, list[str]]]:
    """The vector, keyword and date rankings, each ``(weight, keys best first)``."""
    date_weight = weights.date_weight if plan.dates else 0.0
    return [
        (weights.vector_weight, _best(index, scores, weights.candidates)),
        (weights.lexical_weight, keywords.ranking),
        (date_weight, date_ranking(index, plan, scores, weights) if date_weight else []),
    ]


def feedback_terms(
    index: UserIndex, feedback: Sequence[tuple[str, float]], weights: FusionWeights
) -> dict[str, float]:
    """RM3's expansion: the words the ``feedback`` memories are made of, weightiest first.

    Each memory lends its words in proportion to its score and to their share of its
    text, leaving out words more than ``weights.feedback_max_share`` of the memories
    hold; the ``weights.feedback_terms`` weightiest share ``weights.feedback_weight``.

    >>> index = UserIndex(dims=1)
    >>> index.lexical.add("a", "dance studio, dance class")
    >>> for n in range(10):
    ...     index.lexical.add(f"other {n}", f"a class of {n}")
    >>> {term: round(weight, 2) for term, weight in feedback_terms(
    ...     index, [("a", 1.0)], FusionWeights()).items()}
    {'danc': 0.2, 'studio': 0.1}
    """
    total = sum(score for _, score in feedback) or 1.0
    most = weights.feedback_max_share * len(index.lexical)
    model: dict[str, float] = {}
    for key, score in feedback:
        counts = index.lexical.term_counts(key)
        length = sum(counts.values()) or 1.0
        for term, count in counts.items():
            if index.lexical.holding(term) <= most:
                model[term] = model.get(term, 0.0) + score / total * count / length
    best = sorted(model.items(), key=lambda pair: (-pair[1], pair[0]))[: weights.feedback_terms]
    norm = sum(value for _, value in best) or 1.0
    return {term: weights.feedback_weight * value / norm for term, value in best}


def _feedback_ranking(
    index: UserIndex,
    rankings: list[tuple[float, list[str]]],
    keywords: Keywords,
    plan: QueryPlan,
    boosted: set[str],
    weights: FusionWeights,
) -> list[str]:
    """The keyword ranking again, the question's terms widened by the first pass (RM3).

    The feedback memories are the first pass's best that share a term with the question.
    BM25 adds up over terms, so the question's own terms keep their first scores, scaled
    to their share of the query, and the expansion's terms are scored only for the first
    pass's candidates: a common word's long list of memories is never walked (at 10,000
    memories, walking them cost 4 ms a query; these few lookups cost under 1 ms). A memory
    the expansion does not score keeps its scaled first score, so only the first pass's
    keyword ranking can place one in the new ranking: the rest are never ranked again.
    """
    first = fuse(rankings, limit=weights.candidates, weights=weights, favoured=boosted)
    scores = keywords.scores
    feedback = [pair for pair in first if pair[0] in scores][: weights.feedback_memories]
    own = (1 - weights.feedback_weight) / len(set(plan.terms))
    candidates = {key for _, keys in rankings for key in keys}
    expansion = index.lexical.scores(feedback_terms(index, feedback, weights), among=candidates)
    mixed = {
        key: own * scores.get(key, 0.0) + expansion.get(key, 0.0)
        for key in (*keywords.ranking, *expansion)
    }
    return [key for key, _ in BM25Index.best(mixed, limit=weights.candidates)]


def rank(
    index: UserIndex,
    plan: QueryPlan,
    query_vector: Sequence[float],
    keywords: Keywords,
    *,
    query_cjk: bool,
    speakers: list[str],
    limit: int,
    weights: FusionWeights = WEIGHTS,
) -> list[tuple[str, float]]:
    """The ``limit`` best keys of a non-empty ``index`` for ``plan``, with their scores.

    ``keywords`` is the plan's :func:`keyword_side` (worked out while the query was
    embedded). With feedback on (``weights.feedback_weight``), the keyword ranking is the
    second pass of :func:`_feedback_ranking`.
    """
    scores = vector_scores(index, query_vector, query_cjk=query_cjk, weights=weights)
    boosted = favoured(index, plan, speakers) if weights.speaker_boost else set()
    rankings = _rankings(index, plan, scores, keywords, weights)
    if weights.feedback_weight and keywords.scores:
        ranking = _feedback_ranking(index, rankings, keywords, plan, boosted, weights)
        rankings[1] = (weights.lexical_weight, ranking)
    return fuse(rankings, limit=limit, weights=weights, favoured=boosted)


def store_ranking(
    found: Sequence[SearchItem], *, query_cjk: bool, limit: int, weights: FusionWeights = WEIGHTS
) -> list[tuple[str, float]]:
    """The store's own vector search results, with the cross-language offset, fused alone.

    What recall ranks while a user's index is first built.
    """
    offset = weights.cross_language_offset(query_cjk)
    adjusted = {
        item.key: (item.score or 0.0)
        + offset * (is_cjk_text(str(item.value.get("content", ""))) != query_cjk)
        for item in found
    }
    ranking = sorted(adjusted, key=lambda key: (-adjusted[key], key))
    return fuse([(weights.vector_weight, ranking)], limit=limit, weights=weights)


def match_scores(
    query: str,
    query_vector: Sequence[float],
    texts: Sequence[str],
    vectors: np.ndarray[Any, Any],
    background: np.ndarray[Any, Any],
    background_cjk: np.ndarray[Any, Any],
    *,
    lexical_weight: float,
    percentile: float,
    weights: FusionWeights = WEIGHTS,
) -> list[float]:
    """How well each of ``texts`` matches ``query``, on a scale that means the same for any query.

    Reciprocal-rank scores say which memory is best, never whether any is good: the first
    hit of an unrelated query scores like the first hit of an exact one, and e5's raw
    cosines sit between 0.75 and 0.9 for related and unrelated pairs alike, higher for
    some queries and languages than for others. So each text's cosine (with the
    cross-language offset) is measured against the same query's cosines with
    ``background``, facts of nobody in particular in the text's script (CJK or not, as e5's
    same-script bias goes): the margin over their ``percentile``-th percentile, plus
    ``lexical_weight`` times the share of the query's terms the text holds. Above 0, a
    text is closer to the query than most unrelated facts are.

    ``vectors`` and ``background`` hold unit vectors by row; ``background_cjk`` says
    which background rows are CJK.

    >>> unit = np.eye(3, dtype=np.float32)
    >>> [round(score, 2) for score in match_scores(
    ...     "tea", [1.0, 0.0, 0.0], ["tea", "coffee"], unit[:2], unit[1:], np.zeros(2, bool),
    ...     lexical_weight=0.1, percentile=90)]
    [1.1, 0.0]
    """
    if not len(texts):
        return []
    query_cjk = is_cjk_text(query)
    query_array = np.asarray(query_vector, dtype=np.float32)
    query_array = query_array / (float(np.linalg.norm(query_array)) or 1.0)
    offset = weights.cross_language_offset(query_cjk)
    texts_cjk = np.array([is_cjk_text(text) for text in texts], dtype=bool)
    cosines = vectors @ query_array + offset * (texts_cjk != query_cjk)
    unrelated = background @ query_array + offset * (background_cjk != query_cjk)

    def baseline(cjk: bool) -> float:
        same = unrelated[background_cjk == cjk]
        return float(np.percentile(same, percentile)) if len(same) else 0.0

    baselines = {cjk: baseline(cjk) for cjk in (False, True)}
    terms = set(tokenize(query))
    shares = [len(terms & set(tokenize(text))) / len(terms) if terms else 0.0 for text in texts]
    return [
        float(cosine) - baselines[bool(cjk)] + lexical_weight * share
        for cosine, cjk, share in zip(cosines.tolist(), texts_cjk, shares, strict=True)
    ]
