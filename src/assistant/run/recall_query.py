"""The query `recall` searches with: how long it may be, and its embedding started early.

`recall` (`assistant.nodes.recall`) searches with the start of the user's latest message.
The same cap bounds every other search a caller can ask for (the store API's, the memory
routes', MCP's), since each query is embedded. :func:`prefetch_query` is what `auth` calls
when a run is created, so the query's vector is usually ready when `recall` asks for it;
it lives here, below the nodes, so that the auth middleware loads no node.
"""

from __future__ import annotations

from typing import Any

from assistant.inference import models

__all__ = ["MAX_QUERY_CHARS", "USER_ROLES", "prefetch_query"]

MAX_QUERY_CHARS = 2000
"""Only the start of a very long message is used as the search query."""

USER_ROLES = frozenset({"user", "human"})
"""How a run's input names a user message (``role`` or ``type``)."""


def prefetch_query(run_input: Any) -> None:
    """Start embedding the query this run's `recall` will search with, if it can be known.

    Called when the run is created (`assistant.server.auth`): a run waits in the server's queue
    before it starts, and the bundled embeddings use that wait, so `recall` usually finds
    the query's vector ready. Only a plain-text last message of a user is prefetched, and
    only for the bundled e5 model (a served model would be asked twice). Never raises.

    >>> prefetch_query({"messages": [{"role": "user", "content": "Where do I live?"}]})
    >>> prefetch_query({"summary": 1})  # nothing to prefetch; nothing happens
    """
    messages = run_input.get("messages") if isinstance(run_input, dict) else None
    last = messages[-1] if isinstance(messages, list) and messages else None
    if not isinstance(last, dict) or not USER_ROLES & {last.get("role"), last.get("type")}:
        return
    content = last.get("content")
    if not isinstance(content, str) or not content.strip():
        return
    try:
        embeddings = models.get_embeddings()
    except Exception:  # a misconfigured embedding model is reported by the run itself
        return
    if isinstance(embeddings, models.E5Embeddings):
        embeddings.prefetch_query(content[:MAX_QUERY_CHARS])
