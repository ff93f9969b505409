"""A memory-first personal assistant for LangGraph Server.

``assistant.graph`` is the compiled graph langgraph.json serves. It is imported on first
use, so command-line tools that only talk to a server start without loading langgraph.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assistant.graph import graph

__all__ = ["graph"]


def __getattr__(name: str) -> Any:
    """Load ``graph`` lazily."""
    if name == "graph":
        from assistant.graph import graph

        return graph
    raise AttributeError(f"module 'assistant' has no attribute {name!r}")
