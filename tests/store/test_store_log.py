"""The store's log: the truth its items are folded from (replay gives identical items), one
atomic append per partition, TTLs set in the same call, and the async store's batching."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
import redis
from langgraph.store.base import PutOp
from store_adapter import StoreAdapter

from projectors.store_domain import STORE
from streamsaver import AsyncStreamStore, StreamStore
from streamsaver.log.items import item_from_fields
from streamsaver.ops.replay import Replayer


def _items(client: Any, prefix: str) -> dict[bytes, bytes]:
    keys = sorted(client.scan_iter(match=f"{prefix}:items:doc:*"))
    return {key: client.execute_command("JSON.GET", key) for key in keys}


async def test_replaying_the_store_logs_gives_identical_items(store: StoreAdapter, client: Any, prefix: str) -> None:
    for n in range(40):
        await store.call("put", (f"user{n % 5}", "facts"), f"k{n % 13}", {"n": n, "nested": {"x": [n]}})
    for n in range(0, 13, 3):
        await store.call("delete", ("user1", "facts"), f"k{n}")
    live = _items(client, prefix)
    listed = await store.call("list_namespaces")
    found = await store.call("search", (), filter={"nested": {"x": [7]}})
    assert live and len(found) == 1
    stats = Replayer.open(client, prefix, domain=STORE).rebuild(["items"])
    assert stats.events == 45
    assert _items(client, prefix) == live  # byte-identical documents
    assert await store.call("list_namespaces") == listed
    assert await store.call("search", (), filter={"nested": {"x": [7]}}) == found


async def test_a_batch_appends_each_partition_in_one_call(store: StoreAdapter, client: Any, prefix: str) -> None:
    ops = [PutOp(("alice", str(n)), "k", {"n": n}) for n in range(5)] + [PutOp(("bob",), "k", {"n": 9})]
    await store.call("batch", ops)
    logs = sorted(client.scan_iter(match=f"{prefix}:slog:*", _type="stream"))
    events = [item_from_fields(fields) for log in logs for _, fields in client.xrange(log)]
    assert sorted(e.key for e in events) == ["k"] * 6  # type: ignore[union-attr]
    assert {len(client.xrange(log)) for log in logs} <= {5, 1, 6}
    feeds = list(client.scan_iter(match=f"{prefix}:sfeed:*", _type="stream"))
    assert sum(client.xlen(feed) for feed in feeds) == 6


async def test_a_put_ttl_expires_the_item(store: StoreAdapter, client: Any, prefix: str) -> None:
    await store.call("put", ("t",), "short", {"v": 1}, ttl=1)  # a minute
    await store.call("put", ("t",), "long", {"v": 1})
    assert await store.call("get", ("t",), "short") is not None
    [doc] = [key for key in client.keys(f"{prefix}:items:doc:*") if client.pttl(key) > 0]
    assert 0 < client.pttl(doc) <= 60_000
    client.pexpire(doc, 1)  # the minute passes: Redis expires the key (waited for, not slept on)
    while client.exists(doc):
        await asyncio.sleep(0.001)
    assert await store.call("get", ("t",), "short") is None
    assert [i.key for i in await store.call("search", ("t",))] == ["long"]


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_default_ttl_and_refresh_on_read(kind: str, redis_url: str, prefix: str, client: Any) -> None:
    options: dict[str, Any] = {"prefix": prefix, "default_ttl": 60}  # an hour
    if kind == "sync":
        sync_store = StreamStore(redis.Redis.from_url(redis_url), **options)
        sync_store.setup()
        put, get = sync_store.put, sync_store.get
    else:
        async_store = AsyncStreamStore(redis.asyncio.Redis.from_url(redis_url), **options)
        await async_store.setup()
        put, get = async_store.aput, async_store.aget  # type: ignore[assignment]

    async def call(result: Any) -> Any:
        return await result if asyncio.iscoroutine(result) else result

    hour = 3_600_000
    await call(put(("ns",), "k", {"v": 1}))
    [doc] = client.keys(f"{prefix}:items:doc:*")
    assert hour - 60_000 < client.pttl(doc) <= hour
    client.pexpire(doc, 10_000)  # as if most of the hour had passed
    await call(get(("ns",), "k"))  # refreshes: back to the item's own TTL
    assert client.pttl(doc) > hour - 60_000
    client.pexpire(doc, 10_000)
    await call(get(("ns",), "k", refresh_ttl=False))
    assert client.pttl(doc) <= 10_000
    await call(put(("ns",), "k", {"v": 2}, ttl=None))  # no TTL: the item never expires
    assert client.pttl(doc) == -1


async def test_concurrent_async_calls_are_coalesced_and_a_bad_one_fails_alone(
    redis_url: str, prefix: str
) -> None:
    store = AsyncStreamStore(redis.asyncio.Redis.from_url(redis_url), prefix=prefix)
    await store.setup()
    calls = [store.aput(("many", str(n % 3)), f"k{n}", {"n": n}) for n in range(30)]
    calls.append(store.aput(("bad.label",), "k", {"n": 0}))
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert [type(r) for r in results[:-1]] == [type(None)] * 30
    assert isinstance(results[-1], ValueError)
    assert len(await store.asearch(("many",), limit=100)) == 30

    def from_a_thread() -> Any:
        store.put(("thread",), "k", {"from": "thread"})
        return store.get(("thread",), "k")

    item = await asyncio.to_thread(from_a_thread)
    assert item.value == {"from": "thread"}


def test_a_saver_and_a_store_share_one_client(redis_url: str, prefix: str) -> None:
    from streamsaver import StreamSaver

    client = redis.Redis.from_url(redis_url)
    saver, store = StreamSaver(client, prefix=prefix), StreamStore(client, prefix=prefix)
    saver.setup()
    store.setup()
    store.put(("shared",), "k", {"v": 1})
    assert store.get(("shared",), "k").value == {"v": 1}  # type: ignore[union-attr]
    assert saver.get_tuple({"configurable": {"thread_id": "none"}}) is None
    started = time.monotonic()
    threads = [threading.Thread(target=store.put, args=(("t", str(n)), "k", {"n": n})) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(store.search(("t",), limit=20)) == 8 and time.monotonic() - started < 10
