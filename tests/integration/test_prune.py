"""`prune`: DeltaChannel-safe compaction of the log. After ``keep_latest`` the state LangGraph
rebuilds is the same, the graph continues as if nothing happened, the log holds less, and the
remaining log replays to the same views; ``delete`` leaves only the `ThreadPruned` record."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import redis
from delta_graphs import SNAPSHOT_EVERY, Journal, diary
from graph_harness import Driver, Harness, harness_fixture, kind_fixture, thread, view_fixture  # noqa: F401
from helpers import snapshot

from streamsaver import AsyncStreamSaver
from streamsaver.errors import InvalidInputError
from streamsaver.log.events import ThreadPruned
from streamsaver.log.stored import from_fields
from streamsaver.ops.replay import Replayer

pytestmark = pytest.mark.parametrize("view", ["full"])
START = {"entries": ["start"], "notes": [], "steps": 0}
ROUNDS = 4 * SNAPSHOT_EVERY + 1


async def prune(saver: Any, thread_ids: list[str], strategy: str = "keep_latest") -> None:
    if isinstance(saver, AsyncStreamSaver):
        await saver.aprune(thread_ids, strategy=strategy)
    else:
        saver.prune(thread_ids, strategy=strategy)


def log_of(driver: Driver, thread_id: str) -> str:
    return str(driver.saver.core.keys.thread(thread_id).log)  # type: ignore[attr-defined]


async def test_keep_latest_keeps_delta_state_and_frees_memory(h: Harness, client: redis.Redis) -> None:
    driver = await h.driver(lambda: diary(ROUNDS, Journal))
    for name in ("pruned", "reference"):
        await driver.invoke(START, thread(name))
    before = await driver.state(thread("pruned"))
    log = log_of(driver, "pruned")
    memory, length = client.memory_usage(log), client.xlen(log)

    await prune(driver.saver, ["pruned"])

    after = await driver.state(thread("pruned"))
    assert (after.values, after.config, after.next) == (before.values, before.config, before.next)
    kept = await driver.checkpoints(thread("pruned"))
    assert 1 < len(kept) <= SNAPSHOT_EVERY + 1  # the latest and the ancestors back to its snapshots
    assert client.xlen(log) < length / 2 and client.memory_usage(log) < memory / 2
    for name in ("pruned", "reference"):
        await driver.invoke({"entries": ["later"]}, thread(name))
    assert (await driver.state(thread("pruned"))).values == (await driver.state(thread("reference"))).values


async def test_a_naive_keep_latest_would_lose_delta_state(h: Harness) -> None:
    """The ancestors prune keeps are needed: the latest checkpoint alone holds no delta value."""
    driver = await h.driver(lambda: diary(ROUNDS, Journal))
    await driver.invoke(START, thread("t"))
    latest = (await driver.checkpoints(thread("t")))[0]
    unsnapshotted = set(latest.metadata["counters_since_delta_snapshot"]) - set(latest.checkpoint["channel_values"])
    assert unsnapshotted & {"entries", "notes"}


async def test_the_pruned_log_replays_to_the_same_views(h: Harness, client: redis.Redis, prefix: str) -> None:
    driver = await h.driver(lambda: diary(ROUNDS, Journal))
    await driver.invoke(START, thread("t"))
    await driver.invoke(START, thread("untouched"))
    await prune(driver.saver, ["t", "nobody"])
    events = [from_fields(f) for _, f in client.xrange(log_of(driver, "t"))]
    assert isinstance(events[-1], ThreadPruned) and events[-1].strategy == "keep_latest"
    live = snapshot(client, prefix)

    Replayer.open(client, prefix).rebuild()  # the views the deployment keeps

    assert snapshot(client, prefix) == live


async def test_delete_removes_every_checkpoint_and_keeps_the_record(
    h: Harness, client: redis.Redis, prefix: str
) -> None:
    driver = await h.driver(lambda: diary(2, Journal))
    await driver.invoke(START, thread("t"))

    await prune(driver.saver, ["t"], strategy="delete")

    assert await driver.checkpoints(thread("t")) == []
    [(_, fields)] = client.xrange(log_of(driver, "t"))
    assert from_fields(fields) == ThreadPruned("t", "delete", 0)
    assert not [k for k in snapshot(client, prefix) if b":full:" in k or b":shallow:" in k]


async def test_an_unknown_strategy_changes_nothing(h: Harness, client: redis.Redis, prefix: str) -> None:
    driver = await h.driver(lambda: diary(2, Journal))
    await driver.invoke(START, thread("t"))
    before = snapshot(client, prefix)
    with pytest.raises(InvalidInputError, match="strategy"):
        await prune(driver.saver, ["t"], strategy="everything")
    assert snapshot(client, prefix) == before


async def retain(saver: Any, thread_ids: list[str], **rules: Any) -> None:
    if isinstance(saver, AsyncStreamSaver):
        await saver.aretain(thread_ids, **rules)
    else:
        saver.retain(thread_ids, **rules)


async def test_retention_keeps_the_newest_and_the_recent(h: Harness, client: redis.Redis, prefix: str) -> None:
    driver = await h.driver(lambda: diary(ROUNDS, Journal))
    await driver.invoke(START, thread("t"))
    listed = await driver.checkpoints(thread("t"))
    state = await driver.state(thread("t"))
    states = {t.config["configurable"]["checkpoint_id"]: (await driver.state(t.config)).values for t in listed}
    unchanged = snapshot(client, prefix)

    await retain(driver.saver, ["t"], max_age=timedelta(hours=1))
    assert snapshot(client, prefix) == unchanged

    await retain(driver.saver, ["t"], keep_last=SNAPSHOT_EVERY + 2)
    kept = [t.config for t in await driver.checkpoints(thread("t"))]
    assert kept[: SNAPSHOT_EVERY + 2] == [t.config for t in listed[: SNAPSHOT_EVERY + 2]]
    assert SNAPSHOT_EVERY + 2 <= len(kept) < len(listed)
    assert (await driver.state(thread("t"))).values == state.values
    for old in listed[: SNAPSHOT_EVERY + 2]:
        assert (await driver.state(old.config)).values == states[old.config["configurable"]["checkpoint_id"]]
    live = snapshot(client, prefix)
    Replayer.open(client, prefix).rebuild()  # the views the deployment keeps
    assert snapshot(client, prefix) == live

    with pytest.raises(InvalidInputError, match="retention needs"):
        await retain(driver.saver, ["t"])
    with pytest.raises(InvalidInputError, match="keep_last"):
        await retain(driver.saver, ["t"], keep_last=0)
