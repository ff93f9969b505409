"""A bare echo graph: the baseline `bench/load.py` measures the assistant against.

One node, no model, no store, no memory: it answers each user message with
``echo: <text>``. Served from the same `langgraph dev` process as the assistant, it
shows what the server itself costs per run (HTTP, queue poll, checkpointing).
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages


class EchoState(TypedDict):
    """The thread's messages, as in the assistant."""

    messages: Annotated[list[AnyMessage], add_messages]


async def echo(state: EchoState) -> dict[str, Any]:
    """Answer with the text of the last message."""
    last = state["messages"][-1] if state["messages"] else None
    return {"messages": [AIMessage(content=f"echo: {last.text if last else ''}")]}


builder = StateGraph(EchoState)
builder.add_node(echo)
builder.add_edge(START, "echo")
builder.add_edge("echo", END)

graph = builder.compile(name="echo")
