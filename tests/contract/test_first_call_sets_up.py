"""Whatever a saver's first call is, it sets the saver up (docs/getting-started.md: "If you never
call `setup()`, the first call does it"): `put_writes` first once raised ConfigurationError."""

from __future__ import annotations

import redis
import redis.asyncio

from streamsaver import AsyncStreamSaver, StreamSaver

CONFIG = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "1f0a"}}


def test_put_writes_as_the_first_call_sets_the_saver_up(client: redis.Redis, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix)
    saver.put_writes(CONFIG, [("answer", 42)], "task-1")
    assert StreamSaver(client, prefix=prefix).get_tuple(CONFIG) is None  # no checkpoint, only its writes
    assert client.exists(f"{prefix}:meta") == 1
    assert client.xlen(saver.core.keys.thread("t").log) == 1


async def test_async_put_writes_as_the_first_call_sets_the_saver_up(
    aclient: redis.asyncio.Redis, client: redis.Redis, prefix: str
) -> None:
    saver = AsyncStreamSaver(aclient, prefix=prefix)
    await saver.aput_writes(CONFIG, [("answer", 42)], "task-1")
    assert client.exists(f"{prefix}:meta") == 1
    assert client.xlen(saver.core.keys.thread("t").log) == 1


def test_no_writes_as_the_first_call_costs_nothing(client: redis.Redis, prefix: str) -> None:
    StreamSaver(client, prefix=prefix).put_writes(CONFIG, [], "task-1")
    assert client.exists(f"{prefix}:meta") == 0
