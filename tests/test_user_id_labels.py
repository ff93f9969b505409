"""A user id's allowed punctuation is matched literally by both stores.

``_`` is a LIKE wildcard, and the Postgres store filters namespaces with LIKE: if it did
not escape it, ``a_c`` would read ``abc``'s memories. Every other character a store treats
as special is refused by ``validate_user_id`` (``*``, ``%``, ``.``), so only the allowed
punctuation needs checking here.
"""

from __future__ import annotations

import pytest
from langgraph.store.base import BaseStore

from assistant.memory.namespaces import USER_ID_PUNCTUATION, user_facts_namespace


@pytest.fixture
def store(both_stores: BaseStore) -> BaseStore:
    return both_stores


@pytest.mark.parametrize("mark", list(USER_ID_PUNCTUATION))
async def test_punctuation_in_a_user_id_matches_only_itself(store: BaseStore, mark: str) -> None:
    mine = f"a{mark}c"
    others = ["abc", "aXc", f"a{mark}cd", f"xa{mark}c", "a", "ac"]
    for user in [mine, *others]:
        await store.aput(user_facts_namespace(user), "k", {"content": f"fact of {user}"})

    found = await store.alist_namespaces(prefix=user_facts_namespace(mine))
    assert found == [user_facts_namespace(mine)]
    items = await store.asearch(user_facts_namespace(mine), limit=50)
    assert [item.value["content"] for item in items] == [f"fact of {mine}"]
    ranked = await store.asearch(user_facts_namespace(mine), query="fact", limit=50)
    assert [item.value["content"] for item in ranked] == [f"fact of {mine}"]
