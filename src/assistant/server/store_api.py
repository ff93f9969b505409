"""The HTTP store API: embedded as the caller's work, facts and episodes written by memory.

The store embeds a search's query and a put's content in a background task of its own,
which knows no user and which a client leaving does not stop: one user's long queries
there would hold the store and the embedder up for everyone. So the store auth handler
calls `embed_for_caller` first, in the request's own task: the text waits in the caller's
lane of the embedder's queue (`assistant.inference.embedding_queue`), is dropped if the client
leaves first (`assistant.server.middleware.disconnect`), and the store then finds its vector cached.

LangGraph Server's ``PUT`` and ``DELETE /store/items`` write the store directly. For a
user's facts (``("user_facts", <user>)``) and episodes (``("user_episodes", <user>)``) the
store auth handler (`assistant.server.auth.on_store`) calls `write_through_memory` before the
platform writes, so that:

* ``DELETE`` forgets the fact as the console does (`assistant.memory.UserMemory.forget`): its
  earlier versions and its words elsewhere go too, and the audit trail records the forget
  ``via="api"``; the platform's own delete then finds nothing left to delete;
* ``PUT`` is written by the memory layer (`assistant.memory.UserMemory.edit`): content of at
  most 500 characters, no forged ``history``, ``status`` or supersede chain, ``pinned`` only
  true or false, a new wording kept in ``history`` and audited; the handler then hands the
  platform exactly the value written, so its own write changes nothing. A value the memory
  layer refuses answers 422 with the reason;
* an episode (``PUT`` or ``DELETE``, e.g. the retention job's summary of an idle thread,
  `assistant.server.retention`) is written by the memory layer too, so every server's recall
  index learns of it as of any other write.

The platform's handler payload is the dict the route writes from (checked against
langgraph-api 0.16.7, ``langgraph_api/api/store.py``: ``put_item`` writes
``handler_payload["value"]`` and ``["index"]`` after the handler ran), so replacing
``value["value"]`` here is what the platform stores.

>>> is_memory_write("delete", {"namespace": ("user_facts", "alice"), "key": "k"})
True
>>> is_memory_write("put", {"namespace": ("user_episodes", "alice"), "key": "k"})
True
>>> is_memory_write("put", {"namespace": ("user_audit", "alice"), "key": "k"})
False
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from langgraph.store.base import BaseStore

from assistant.inference.models import E5Embeddings
from assistant.memory import (
    API_VIA,
    EPISODES_NAMESPACE,
    FACTS_NAMESPACE,
    UserMemory,
    store_embeddings,
)

__all__ = ["embed_for_caller", "is_memory_write", "write_through_memory"]

WRITES = frozenset({"put", "delete"})
"""The store API's actions that change an item."""


WRITTEN_BY_MEMORY = frozenset({FACTS_NAMESPACE, EPISODES_NAMESPACE})
"""The labels of a user's namespaces that the store API writes through the memory layer."""


def is_memory_write(action: str | None, value: Mapping[str, Any]) -> bool:
    """Whether a store request puts or deletes one of a user's facts or episodes."""
    namespace = tuple(value.get("namespace") or ())
    return action in WRITES and len(namespace) == 2 and namespace[0] in WRITTEN_BY_MEMORY


async def write_through_memory(
    store: BaseStore, action: str | None, value: MutableMapping[str, Any], *, actor: str
) -> None:
    """Carry out a store API write to a fact or an episode through the memory layer.

    ``value`` is the platform's handler payload (``namespace``, ``key``, and for a put
    ``value`` and ``index``); it is changed in place to what the platform should write
    (see the module). Raises :class:`ValueError` for a fact the memory layer refuses to
    write. Does nothing for other requests.
    """
    if not is_memory_write(action, value):
        return
    label, user_id = value["namespace"]
    memory, key = UserMemory(store, str(user_id)), str(value.get("key"))
    sent = value.get("value") if action == "put" else None
    if action == "put" and not isinstance(sent, Mapping):
        raise ValueError(f"A stored memory's value must be an object, got {sent!r:.80}.")
    if label == EPISODES_NAMESPACE:
        await memory.put_episode(key, None if sent is None else dict(sent))
    elif sent is None:
        await memory.forget(key, actor=actor, via=API_VIA)
    else:
        value["value"] = await memory.edit(key, sent, actor=actor, via=API_VIA)
    if sent is not None:
        value["index"] = None  # indexed as langgraph.json says, like every other memory


async def embed_for_caller(store: BaseStore, action: str | None, value: Mapping[str, Any]) -> None:
    """Embed what a store request will embed, now, as the current user's work (see the module).

    A search's ``query`` is embedded as a query, a put's ``content`` as a passage (the
    store's index embeds ``content`` only: `assistant.server.auth.check_store_request`), with the
    ``store``'s own embeddings. Does nothing for other requests, or when those are not the
    bundled model (a served one keeps no cache for the store to find the vector in).
    """
    embeddings = store_embeddings(store)
    if not isinstance(embeddings, E5Embeddings):
        return
    if action == "search":
        query = value.get("query")
        if isinstance(query, str) and query:
            await embeddings.aembed_query(query)
    elif action == "put" and value.get("index") is not False:
        item = value.get("value")
        content = item.get("content") if isinstance(item, Mapping) else None
        if isinstance(content, str) and content:
            await embeddings.aembed_documents([content])
