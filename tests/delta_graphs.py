"""Graphs whose state lives in a `DeltaChannel`, for the tests of prune and delta history.

A `DeltaChannel` stores no value in most checkpoints: LangGraph rebuilds it by replaying the
writes of the ancestors back to the nearest `_DeltaSnapshot` (every `SNAPSHOT_EVERY` updates).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

from langgraph.channels.delta import DeltaChannel
from langgraph.graph import END, START, StateGraph

SNAPSHOT_EVERY = 3


def concat(state: list[str], writes: Sequence[list[str]]) -> list[str]:
    """The delta reducer: append every write's items, in order (order-sensitive on purpose)."""
    return state + [item for write in writes for item in write]


class Diary(TypedDict):
    entries: Annotated[list[str], DeltaChannel(concat, snapshot_frequency=SNAPSHOT_EVERY)]
    notes: Annotated[list[str], DeltaChannel(concat, snapshot_frequency=1000)]
    steps: Annotated[int, operator.add]


class Journal(TypedDict):
    entries: Annotated[list[str], DeltaChannel(concat, snapshot_frequency=SNAPSHOT_EVERY)]
    notes: Annotated[list[str], DeltaChannel(concat, snapshot_frequency=SNAPSHOT_EVERY)]
    steps: Annotated[int, operator.add]


def diary(rounds: int, state: type[Any] = Diary) -> StateGraph:
    """``write -> (write ...)`` for `rounds` steps; each step adds one entry, and two parallel
    tasks add a note each, so a super-step holds several writes to one channel. `state`:
    `Diary` (notes never snapshot) or `Journal` (both channels snapshot often)."""

    def write(state: Any) -> dict[str, Any]:
        return {"entries": [f"e{state.get('steps', 0)}"], "steps": 1}

    def left(state: Any) -> dict[str, Any]:
        return {"notes": [f"l{state.get('steps', 0)}"]}

    def right(state: Any) -> dict[str, Any]:
        return {"notes": [f"r{state.get('steps', 0)}"]}

    def more(state: Any) -> Any:
        return ["write", "left", "right"] if state.get("steps", 0) < rounds else END

    graph = StateGraph(state)
    graph.add_node("write", write)
    graph.add_node("left", left)
    graph.add_node("right", right)
    graph.add_edge(START, "write")
    graph.add_conditional_edges("write", more, ["write", "left", "right", END])
    return graph
