"""The graph's state: the thread's messages, its running summary, and this turn's recall."""

from __future__ import annotations

from typing import Annotated, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages


class RecalledFact(TypedDict):
    """A stored fact that `recall` picked for this turn."""

    id: str
    """The store key of the fact."""
    content: str
    """The fact itself, in the user's language."""
    category: str
    """What kind of fact it is (identity, location, preference, ...)."""


class State(TypedDict, total=False):
    """Everything the graph keeps for one thread."""

    messages: Annotated[list[AnyMessage], add_messages]
    """Working memory: the thread's messages since the last compression."""
    summary: str
    """Running summary of the messages `compress` has folded away. Empty at first."""
    recalled: list[RecalledFact]
    """Facts recalled for the latest user message; replaced every turn."""
