"""An agent/tool loop built with LangGraph, with a fake model in place of an LLM.

One user turn is four supersteps, each checkpointed: the input, the model asking for a tool
(an AI message with one tool call), the tool (LangGraph's `ToolNode` running a plain Python
tool), and the model's answer. Every message carries ~500 bytes of text, so the conversation
grows by four messages (~2 KB) a turn. Nothing is random: text comes from a counter, so every
saver sees messages of the same sizes.
"""

from __future__ import annotations

import itertools
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition

__all__ = ["MESSAGES_PER_TURN", "SUPERSTEPS_PER_TURN", "build_agent", "turn_input"]

SUPERSTEPS_PER_TURN = 4
MESSAGES_PER_TURN = 4
_TEXT = 500
_serial = itertools.count()


def _text(kind: str) -> str:
    words = f"{kind} {next(_serial)} " + "the agent reads the thread state and calls a tool " * 12
    return words[:_TEXT]


@tool
def lookup(query: str) -> str:
    """Look `query` up (a stand-in for a real tool: it returns ~500 bytes of text)."""
    return _text(f"result for {query[:20]}")


def fake_model(state: MessagesState) -> dict[str, Any]:
    """Ask for a tool after a user message; answer after the tool's result."""
    last = state["messages"][-1]
    if isinstance(last, ToolMessage):
        return {"messages": [AIMessage(content=_text("answer"))]}
    call = {
        "name": "lookup",
        "args": {"query": str(last.content)[:40]},
        "id": f"call-{next(_serial)}",
    }
    return {"messages": [AIMessage(content=_text("thinking"), tool_calls=[call])]}


def build_agent(checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph:  # type: ignore[type-arg]
    """The agent loop compiled with `checkpointer`."""
    builder = StateGraph(MessagesState)
    builder.add_node("agent", fake_model)
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)


def turn_input() -> dict[str, Any]:
    """One user message."""
    return {"messages": [HumanMessage(content=_text("user"))]}
