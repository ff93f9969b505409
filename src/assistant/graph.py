"""Wiring only: recall, then respond and remember in parallel, then compress if needed.

START → recall ─┬─→ respond ─→ (use_tools → respond)* ─→ (compress?) → END
                └─→ remember ─────────────────────────────────────────→ END
"""

from typing import Literal

from langchain_core.messages import AIMessage
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime

from assistant.nodes.compress import compress
from assistant.nodes.recall import recall
from assistant.nodes.remember import remember
from assistant.nodes.respond import respond
from assistant.nodes.tools import MEMORY_TOOLS
from assistant.run.context import Context
from assistant.run.prompting import working_tokens
from assistant.run.state import InputState, State


def after_respond(
    state: State, runtime: Runtime[Context]
) -> Literal["use_tools", "compress", "__end__"]:
    """Run the tools the model called; else compress when the working memory is over budget."""
    messages = state.get("messages", [])
    if messages and isinstance(messages[-1], AIMessage) and messages[-1].tool_calls:
        return "use_tools"
    context = runtime.context or Context()
    if working_tokens(state) > context.max_context_tokens:
        return "compress"
    return "__end__"


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
"""The graph LangGraph Server serves; the server attaches its own checkpointer and store.

Importing this module builds the graph and does nothing else: the server's start-up work is
`assistant.server.startup.start_server`, which the server runs from the custom app's lifespan."""
