"""A memory-first personal assistant for LangGraph Server."""

from assistant.graph import graph

__all__ = ["graph"]
