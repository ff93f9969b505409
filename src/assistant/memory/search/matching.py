"""The facts that match a text: hybrid recall's best, kept only above a relevance floor.

Recall ranks (the best few facts go into a prompt, however loosely they relate); a search
by text that a person reads, or that picks the fact to forget, must also say whether
anything matches at all: :func:`matching` keeps only the facts whose match score
(`assistant.memory.search.ranking.match_scores`) reaches `MATCH_FLOOR`.
"""

from __future__ import annotations

import numpy as np
from langgraph.store.base import BaseStore, SearchItem

from assistant.inference.tokens import is_cjk_text
from assistant.memory.namespaces import user_facts_namespace
from assistant.memory.search.index import (
    hybrid_search,
    scored,
    store_embeddings,
    text_vectors,
)
from assistant.memory.search.ranking import match_scores
from assistant.memory.search.vectors import fixed_vectors

__all__ = ["MATCH_FLOOR", "matching"]

MATCH_FLOOR = 0.037
"""The least match score of a fact that matches a text (`matching`).

Chosen on the dev split of ``bench/data/relevance_floor.json`` (facts and queries in
English, Chinese, German, Spanish, Japanese, mixed and misspelt; ``python
bench/relevance_floor.py``), checked on its test split; the figures per language are in
``bench/RESULTS.md``."""

MATCH_PERCENTILE = 90.0
"""Which of a query's cosines with `BACKGROUND` is its baseline: the 90th percentile, so
that one background fact close to the query moves it little."""

MATCH_LEXICAL_WEIGHT = 0.04
"""Added to the match score, times the share of the query's terms a fact holds (a
misspelt or translated query holds none, and still matches by its embedding)."""

MATCH_CANDIDATES = 20
"""How many of hybrid recall's best facts are scored against the floor."""

BACKGROUND = (
    "Has a younger brother who lives in Toronto",
    "Works night shifts at a hospital",
    "Learning to bake sourdough bread",
    "Owns a red motorcycle",
    "Takes the train to the office",
    "Grew up on a farm in Iowa",
    "Is saving money for a house",
    "Watches football every Sunday",
    "Reads a novel every month",
    "Moved into a new flat last spring",
    "喜欢在周末看电影",
    "有一个十岁的儿子",
    "每天坐地铁上班",
    "老家在四川成都",
    "最近在学做菜",
    "养了一只金鱼",
    "Arbeitet in einer Bank in Frankfurt",
    "Hat zwei Kinder im Schulalter",
    "Geht gern im Wald spazieren",
    "Kocht am liebsten italienisch",
    "Trabaja como abogada en Madrid",
    "Tiene un hermano mayor en México",
    "Le gusta leer novelas policiacas",
    "Va al gimnasio por las mañanas",
    "大学で経済学を勉強した",
    "毎晩日記を書いている",
    "弟が二人いる",
    "車で通勤している",
)
"""Facts of nobody in particular, in the languages users write in: what an unrelated fact
scores against a query, the baseline of its match scores."""

_BACKGROUND_CJK = np.array([is_cjk_text(text) for text in BACKGROUND], dtype=bool)


async def matching(
    store: BaseStore, user_id: str, query: str, *, limit: int, floor: float = MATCH_FLOOR
) -> list[SearchItem]:
    """The user's current facts that match ``query``, best first, each with its match score.

    Hybrid recall's `MATCH_CANDIDATES` best facts are scored (`match_scores`); those below
    ``floor`` are dropped, so an unrelated query finds nothing rather than the least
    unrelated fact. ``score`` is the match score (`MATCH_FLOOR` or more).
    """
    if limit <= 0 or not query.strip():
        return []
    namespace = user_facts_namespace(user_id)
    found = await hybrid_search(store, namespace, query, limit=max(limit, MATCH_CANDIDATES))
    if not found:
        return []
    embeddings = store_embeddings(store)
    background = await fixed_vectors(embeddings, BACKGROUND)
    scores = match_scores(
        query,
        await embeddings.aembed_query(query),
        [str(item.value.get("content", "")) for item in found],
        await text_vectors(store, namespace, found),
        background,
        _BACKGROUND_CJK,
        lexical_weight=MATCH_LEXICAL_WEIGHT,
        percentile=MATCH_PERCENTILE,
    )
    kept = [
        scored(item, score) for item, score in zip(found, scores, strict=True) if score >= floor
    ]
    return sorted(kept, key=lambda item: -(item.score or 0.0))[:limit]
