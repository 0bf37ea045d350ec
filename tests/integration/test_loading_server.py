"""One Redis server reloading its data (``LOADING``: restarted, ``DEBUG RELOAD``): it refuses
every command it reads while it loads, except the few a loading server runs (``TIME``,
``INFO``, ``CONFIG``; never a script call, nor ``SCRIPT LOAD``). A store batch waits until it has
loaded and logs each event once; one that stays loading longer than the driver waits fails with
`ServerUnavailableError`, nothing written. The lanes return what they read and ``LOADING`` for
the rest instead of letting the connection's ``Retry`` send the whole request again (a command
that ran before the refusal would run twice)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
import redis.asyncio
from langgraph.store.base import PutOp
from loading_server import DEBUG_ARGS, fill, reloading
from redis.exceptions import BusyLoadingError

from streamsaver import AsyncStreamStore, StreamStore
from streamsaver.drivers import aio, sync
from streamsaver.drivers.alane import AsyncLane
from streamsaver.drivers.lane import Lane
from streamsaver.errors import ServerUnavailableError
from streamsaver.server.embedded import EmbeddedRedis

USERS = [f"user{n}" for n in range(6)]


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddedRedis]:
    with EmbeddedRedis(extra_args=DEBUG_ARGS) as embedded, redis.Redis.from_url(embedded.url) as admin:
        fill(admin)
        yield embedded


def _ops() -> list[PutOp]:
    return [PutOp((user, "facts"), f"k{n}", {"n": n}) for user in USERS for n in range(3)]


def _logged(client: redis.Redis, store: Any) -> int:
    keyspace = store.core.keyspace
    return sum(client.xlen(keyspace.store(p).log) for p in {keyspace.store_partition(u) for u in USERS})


async def _store(kind: str, url: str, prefix: str) -> Any:
    if kind == "sync":
        store: Any = StreamStore(redis.Redis.from_url(url), prefix=prefix)
        store.setup()
    else:
        store = AsyncStreamStore(redis.asyncio.Redis.from_url(url), prefix=prefix)
        await store.setup()
    return store


async def _batch(store: Any, ops: list[PutOp]) -> Any:
    return await store.abatch(ops) if isinstance(store, AsyncStreamStore) else store.batch(ops)


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_store_batch_on_a_loading_server_waits_it_out_each_event_logged_once(
        server: EmbeddedRedis, prefix: str, kind: str) -> None:
    store = await _store(kind, server.url, prefix)
    with reloading(server.url):
        await _batch(store, _ops())
    with redis.Redis.from_url(server.url) as client:
        assert _logged(client, store) == len(_ops())


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_server_loading_longer_than_the_waits_fails_the_batch_by_name_nothing_written(
        server: EmbeddedRedis, prefix: str, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for driver in (sync, aio):
        monkeypatch.setattr(driver, "LOADING_RETRIES", 2)
    store = await _store(kind, server.url, prefix)
    with reloading(server.url, delay_us=1000), pytest.raises(ServerUnavailableError, match="loading"):
        await _batch(store, _ops())
    with redis.Redis.from_url(server.url) as client:
        assert _logged(client, store) == 0


def _times_run(client: redis.Redis) -> int:
    stats = client.info("commandstats").get("cmdstat_time", {})
    return int(stats.get("calls", 0))


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_lane_returns_what_ran_and_loading_for_the_rest_without_sending_the_request_again(
        server: EmbeddedRedis, kind: str) -> None:
    with redis.Redis.from_url(server.url) as client, reloading(server.url):
        client.config_resetstat()  # CONFIG and INFO are served while loading, and TIME is run
        if kind == "sync":
            lane = Lane.of(client)
            assert lane is not None
            replies = lane.send([["TIME"], ["PING"], ["TIME"]])
        else:
            aclient = redis.asyncio.Redis.from_url(server.url)
            alane = AsyncLane.of(aclient)
            assert alane is not None
            replies = await alane.send([["TIME"], ["PING"], ["TIME"]])
            await aclient.aclose()
        assert isinstance(replies[0], list) and len(replies[0]) == 2  # TIME ran: seconds, microseconds
        assert all(isinstance(reply, BusyLoadingError) for reply in replies[1:])
        assert _times_run(client) == 2  # the request once: its two TIMEs ran, no resend ran them again
