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
    "MCP_PATH",
    "OWNER_KEY",
    "PRIVATE_DIR_MODE",
    "PRIVATE_FILE_MODE",
    "USER_PERMISSION",
]

CONSOLE_PATH = "/console"
"""Where the memory console page is served."""

GRAPH_ID = "assistant"
"""The id langgraph.json gives the graph: the assistant the command line talks to."""

MCP_PATH = "/memory/mcp"
"""Where the user's memory is served over MCP (`assistant.server.mcp_server`); the platform keeps
``/mcp`` for the graph itself."""

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

PRIVATE_FILE_MODE = 0o600
"""Mode of a file the project writes with a user's data: its owner's alone."""

PRIVATE_DIR_MODE = 0o700
"""Mode of a folder of such files."""
