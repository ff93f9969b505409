"""Wiring only: recall, then respond and remember in parallel, then compress if needed.

START → recall ─┬─→ respond ─→ (compress?) → END
└─→ remember ─────────────→ END
"""

from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode

from assistant.context import Context
from assistant.nodes.compress import compress
from assistant.nodes.recall import recall
from assistant.nodes.remember import remember
from assistant.nodes.respond import after_respond, respond
from assistant.scope import warn_if_unauthenticated
from assistant.state import InputState, State
from assistant.tools import MEMORY_TOOLS

builder = StateGraph(State, input_schema=InputState, context_schema=Context)
builder.add_node(recall)
builder.add_node(respond)
builder.add_node(remember)
builder.add_node(compress)
builder.add_node("use_tools", ToolNode(MEMORY_TOOLS))

builder.add_edge(START, "recall")
builder.add_edge("recall", "respond")
builder.add_edge("recall", "remember")
builder.add_conditional_edges("respond", after_respond)
builder.add_edge("use_tools", "respond")
builder.add_edge("remember", END)
builder.add_edge("compress", END)

graph = builder.compile(name="assistant")
warn_if_unauthenticated()
"""The graph LangGraph Server serves; the server attaches its own checkpointer and store."""
