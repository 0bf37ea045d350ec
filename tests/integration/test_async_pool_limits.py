"""The async saver never asks its client's pool for more connections than it holds: calls
beyond the pool's size wait their turn instead of failing with MaxConnectionsError (a plain
``redis.asyncio`` pool raises rather than waits)."""

from __future__ import annotations

import asyncio

import redis.asyncio
from helpers import config, new_checkpoint

from streamsaver import AsyncStreamSaver


async def test_many_concurrent_calls_on_a_small_pool_all_succeed(redis_url: str, prefix: str) -> None:
    client = redis.asyncio.Redis.from_url(redis_url, max_connections=4)
    try:
        saver = AsyncStreamSaver(client, prefix=prefix)
        await saver.setup()

        async def save_and_read(i: int) -> str | None:
            checkpoint, versions = new_checkpoint({"n": i})
            saved = await saver.aput(config(f"t{i}"), checkpoint, {"step": i}, versions)
            await saver.aput_writes(saved, [("n", i + 1)], f"task{i}")
            found = await saver.aget_tuple(config(f"t{i}"))
            return found.checkpoint["id"] if found else None

        ids = await asyncio.gather(*(save_and_read(i) for i in range(200)))

        assert all(ids) and len(set(ids)) == 200
    finally:
        await client.aclose()
