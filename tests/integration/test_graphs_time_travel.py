"""Time travel on the full view: history newest first, forks from an old checkpoint, edits of one.

Runs on the sync and async savers; the shallow view keeps no history to travel in (its history
holds the latest checkpoint only, see `test_graphs_memory_and_interrupts`).
"""

from __future__ import annotations

import operator
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest
from graph_harness import Harness, harness_fixture, kind_fixture, thread, view_fixture  # noqa: F401
from langgraph.graph import END, START, StateGraph
from langgraph.types import StateSnapshot

pytestmark = pytest.mark.parametrize("view", ["full"])


class Trail(TypedDict):
    trail: Annotated[list[str], operator.add]


def pipeline() -> StateGraph:
    """``a -> b -> c``; each node appends its name and how many times it has run (``b2``...)."""
    runs: Counter[str] = Counter()

    def step(name: str) -> Any:
        def node(state: Trail) -> dict[str, Any]:
            runs[name] += 1
            return {"trail": [f"{name}{runs[name]}"]}

        return node

    graph = StateGraph(Trail)
    for name in "abc":
        graph.add_node(name, step(name))
    graph.add_edge(START, "a")
    graph.add_edge("a", "b")
    graph.add_edge("b", "c")
    graph.add_edge("c", END)
    return graph


def summary(history: list[StateSnapshot]) -> list[tuple[Any, ...]]:
    return [(s.metadata["step"], s.metadata["source"], s.next, s.values) for s in history]


def checkpoint_id(snapshot_or_config: Any) -> str:
    config = getattr(snapshot_or_config, "config", snapshot_or_config)
    return str(config["configurable"]["checkpoint_id"])


async def test_history_lists_checkpoints_newest_first_with_step_and_source(h: Harness) -> None:
    driver, reference = await h.driver(pipeline), h.reference(pipeline)
    config = thread()
    for d in (driver, reference):
        await d.invoke({"trail": ["in"]}, config)

    history = await driver.history(config)

    assert summary(history) == [
        (3, "loop", (), {"trail": ["in", "a1", "b1", "c1"]}),
        (2, "loop", ("c",), {"trail": ["in", "a1", "b1"]}),
        (1, "loop", ("b",), {"trail": ["in", "a1"]}),
        (0, "loop", ("a",), {"trail": ["in"]}),
        (-1, "input", ("__start__",), {"trail": []}),
    ]
    assert summary(history) == summary(await reference.history(config))
    ids = [checkpoint_id(s) for s in history]
    assert ids == sorted(ids, reverse=True) and len(set(ids)) == len(ids)
    assert [s.parent_config for s in history[:-1]] == [s.config for s in history[1:]]
    assert history[-1].parent_config is None


async def test_invoking_from_an_earlier_checkpoint_forks_from_it(h: Harness) -> None:
    driver, reference = await h.driver(pipeline), h.reference(pipeline)
    config = thread()
    await driver.invoke({"trail": ["in"]}, config)
    original = await driver.history(config)
    before_b = next(s for s in original if s.next == ("b",))

    forked = await driver.invoke(None, before_b.config)

    assert forked == {"trail": ["in", "a1", "b2", "c2"]}
    history = await driver.history(config)
    assert history[3:] == original
    fork, branch = history[2], history[:3]
    assert summary(branch) == [
        (4, "loop", (), {"trail": ["in", "a1", "b2", "c2"]}),
        (3, "loop", ("c",), {"trail": ["in", "a1", "b2"]}),
        (2, "fork", ("b",), {"trail": ["in", "a1"]}),
    ]
    assert checkpoint_id(fork.parent_config) == checkpoint_id(before_b)
    assert [s.parent_config for s in branch[:-1]] == [s.config for s in branch[1:]]
    assert (await driver.state(config)).config == history[0].config
    assert (await driver.state(original[0].config)).values == {"trail": ["in", "a1", "b1", "c1"]}

    await reference.invoke({"trail": ["in"]}, config)
    reference_before_b = next(s for s in await reference.history(config) if s.next == ("b",))
    assert forked == await reference.invoke(None, reference_before_b.config)
    assert summary(history) == summary(await reference.history(config))


async def test_update_state_on_an_old_checkpoint_adds_an_update_checkpoint_after_it(h: Harness) -> None:
    driver, reference = await h.driver(pipeline), h.reference(pipeline)
    config = thread()
    await driver.invoke({"trail": ["in"]}, config)
    before_b = next(s for s in await driver.history(config) if s.next == ("b",))

    edited_config = await driver.update(before_b.config, {"trail": ["edited"]})

    edited = await driver.state(edited_config)
    assert edited.metadata["source"] == "update"
    assert edited.metadata["step"] == before_b.metadata["step"] + 1
    assert checkpoint_id(edited.parent_config) == checkpoint_id(before_b)
    assert edited.values == {"trail": ["in", "a1", "edited"]}
    assert edited.next == ("b",)
    latest = await driver.state(config)
    assert latest.config == edited.config
    assert checkpoint_id(edited) == max(checkpoint_id(s) for s in await driver.history(config))

    resumed = await driver.invoke(None, edited_config)

    assert resumed == {"trail": ["in", "a1", "edited", "b2", "c2"]}
    await reference.invoke({"trail": ["in"]}, config)
    reference_before_b = next(s for s in await reference.history(config) if s.next == ("b",))
    assert resumed == await reference.invoke(
        None, await reference.update(reference_before_b.config, {"trail": ["edited"]})
    )
