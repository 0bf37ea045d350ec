"""`delete_for_runs`: a run's checkpoints and writes leave the views and the log; what other
runs still point at stays (as `ValuesRetained`), and the rest of the log replays to the same views."""

from __future__ import annotations

import operator
import uuid
from typing import Annotated, Any, TypedDict

import pytest
import redis
from graph_harness import Harness, harness_fixture, kind_fixture, view_fixture  # noqa: F401
from helpers import snapshot
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from streamsaver import AsyncStreamSaver
from streamsaver.log.events import CheckpointSaved, RunsDeleted, ValuesRetained, WritesSaved
from streamsaver.log.stored import from_fields
from streamsaver.ops.replay import Replayer

pytestmark = pytest.mark.parametrize("view", ["full"])


class Talk(TypedDict, total=False):
    topic: str
    said: Annotated[list[str], operator.add]


def talk() -> StateGraph:
    """``speak``: says something about the topic, which only the first run sets."""

    def speak(state: Talk) -> dict[str, Any]:
        return {"said": [f"about {state.get('topic')} #{len(state.get('said', []))}"]}

    graph = StateGraph(Talk)
    graph.add_node("speak", speak)
    graph.add_edge(START, "speak")
    graph.add_edge("speak", END)
    return graph


def run_config(thread_id: str, run_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}, "metadata": {"run_id": run_id}}


async def delete_runs(saver: Any, run_ids: list[str]) -> None:
    if isinstance(saver, AsyncStreamSaver):
        await saver.adelete_for_runs(run_ids)
    else:
        saver.delete_for_runs(run_ids)


def events_of(client: redis.Redis, log: str) -> list[Any]:
    return [from_fields(fields) for _, fields in client.xrange(log)]


async def test_a_deleted_run_leaves_views_and_log_and_later_runs_read_the_same(
    h: Harness, client: redis.Redis, prefix: str
) -> None:
    driver = await h.driver(talk)
    first, second, other = str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
    await driver.invoke({"topic": "tides", "said": ["hello"]}, run_config("t", first))
    await driver.invoke({"said": ["more"]}, run_config("t", second))
    await driver.invoke({"topic": "other", "said": []}, run_config("u", first))
    await driver.invoke({"topic": "kept", "said": []}, run_config("v", other))
    state = await driver.state({"configurable": {"thread_id": "t"}})
    untouched = {k: v for k, v in snapshot(client, prefix).items() if k.endswith(b":v") or b":v:" in k}
    assert len(untouched) > 3

    await delete_runs(driver.saver, [first])

    listed = await driver.checkpoints({"configurable": {"thread_id": "t"}})
    assert listed and {t.metadata.get("run_id") for t in listed} == {second}
    assert await driver.checkpoints({"configurable": {"thread_id": "u"}}) == []
    after = await driver.state({"configurable": {"thread_id": "t"}})
    assert (after.values, after.config) == (state.values, state.config)
    assert after.values["topic"] == "tides"  # its value was logged by the deleted run

    log = driver.saver.core.keys.thread("t").log  # type: ignore[attr-defined]
    events = events_of(client, log)
    gone = {e.checkpoint_id for e in events if isinstance(e, ValuesRetained)}
    assert gone and all(isinstance(e, ValuesRetained) for e in events if getattr(e, "checkpoint_id", None) in gone)
    assert all(e.metadata.get("run_id") == second for e in events if isinstance(e, CheckpointSaved))
    assert not any(isinstance(e, WritesSaved) and e.checkpoint_id in gone for e in events)
    retained = [(cv.channel, cv.version) for e in events if isinstance(e, ValuesRetained) for cv in e.values]
    pointed_at = {(ch, v) for e in events if isinstance(e, CheckpointSaved) for ch, v in e.channel_versions.items()}
    assert "topic" in {ch for ch, _ in retained} and set(retained) <= pointed_at
    assert isinstance(events[-1], RunsDeleted) and events[-1].run_ids == (first,)
    assert {k: v for k, v in snapshot(client, prefix).items() if k in untouched} == untouched

    live = snapshot(client, prefix)
    Replayer.open(client, prefix).rebuild()  # the views the deployment keeps
    assert snapshot(client, prefix) == live


async def test_runs_nobody_made_change_nothing(h: Harness, client: redis.Redis, prefix: str) -> None:
    driver = await h.driver(talk)
    await driver.invoke({"topic": "x", "said": []}, run_config("t", "r1"))
    before = snapshot(client, prefix)

    await delete_runs(driver.saver, [])
    await delete_runs(driver.saver, ["r-none", 'quote"and{braces}'])

    assert snapshot(client, prefix) == before
