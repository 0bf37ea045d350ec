"""`AsyncStreamStore.aclose` ends LangGraph's batching task after the calls queued before it, so
closing a store inside its event loop leaves no task pending when the loop closes; while a batch
runs with calls queued behind it, it waits for the queue to empty (an event), not polling it on
every turn of the event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator
from typing import Any

import redis.asyncio
from fake_embeddings import DIMS, vector
from langchain_core.embeddings import Embeddings

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


class _Held(Embeddings):
    """Embeddings whose async call waits for `release`: a batch that embeds runs until then."""

    def __init__(self) -> None:
        self.entered, self.release = asyncio.Event(), asyncio.Event()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [vector(text, 1.0) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return vector(text, 1.0)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        self.entered.set()
        await self.release.wait()
        return self.embed_documents(texts)


class _Resumes:
    """Awaits a coroutine, counting the times the event loop resumed it."""

    def __init__(self, coroutine: Coroutine[Any, Any, None]) -> None:
        self.coroutine, self.count = coroutine, 0

    def __await__(self) -> Generator[Any, Any, None]:
        steps, sent = self.coroutine.__await__(), None
        while True:
            try:
                yielded = steps.send(sent)
            except StopIteration:
                return
            sent = yield yielded
            self.count += 1


async def test_aclose_waits_for_a_running_batch_without_polling(redis_url: str, prefix: str) -> None:
    client = redis.asyncio.Redis.from_url(redis_url)
    embeddings = _Held()
    store = AsyncStreamStore(client, prefix=prefix, index={"dims": DIMS, "embed": embeddings, "fields": ["text"]})
    await store.setup()
    running = asyncio.ensure_future(store.aput(("users", "u3"), "k0", {"text": "first"}))
    await embeddings.entered.wait()  # its batch runs, held in its embedding step
    queued = [asyncio.ensure_future(store.aput(("users", "u3"), f"k{n}", {"text": f"then {n}"})) for n in (1, 2, 3)]
    await asyncio.sleep(0)  # one turn: the puts reach the queue behind the running batch
    assert store._aqueue.qsize() == 3

    closing = _Resumes(store.aclose())

    async def close() -> None:
        await closing

    closed = asyncio.ensure_future(close())
    for _ in range(200):  # the event loop turns 200 times while the batch is held
        await asyncio.sleep(0)
    assert not closed.done() and not any(put.done() for put in queued)
    assert closing.count <= 2  # waits on an event: polling resumed it on every turn (200)

    embeddings.release.set()
    await closed
    assert all(put.done() and put.exception() is None for put in [running, *queued])
    assert _batch_tasks() == []
    assert [(await store.aget(("users", "u3"), f"k{n}")) is not None for n in range(4)] == [True] * 4
    await store.aclose()
    await client.aclose()
