from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from assistant.compat import patch_inmemory_store


async def test_a_batch_in_which_two_users_say_the_same_thing_stores_both(
    store: InMemoryStore,
) -> None:
    # langgraph dev batches concurrent store calls; a repeated text failed the whole batch.
    patch_inmemory_store()
    await store.abatch(
        [
            PutOp(("user_facts", "alice"), "k1", {"content": "Likes hiking"}),
            PutOp(("user_facts", "bob"), "k2", {"content": "Likes hiking"}),
            PutOp(("user_facts", "bob"), "k3", {"content": "Works as a nurse"}),
        ]
    )
    for user, keys in (("alice", {"k1"}), ("bob", {"k2", "k3"})):
        found = await store.asearch(("user_facts", user), query="hiking")
        assert {item.key for item in found} == keys
        assert all(item.score is not None for item in found)


def test_the_patch_is_applied_once() -> None:
    patch_inmemory_store()
    assert patch_inmemory_store() is False
