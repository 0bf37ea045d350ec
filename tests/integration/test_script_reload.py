"""After the server forgets its scripts (restart, failover, SCRIPT FLUSH), the next call loads
them and goes on: nothing fails and nothing is applied twice."""

from __future__ import annotations

import redis
from helpers import config, new_checkpoint, snapshot

from streamsaver import AsyncStreamSaver, StreamSaver
from streamsaver.ops.replay import Replayer


def _put(saver: StreamSaver, thread: str) -> None:
    checkpoint, versions = new_checkpoint({"messages": ["hi"]})
    saver.put(config(thread), checkpoint, {"source": "loop", "step": 0}, versions)


def test_the_sync_saver_reloads_its_scripts_after_a_flush(client: redis.Redis, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix)
    _put(saver, "t1")
    client.script_flush()

    _put(saver, "t2")
    client.script_flush()
    saved = saver.get_tuple(config("t2"))

    assert saved is not None and saved.checkpoint["channel_values"] == {"messages": ["hi"]}
    assert client.xlen(saver.core.keys.thread("t2").log) == 1


async def test_the_async_saver_reloads_its_scripts_after_a_flush(
    client: redis.Redis, aclient: redis.asyncio.Redis, prefix: str
) -> None:
    saver = AsyncStreamSaver(aclient, prefix=prefix)
    checkpoint, versions = new_checkpoint({"n": 1})
    await saver.aput(config("t"), checkpoint, {"source": "loop", "step": 0}, versions)
    client.script_flush()

    saved = await saver.aget_tuple(config("t"))

    assert saved is not None and saved.checkpoint["channel_values"] == {"n": 1}


def test_a_replay_reloads_its_scripts_after_a_flush(client: redis.Redis, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix, projections=("full", "shallow"))
    for thread in ("a", "b"):
        _put(saver, thread)
    live = snapshot(client, prefix)
    replayer = Replayer.open(client, prefix)
    replayer.drop(["full", "shallow"])
    client.script_flush()

    replayer.replay(["full", "shallow"])

    assert snapshot(client, prefix) == live
