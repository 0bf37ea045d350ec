"""Native `get_delta_channel_history`: the base class's ancestor walk, call by call, in one
round trip.

Real graphs with `DeltaChannel` state run on the sync and the async saver (full view). For every
checkpoint of the history, and for a fork from an old checkpoint (only on-path ancestors count),
the native answer must equal what `BaseCheckpointSaver.get_delta_channel_history` (one
`get_tuple` per ancestor) returns on the same saver, writes in `writes_sort_key` order included.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from delta_graphs import SNAPSHOT_EVERY, diary
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from test_round_trips import TripCounter, counting_async_client, counting_sync_client

from streamsaver import AsyncStreamSaver, StreamSaver

CHANNELS = ["entries", "notes", "steps", "no-such-channel"]


@pytest.fixture(params=["sync", "async"])
async def counted(
    request: pytest.FixtureRequest, redis_url: str, prefix: str
) -> AsyncIterator[tuple[Any, TripCounter]]:
    counter = TripCounter()
    if request.param == "sync":
        client = counting_sync_client(redis_url, counter)
        saver: Any = StreamSaver(client, prefix=prefix)
        saver.setup()
        yield saver, counter
        client.close()
    else:
        aclient = await counting_async_client(redis_url, counter)
        saver = AsyncStreamSaver(aclient, prefix=prefix)
        await saver.setup()
        yield saver, counter
        await aclient.aclose()


async def _native(saver: Any, config: RunnableConfig, channels: list[str]) -> Any:
    if isinstance(saver, AsyncStreamSaver):
        return await saver.aget_delta_channel_history(config=config, channels=channels)
    return saver.get_delta_channel_history(config=config, channels=channels)


async def _walked(saver: Any, config: RunnableConfig, channels: list[str]) -> Any:
    if isinstance(saver, AsyncStreamSaver):
        return await BaseCheckpointSaver.aget_delta_channel_history(saver, config=config, channels=channels)
    return BaseCheckpointSaver.get_delta_channel_history(saver, config=config, channels=channels)


async def _run(saver: Any, graph: Any, value: Any, config: RunnableConfig) -> None:
    if isinstance(saver, AsyncStreamSaver):
        await graph.ainvoke(value, config)
    else:
        graph.invoke(value, config)


async def _history(saver: Any, config: RunnableConfig) -> list[RunnableConfig]:
    if isinstance(saver, AsyncStreamSaver):
        return [t.config async for t in saver.alist(config)]
    return [t.config for t in saver.list(config)]


async def test_native_history_equals_the_ancestor_walk_at_every_checkpoint(counted: tuple[Any, TripCounter]) -> None:
    saver, counter = counted
    graph = diary(3 * SNAPSHOT_EVERY + 1).compile(checkpointer=saver)
    config: RunnableConfig = {"configurable": {"thread_id": "diary"}}
    await _run(saver, graph, {"entries": ["start"], "notes": [], "steps": 0}, config)
    history = await _history(saver, config)
    assert len(history) > 3 * SNAPSHOT_EVERY

    seeded = 0
    for checkpoint in [*history, config]:
        expected = await _walked(saver, checkpoint, CHANNELS)
        counter.reset()
        native = await _native(saver, checkpoint, CHANNELS)
        assert counter.trips == 1
        assert native == expected
        seeded += "seed" in native["entries"]
    assert seeded > 0, "no checkpoint walked back to a snapshot: the test would not show seeds"
    assert any(len(native["notes"]["writes"]) > 2 for native in [await _native(saver, config, ["notes"])])


async def test_a_fork_walks_only_its_own_ancestors(counted: tuple[Any, TripCounter]) -> None:
    saver, counter = counted
    graph = diary(2 * SNAPSHOT_EVERY).compile(checkpointer=saver)
    config: RunnableConfig = {"configurable": {"thread_id": "forked"}}
    await _run(saver, graph, {"entries": ["start"], "notes": [], "steps": 0}, config)
    history = await _history(saver, config)
    fork_point = history[len(history) // 2]
    await _run(saver, graph, None, fork_point)  # replays from an old checkpoint: a new branch
    tip = (await _history(saver, config))[0]

    expected = await _walked(saver, tip, CHANNELS)
    counter.reset()
    assert await _native(saver, tip, CHANNELS) == expected
    assert counter.trips == 1


async def test_no_channels_or_an_unknown_checkpoint(counted: tuple[Any, TripCounter]) -> None:
    saver, counter = counted
    missing: RunnableConfig = {"configurable": {"thread_id": "nobody", "checkpoint_ns": "", "checkpoint_id": "x"}}
    counter.reset()
    assert await _native(saver, missing, []) == {}
    assert counter.trips == 0
    assert await _native(saver, missing, ["a"]) == await _walked(saver, missing, ["a"]) == {"a": {"writes": []}}
