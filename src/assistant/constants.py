"""Names shared by the server's auth, its routes and the command line; imports nothing.

>>> CONSOLE_PATH
'/console'
"""

__all__ = [
    "ADMIN_IDENTITY",
    "ADMIN_PERMISSION",
    "CONSOLE_PATH",
    "GRAPH_ID",
    "HEALTH_PATHS",
    "OWNER_KEY",
    "USER_PERMISSION",
]

CONSOLE_PATH = "/console"
"""Where the memory console page is served."""

GRAPH_ID = "assistant"
"""The id langgraph.json gives the graph: the assistant the command line talks to."""

HEALTH_PATHS = frozenset({"/ok", "/"})
"""The operator's health checks: answered to anyone, they say only that the server is up."""

OWNER_KEY = "owner"
"""Metadata key that records who owns a thread, run or cron."""

ADMIN_PERMISSION = "admin"
"""Permission of the maintenance token: every thread and namespace is reachable."""

USER_PERMISSION = "memory:own"
"""Permission of an ordinary signed-in user: their own threads and memory."""

ADMIN_IDENTITY = "langgraph-maintenance"
"""Identity of the maintenance token. Its power comes from the permission, and no user can
share the name: user ids may not start with `langgraph`."""
