"""The store suite runs every test on `StreamStore` and on `AsyncStreamStore` (one Redis server;
test_store_cluster.py runs the store on the embedded cluster). `StoreAdapter` gives both one
async face."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis
import redis.asyncio
from store_adapter import StoreAdapter, TripCounter, counting_connections

from streamsaver import AsyncStreamStore, StreamStore


@pytest.fixture(params=["sync", "async"])
async def store(request: pytest.FixtureRequest, redis_url: str, prefix: str) -> AsyncIterator[StoreAdapter]:
    """A set-up store (sync or async) on a counting client under a fresh prefix."""
    counter = TripCounter()
    sync_connection, async_connection = counting_connections(counter)
    options: dict[str, Any] = getattr(request, "param_options", {})
    if request.param == "sync":
        client = redis.Redis.from_url(redis_url, connection_class=sync_connection)
        adapter = StoreAdapter(StreamStore(client, prefix=prefix, **options), counter)
        await adapter.setup()
        yield adapter
        client.close()
    else:
        aclient = redis.asyncio.Redis.from_url(redis_url, connection_class=async_connection)
        astore = AsyncStreamStore(aclient, prefix=prefix, **options)
        adapter = StoreAdapter(astore, counter)
        await adapter.setup()
        yield adapter
        await astore.aclose()
        await aclient.aclose()
