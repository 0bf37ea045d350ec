"""`AsyncStreamStore.aclose` ends LangGraph's batching task after the calls queued before it, so
closing a store inside its event loop leaves no task pending when the loop closes."""

from __future__ import annotations

import asyncio

import redis.asyncio

from streamsaver import AsyncStreamStore


def _batch_tasks() -> list[asyncio.Task[object]]:
    return [task for task in asyncio.all_tasks() if task.get_coro().__qualname__ == "_run"]  # type: ignore[union-attr]


async def test_aclose_runs_queued_calls_then_ends_the_batch_task(redis_url: str, prefix: str) -> None:
    client = redis.asyncio.Redis.from_url(redis_url)
    store = AsyncStreamStore(client, prefix=prefix)
    await store.setup()
    queued = [asyncio.ensure_future(store.aput(("users", "u1"), f"k{n}", {"n": n})) for n in range(5)]
    await asyncio.sleep(0)  # let the puts reach the queue: aclose must not drop them
    assert _batch_tasks()
    await store.aclose()
    assert all(put.done() and put.exception() is None for put in queued)
    assert _batch_tasks() == []
    again = await store.aget(("users", "u1"), "k4")  # a call after close starts a new batch task
    assert again is not None and again.value == {"n": 4}
    await store.aclose()
    assert _batch_tasks() == []
    await client.aclose()


async def test_the_context_manager_ends_the_batch_task(redis_url: str, prefix: str) -> None:
    async with AsyncStreamStore.from_conn_string(redis_url, prefix=prefix) as store:
        await store.setup()
        await store.aput(("users", "u2"), "k", {"v": 1})
    assert _batch_tasks() == []
