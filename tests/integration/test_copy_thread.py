"""`copy_thread`: a copy is its own events in the target's log, readable and replayable without
the source; a fork in time copies the thread as it was at a checkpoint or an instant."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timezone
from typing import Any

import pytest
import redis
from delta_graphs import diary
from graph_harness import Harness, harness_fixture, kind_fixture, thread, view_fixture  # noqa: F401
from helpers import SaverAdapter, config, snapshot
from langchain_core.runnables import RunnableConfig

from streamsaver import AsyncStreamSaver
from streamsaver.errors import InvalidInputError, ThreadExistsError
from streamsaver.log.events import ThreadCopied
from streamsaver.log.keys import Keyspace
from streamsaver.log.stored import from_fields
from streamsaver.ops.replay import Replayer

pytestmark = pytest.mark.parametrize("view", ["full"])
START = {"entries": ["start"], "notes": [], "steps": 0}


async def copy(saver: Any, source: str, target: str, until: Any = None) -> None:
    if isinstance(saver, AsyncStreamSaver):
        await saver.acopy_thread(source, target, until=until)
    else:
        saver.copy_thread(source, target, until=until)


def cid(saved: RunnableConfig) -> str:
    return str(saved["configurable"]["checkpoint_id"])


def as_thread(config: RunnableConfig, thread_id: str) -> RunnableConfig:
    return {"configurable": {**config["configurable"], "thread_id": thread_id}}


async def test_a_copy_reads_like_the_source_checkpoint_by_checkpoint(h: Harness) -> None:
    driver = await h.driver(lambda: diary(5))
    source, target = thread("src"), thread("dst")
    await driver.invoke(START, source)
    await driver.update(source, {"notes": ["edited"]}, as_node="left")

    await copy(driver.saver, "src", "dst")

    originals = await driver.checkpoints(source)
    copies = await driver.checkpoints(target)
    assert [t.config for t in copies] == [as_thread(t.config, "dst") for t in originals]
    for original, copied in zip(originals, copies, strict=True):
        assert copied.checkpoint == original.checkpoint
        assert copied.metadata == original.metadata
        assert copied.pending_writes == original.pending_writes
        assert copied.parent_config == (as_thread(original.parent_config, "dst") if original.parent_config else None)
    assert (await driver.state(target)).values == (await driver.state(source)).values
    await driver.update(target, {"notes": ["only in the copy"]}, as_node="left")
    assert "only in the copy" not in (await driver.state(source)).values["notes"]


async def test_the_copy_survives_the_source_and_replays_from_its_own_log(
    h: Harness, client: redis.Redis, prefix: str
) -> None:
    driver = await h.driver(lambda: diary(4))
    await driver.invoke(START, thread("src"))
    await copy(driver.saver, "src", "dst")
    before = (await driver.state(thread("dst"))).values

    if isinstance(driver.saver, AsyncStreamSaver):
        await driver.saver.adelete_thread("src")
    else:
        driver.saver.delete_thread("src")
    live = snapshot(client, prefix)
    replayer = Replayer.open(client, prefix)
    replayer.rebuild()  # the views the deployment keeps

    assert snapshot(client, prefix) == live
    assert (await driver.state(thread("dst"))).values == before
    log = Keyspace(prefix, replayer.keyspace.partitions).thread("dst").log
    first = from_fields(client.xrange(log, count=1)[0][1])
    assert first == ThreadCopied("dst", "src", "")


async def test_a_fork_in_time_equals_the_history_at_that_checkpoint(h: Harness) -> None:
    driver = await h.driver(lambda: diary(6))
    await driver.invoke(START, thread("src"))
    history = await driver.history(thread("src"))
    then = history[len(history) // 2]

    await copy(driver.saver, "src", "fork", until=then.config["configurable"]["checkpoint_id"])

    forked = await driver.history(thread("fork"))
    assert [s.config["configurable"]["checkpoint_id"] for s in forked] == [
        s.config["configurable"]["checkpoint_id"] for s in history[len(history) // 2 :]
    ]
    now = forked[0]
    assert (now.values, now.next, now.metadata) == (then.values, then.next, then.metadata)
    assert [(t.id, t.name, t.result) for t in now.tasks] == [(t.id, t.name, t.result) for t in then.tasks]
    assert any(t.result for t in then.tasks), "the fork point has no task results: the test would not show writes"


async def test_a_fork_at_an_instant_copies_what_was_logged_by_then(h: Harness, client: redis.Redis) -> None:
    driver = await h.driver(lambda: diary(2))
    await driver.invoke(START, thread("src"))
    first_run = await driver.state(thread("src"))
    log = driver.saver.core.keys.thread("src").log  # type: ignore[attr-defined]
    last_ms = int(client.xrevrange(log, count=1)[0][0].split(b"-")[0])
    deadline = time.monotonic() + 5
    while time.time() * 1000 <= last_ms + 1 and time.monotonic() < deadline:
        await asyncio.sleep(0.001)  # wait for the clock to leave the first run's last millisecond
    await driver.invoke({"entries": ["again"]}, thread("src"))

    instant = datetime.fromtimestamp(last_ms / 1000, tz=timezone.utc)
    await copy(driver.saver, "src", "then", until=instant)

    assert (await driver.state(thread("then"))).values == first_run.values
    assert (await driver.state(thread("src"))).values != first_run.values


async def test_bad_copies_are_refused_and_change_nothing(h: Harness, client: redis.Redis, prefix: str) -> None:
    driver = await h.driver(lambda: diary(1))
    await driver.invoke(START, thread("a"))
    await driver.invoke(START, thread("b"))
    before = snapshot(client, prefix)

    with pytest.raises(ThreadExistsError):
        await copy(driver.saver, "a", "b")
    with pytest.raises(InvalidInputError, match="not in thread"):
        await copy(driver.saver, "a", "c", until="no-such-checkpoint")
    with pytest.raises(InvalidInputError, match="two different threads"):
        await copy(driver.saver, "a", "a")
    with pytest.raises(InvalidInputError, match="until"):
        await copy(driver.saver, "a", "c", until=12.5)
    await copy(driver.saver, "nobody", "c")

    assert snapshot(client, prefix) == before


async def test_a_fork_at_a_checkpoint_keeps_its_writes_logged_after_later_checkpoints(h: Harness) -> None:
    adapter = SaverAdapter(await h.new_saver(), h.kind, h.view)
    first, checkpoint = await adapter.save("src", {"a": 1})
    await adapter.save("src", {"a": 2}, parent=first, previous=checkpoint)
    # A late write: to the first checkpoint after the second was saved (a task of a fork, a
    # resumed run): `list` of the source shows it with the first checkpoint.
    await adapter.put_writes(first, [("a", 3)], "late-task")
    [source_tuple] = await adapter.list(first)
    assert source_tuple.pending_writes == [("late-task", "a", 3)]

    await copy(adapter.saver, "src", "fork", until=cid(first))

    [forked] = await adapter.list(config("fork"))
    assert forked.pending_writes == source_tuple.pending_writes
    assert forked.checkpoint == source_tuple.checkpoint
