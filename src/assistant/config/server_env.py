"""What LangGraph Server tells the graph about itself through the environment.

These variables are set by the server (from langgraph.json and its command line), not by
the operator: whether custom auth is on, whether this process is the server, the graphs it
serves, whether it is `langgraph dev`, how many runs it runs at once, and where it keeps
its data (for the start-up line).

>>> ServerSettings().on_server
False
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from assistant.config import environment as parse
from assistant.config.constants import GRAPH_ID
from assistant.config.environment import env, env_names, read

__all__ = [
    "GRAPH_ASSISTANT_NAMESPACE",
    "SERVER_ENV",
    "ServerSettings",
    "custom_auth_configured",
    "get_server_settings",
    "declare_local_dev",
    "names_another_graph",
    "running_on_server",
]


def declare_local_dev() -> Any:
    """Declare a field that says whether the server is `langgraph dev` (not a deployment)."""
    return env("LANGSMITH_LANGGRAPH_API_VARIANT", False, parse=parse.is_local_dev)


@dataclass(frozen=True, kw_only=True)
class ServerSettings:
    """What LangGraph Server tells the graph about itself through the environment."""

    custom_auth: bool = env("LANGGRAPH_AUTH", False, parse=parse.is_set)
    """langgraph.json names an ``auth`` handler, so the server runs it."""
    on_server: bool = env("LANGSERVE_GRAPHS", False, parse=parse.is_set)
    """This process is the server (it lists its graphs in LANGSERVE_GRAPHS)."""
    graph_ids: frozenset[str] = env("LANGSERVE_GRAPHS", frozenset(), parse=parse.graph_ids)
    """The ids of the graphs the server serves (LANGSERVE_GRAPHS' keys)."""
    local_dev: bool = declare_local_dev()
    """The server is `langgraph dev`."""
    runs_at_once: str = env("N_JOBS_PER_WORKER")
    """N_JOBS_PER_WORKER as given, if any."""
    custom_store: bool = env("LANGGRAPH_STORE", False, parse=parse.names_a_path)
    """langgraph.json's ``store.path`` names a store (ours:
    `assistant.server.persistence.storage`)."""
    storage_label: str = env("ASSISTANT_STORAGE")
    """ASSISTANT_STORAGE: how the dev config labels its storage."""
    platform_database: str = env("DATABASE_URI")
    """DATABASE_URI: the platform's own Postgres."""


SERVER_ENV = env_names(ServerSettings)
"""The variables the server sets."""


def get_server_settings() -> ServerSettings:
    """What the server set (`SERVER_ENV`)."""
    return read(ServerSettings)


def custom_auth_configured() -> bool:
    """Whether LangGraph Server runs this graph with custom auth (langgraph.json `auth`)."""
    return get_server_settings().custom_auth


def running_on_server() -> bool:
    """Whether this process is LangGraph Server."""
    return get_server_settings().on_server


GRAPH_ASSISTANT_NAMESPACE = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
"""The server names each graph's default assistant ``uuid5(this, graph_id)``
(``langgraph_api.graph.NAMESPACE_GRAPH``)."""


def names_another_graph(assistant_id: object) -> bool:
    """Whether a run's ``assistant_id`` is a graph the server serves beside this one.

    A run names a graph by its id or by its default assistant's UUID; an assistant made
    from a graph by hand has some other UUID, which could be of either graph.

    >>> import os
    >>> os.environ["LANGSERVE_GRAPHS"] = '{"assistant": "a.py:graph", "echo": "e.py:graph"}'
    >>> echo = uuid.uuid5(GRAPH_ASSISTANT_NAMESPACE, "echo")
    >>> names_another_graph("echo"), names_another_graph(echo), names_another_graph("assistant")
    (True, True, False)
    >>> del os.environ["LANGSERVE_GRAPHS"]
    """
    others = get_server_settings().graph_ids - {GRAPH_ID}
    name = str(assistant_id)
    return name in others or name in {
        str(uuid.uuid5(GRAPH_ASSISTANT_NAMESPACE, other)) for other in others
    }
