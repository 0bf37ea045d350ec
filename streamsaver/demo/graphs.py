"""The demo's LangGraph graphs: small, deterministic (no LLM), each showing one feature.

Every builder takes the checkpointer to compile with, so the same graphs run on any saver.

* `build_chat`: one ``bot`` node over a message list (``operator.add`` reducer): memory.
* `build_approval`: ``draft`` -> ``review`` (pauses with `interrupt`) -> ``send``: human in the loop.
* `build_research`: ``plan`` -> ``research`` (a compiled subgraph) -> ``publish``: namespaces.
* `build_trip`: ``plan`` fans out to ``weather`` and ``news``, which fan in to ``merge``.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import interrupt

__all__ = [
    "ApprovalState",
    "ChatState",
    "ReportState",
    "TripState",
    "bot_reply",
    "build_approval",
    "build_chat",
    "build_research",
    "build_trip",
]

Saver = BaseCheckpointSaver[Any]
Update = dict[str, Any]
_NAME = re.compile(r"(?:my name is|call me)\s+(\w+)", re.IGNORECASE)


class ChatState(TypedDict):
    """A conversation: ``"user: ..."`` and ``"bot: ..."`` lines, appended by every turn."""

    messages: Annotated[list[str], operator.add]


def bot_reply(messages: Sequence[str]) -> str:
    """The bot's answer to the last user line, using everything said before it."""
    said = [m.removeprefix("user: ") for m in messages if m.startswith("user: ")]
    last = said[-1] if said else ""
    names = [m.group(1) for line in said if (m := _NAME.search(line))]
    if (found := _NAME.search(last)) is not None:
        return f"bot: Nice to meet you, {found.group(1)}."
    if "what is my name" in last.lower():
        return (
            f"bot: Your name is {names[-1]}." if names else "bot: You have not told me your name."
        )
    return f"bot: Noted. You have told me {len(said)} things so far."


def _bot(state: ChatState) -> Update:
    return {"messages": [bot_reply(state["messages"])]}


def build_chat(checkpointer: Saver) -> CompiledStateGraph[ChatState, None, ChatState, ChatState]:
    """``START -> bot -> END``; each invoke adds one user line and one bot line."""
    builder = StateGraph(ChatState)
    builder.add_node("bot", _bot)
    builder.add_edge(START, "bot")
    builder.add_edge("bot", END)
    return builder.compile(checkpointer=checkpointer)


class ApprovalState(TypedDict, total=False):
    """An email that a person must approve before it is sent."""

    to: str
    draft: str
    decision: str
    status: str


def _draft(state: ApprovalState) -> Update:
    return {"draft": f"Dear {state['to']}, the quarterly report is ready."}


def _review(state: ApprovalState) -> Update:
    decision = interrupt({"question": "Send this email?", "draft": state["draft"]})
    return {"decision": str(decision)}


def _send(state: ApprovalState) -> Update:
    approved = state["decision"].lower().startswith("yes")
    return {"status": f"sent to {state['to']}" if approved else "discarded"}


def build_approval(
    checkpointer: Saver,
) -> CompiledStateGraph[ApprovalState, None, ApprovalState, ApprovalState]:
    """``draft -> review -> send``; ``review`` pauses until resumed with the decision."""
    builder = StateGraph(ApprovalState)
    builder.add_node("draft", _draft)
    builder.add_node("review", _review)
    builder.add_node("send", _send)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "review")
    builder.add_edge("review", "send")
    builder.add_edge("send", END)
    return builder.compile(checkpointer=checkpointer)


class ReportState(TypedDict, total=False):
    """The parent graph's state; the subgraph shares ``topic`` and ``report``."""

    topic: str
    report: str


class _ResearchState(TypedDict, total=False):
    topic: str
    findings: Annotated[list[str], operator.add]
    report: str


def _search(state: _ResearchState) -> Update:
    return {"findings": [f"{state['topic']} grew 12%", f"{state['topic']} has 3 rivals"]}


def _summarize(state: _ResearchState) -> Update:
    return {"report": "; ".join(state["findings"])}


def _research_subgraph() -> CompiledStateGraph[
    _ResearchState, None, _ResearchState, _ResearchState
]:
    builder = StateGraph(_ResearchState)
    builder.add_node("search", _search)
    builder.add_node("summarize", _summarize)
    builder.add_edge(START, "search")
    builder.add_edge("search", "summarize")
    builder.add_edge("summarize", END)
    # No checkpointer of its own: it inherits the parent's and saves under its own namespace.
    return builder.compile()


def build_research(
    checkpointer: Saver,
) -> CompiledStateGraph[ReportState, None, ReportState, ReportState]:
    """``plan -> research -> publish`` where ``research`` is a compiled subgraph."""
    builder = StateGraph(ReportState)
    builder.add_node("plan", lambda state: {"topic": state["topic"].strip().title()})
    builder.add_node("research", _research_subgraph())
    builder.add_node("publish", lambda state: {"report": f"[{state['topic']}] {state['report']}"})
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "research")
    builder.add_edge("research", "publish")
    builder.add_edge("publish", END)
    return builder.compile(checkpointer=checkpointer)


class TripState(TypedDict, total=False):
    """A trip briefing; the parallel branches each append to ``notes``."""

    city: str
    notes: Annotated[list[str], operator.add]
    briefing: str


def build_trip(checkpointer: Saver) -> CompiledStateGraph[TripState, None, TripState, TripState]:
    """``plan`` fans out to ``weather`` and ``news`` (one step), which fan in to ``merge``."""
    builder = StateGraph(TripState)
    builder.add_node("plan", lambda state: {"notes": [f"trip to {state['city']}"]})
    builder.add_node(
        "weather", lambda state: {"notes": [f"weather in {state['city']}: sunny, 21 C"]}
    )
    builder.add_node("news", lambda state: {"notes": [f"news in {state['city']}: museum night"]})
    builder.add_node("merge", lambda state: {"briefing": " | ".join(state["notes"])})
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "weather")
    builder.add_edge("plan", "news")
    builder.add_edge(["weather", "news"], "merge")
    builder.add_edge("merge", END)
    return builder.compile(checkpointer=checkpointer)
