"""A store with ``local_cache=N`` answers a get of an item it holds without a round trip, and
never answers what another client's write, delete, purge, the item's expiry or a flush replaced
once that change's invalidation has arrived (waited for here as a condition on the cache, where
the protocol allows the lag); its own writes are read back at once. Sync and async stores."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis
import redis.asyncio
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp
from store_adapter import StoreAdapter, TripCounter, counting_connections

from streamsaver import AsyncStreamStore, StreamStore
from streamsaver.errors import ConfigurationError, InvalidInputError
from streamsaver.store.item_cache import ItemCache

WAIT_S = 10.0
NS = ("users", "alice")


def eventually(condition: Callable[[], bool], timeout: float = WAIT_S) -> None:
    """Poll `condition` (a server-side state no event announces) until it holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        threading.Event().wait(0.01)


@dataclass
class Cached:
    """A set-up store with a local cache (`adapter`), another client's store on the same prefix
    (`writer`) and a plain client (`client`)."""

    adapter: StoreAdapter
    writer: StreamStore
    client: redis.Redis

    @property
    def store(self) -> StreamStore | AsyncStreamStore:
        return self.adapter.store

    @property
    def cache(self) -> ItemCache:
        cache = self.store.core.cache
        assert cache is not None
        return cache

    def key(self, key: str, namespace: tuple[str, ...] = NS) -> bytes:
        return self.store.core.document_key(namespace, key).encode()

    def seed(self, namespace: tuple[str, ...], key: str, value: dict[str, Any], ttl: float | None = None) -> None:
        """Put through the other client, and wait until its invalidation arrived (a get after
        it has no invalidation of the item in flight, so its reply is held)."""
        seed(self.writer, self.cache, namespace, key, value, ttl)

    def wait(self, condition: Callable[[], bool]) -> None:
        assert self.cache.wait_for(condition, WAIT_S), "the cache never got there"

    async def trips(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, int]:
        self.adapter.counter.reset()
        result = await self.adapter.call(name, *args, **kwargs)
        return result, self.adapter.counter.trips


def seed(writer: StreamStore, cache: ItemCache, namespace: tuple[str, ...], key: str, value: dict[str, Any],
         ttl: float | None = None) -> None:
    before = cache.sequence
    writer.put(namespace, key, value, ttl=ttl)
    held = writer.core.document_key(namespace, key).encode()
    assert cache.wait_for(lambda: cache.changed_since(held, before), WAIT_S)


@pytest.fixture(params=["sync", "async"])
async def cached(request: pytest.FixtureRequest, redis_url: str, prefix: str) -> AsyncIterator[Cached]:
    counter = TripCounter()
    sync_connection, async_connection = counting_connections(counter)
    client = redis.Redis.from_url(redis_url)
    writer = StreamStore(client, prefix=prefix)
    writer.setup()
    store: StreamStore | AsyncStreamStore
    if request.param == "sync":
        own: Any = redis.Redis.from_url(redis_url, connection_class=sync_connection)
        store = StreamStore(own, prefix=prefix, local_cache=100)
    else:
        own = redis.asyncio.Redis.from_url(redis_url, connection_class=async_connection)
        store = AsyncStreamStore(own, prefix=prefix, local_cache=100)
    fixture = Cached(StoreAdapter(store, counter), writer, client)
    await fixture.adapter.setup()
    fixture.wait(lambda: fixture.cache.live)
    yield fixture
    store.close()
    if request.param == "async":
        await own.aclose()
    else:
        own.close()
    client.close()


async def test_a_held_get_costs_no_round_trip(cached: Cached) -> None:
    cached.seed(NS, "a", {"likes": ["tea"]})
    first, trips = await cached.trips("get", NS, "a")
    assert trips == 1 and cached.cache.holds(cached.key("a"))
    again, trips = await cached.trips("get", NS, "a")
    assert trips == 0 and again == first and again.value == {"likes": ["tea"]}
    missing, trips = await cached.trips("get", NS, "nobody")
    assert missing is None and trips == 1
    missing, trips = await cached.trips("get", NS, "nobody")
    assert missing is None and trips == 0
    both, trips = await cached.trips("batch", [GetOp(NS, "a", False), GetOp(NS, "nobody", False)])
    assert trips == 0 and both == [first, None]


async def test_a_held_get_checks_its_namespace_and_key_as_a_sent_one(cached: Cached) -> None:
    cached.seed(NS, "a", {"likes": ["tea"]})
    await cached.adapter.call("get", NS, "a")
    assert cached.cache.holds(cached.key("a"))
    for namespace in [(*NS[:-1], ""), ("langgraph", *NS[1:]), (*NS[:-1], "a.b")]:
        with pytest.raises(InvalidNamespaceError):
            await cached.adapter.call("get", namespace, "a")
    with pytest.raises(InvalidInputError):
        await cached.adapter.call("get", NS, "\ud800")  # a lone surrogate
    assert (await cached.trips("get", NS, "a"))[1] == 0


async def test_an_aget_after_a_queued_aput_of_its_item_reads_the_put(redis_url: str, prefix: str) -> None:
    client = redis.asyncio.Redis.from_url(redis_url)
    async with AsyncStreamStore(client, prefix=prefix, local_cache=100) as store:
        await store.setup()
        cache = store.core.cache
        assert cache is not None and cache.wait_for(lambda: cache.live, WAIT_S)
        await store.aput(NS, "a", {"v": 1})
        held = store.core.document_key(NS, "a").encode()
        # a reply is refused while the put's own invalidation may still be on its way: read again
        deadline = time.monotonic() + WAIT_S
        while await store.aget(NS, "a") is not None and not cache.holds(held):
            assert time.monotonic() < deadline, "the item was never held"
        _, got = await asyncio.gather(store.aput(NS, "a", {"v": 2}), store.aget(NS, "a"))
        assert got is not None and got.value == {"v": 2}
    await client.aclose()


async def test_a_caller_mutating_an_item_changes_nothing_held(cached: Cached) -> None:
    cached.seed(NS, "a", {"likes": ["tea"]})
    (await cached.adapter.call("get", NS, "a")).value["likes"].append("coffee")
    (await cached.adapter.call("get", NS, "a")).value["likes"].append("milk")
    assert (await cached.trips("get", NS, "a"))[0].value == {"likes": ["tea"]}


def _put(cached: Cached) -> None:
    cached.writer.put(NS, "a", {"likes": ["coffee"]})


def _delete(cached: Cached) -> None:
    cached.writer.delete(NS, "a")


def _purge(cached: Cached) -> None:
    cached.writer.purge(("users",))


def _flush(cached: Cached) -> None:
    cached.client.flushall()


@pytest.mark.parametrize("change", [_put, _delete, _purge, _flush])
async def test_another_clients_change_is_seen_once_its_invalidation_arrived(
    cached: Cached, change: Callable[[Cached], None]
) -> None:
    cached.seed(NS, "a", {"likes": ["tea"]})
    await cached.adapter.call("get", NS, "a")
    assert cached.cache.holds(cached.key("a"))
    change(cached)
    cached.wait(lambda: not cached.cache.holds(cached.key("a")))
    got = await cached.adapter.call("get", NS, "a", refresh_ttl=False)
    assert (got.value if got else None) == ({"likes": ["coffee"]} if change is _put else None)


async def test_an_items_expiry_is_seen_once_its_invalidation_arrived(cached: Cached) -> None:
    cached.seed(NS, "a", {"likes": ["tea"]}, ttl=1 / 60)  # one second
    held = await cached.adapter.call("get", NS, "a", refresh_ttl=False)
    assert held.value == {"likes": ["tea"]} and cached.cache.holds(cached.key("a"))
    # Active expiry may take long to reach the key on a server with many expiring keys; a read
    # of the key once past its deadline deletes it (lazy expiry), as any client's would.
    eventually(lambda: cached.client.pttl(cached.key("a")) == -2)
    cached.wait(lambda: not cached.cache.holds(cached.key("a")))  # the deletion's invalidation
    assert await cached.adapter.call("get", NS, "a", refresh_ttl=False) is None


async def test_its_own_writes_are_read_back_at_once(cached: Cached) -> None:
    cached.seed(NS, "a", {"likes": ["tea"]})
    await cached.adapter.call("get", NS, "a")
    await cached.adapter.call("put", NS, "a", {"likes": ["coffee"]})
    assert (await cached.adapter.call("get", NS, "a")).value == {"likes": ["coffee"]}
    await cached.adapter.call("delete", NS, "a")
    assert await cached.adapter.call("get", NS, "a") is None
    cached.seed(NS, "b", {"n": 1})
    await cached.adapter.call("get", NS, "b")
    assert cached.cache.holds(cached.key("b"))
    await cached.adapter.call("purge", ("users",))
    assert await cached.adapter.call("get", NS, "b") is None
    put_then_get = await cached.adapter.call("batch", [PutOp(NS, "c", {"n": 2}), GetOp(NS, "c")])
    assert put_then_get[1].value == {"n": 2}
    put_then_get = await cached.adapter.call("batch", [PutOp(NS, "c", {"n": 3}), GetOp(NS, "c")])
    assert put_then_get[1].value == {"n": 3}


async def test_a_get_that_renews_a_ttl_goes_to_the_server(cached: Cached) -> None:
    cached.seed(NS, "short", {"n": 1}, ttl=60)
    await cached.adapter.call("get", NS, "short", refresh_ttl=False)
    assert (await cached.trips("get", NS, "short", refresh_ttl=False))[1] == 0
    assert (await cached.trips("get", NS, "short", refresh_ttl=True))[1] == 1
    # an item without a TTL: renewing it writes nothing, so the cache answers
    cached.seed(NS, "forever", {"n": 2})
    await cached.adapter.call("get", NS, "forever", refresh_ttl=True)
    got, trips = await cached.trips("get", NS, "forever", refresh_ttl=True)
    assert trips == 0 and got.value == {"n": 2}


def _hook_reply(store: StreamStore | AsyncStreamStore, between: Callable[[], None]) -> None:
    """Run `between()` after the server answered the store's next call, before the program
    sees the replies (an invalidation arriving between a get's send and its reply)."""
    driver: Any = store._driver
    call = driver._call
    if isinstance(store, AsyncStreamStore):
        async def hooked_async(step: Any) -> Any:
            replies = await call(step)
            driver._call = call
            between()
            return replies
        driver._call = hooked_async
    else:
        def hooked(step: Any) -> Any:
            replies = call(step)
            driver._call = call
            between()
            return replies
        driver._call = hooked


@pytest.mark.parametrize("invalidated", [True, False])
async def test_a_reply_older_than_an_invalidation_is_never_held(cached: Cached, invalidated: bool) -> None:
    cached.seed(NS, "a", {"likes": ["tea"]})
    held = cached.key("a")

    def write_and_wait_for_its_invalidation() -> None:
        before = cached.cache.sequence
        written = "a" if invalidated else "elsewhere"
        cached.writer.put(NS, written, {"likes": ["coffee"]})
        cached.wait(lambda: cached.cache.changed_since(cached.key(written), before))

    _hook_reply(cached.store, write_and_wait_for_its_invalidation)
    stale = await cached.adapter.call("get", NS, "a")
    assert stale.value == {"likes": ["tea"]}  # the read ran before the write
    assert cached.cache.holds(held) is not invalidated
    got, trips = await cached.trips("get", NS, "a")
    assert got.value == ({"likes": ["coffee"]} if invalidated else {"likes": ["tea"]})
    assert trips == (1 if invalidated else 0)


async def test_a_lost_invalidation_connection_empties_the_cache_until_it_is_back(cached: Cached) -> None:
    listener = cached.store.cache_listener
    assert listener is not None and listener.client_id is not None
    cached.seed(NS, "a", {"likes": ["tea"]})
    await cached.adapter.call("get", NS, "a")
    killed = listener.client_id
    before = cached.cache.sequence
    cached.client.client_kill_filter(_id=killed)
    cached.wait(lambda: cached.cache.sequence > before and not cached.cache.holds(cached.key("a")))
    _put(cached)
    assert (await cached.adapter.call("get", NS, "a")).value == {"likes": ["coffee"]}
    cached.wait(lambda: cached.cache.live and listener.client_id not in (None, killed))
    cached.seed(NS, "a", {"likes": ["milk"]})  # no invalidation of it in flight from here
    await cached.adapter.call("get", NS, "a")
    got, trips = await cached.trips("get", NS, "a")
    assert trips == 0 and got.value == {"likes": ["milk"]}


def _listeners() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "streamsaver-invalidations"]


def test_close_ends_the_listener_thread_and_connection(redis_url: str, prefix: str) -> None:
    before = len(_listeners())
    client = redis.Redis.from_url(redis_url)
    with StreamStore(client, prefix=prefix, local_cache=10) as store:
        cache, listener = store.core.cache, store.cache_listener
        assert cache is not None and listener is not None
        assert cache.wait_for(lambda: cache.live, WAIT_S)
        connection = listener.client_id
        assert len(_listeners()) == before + 1
        assert client.client_list(client_id=[connection])  # type: ignore[list-item]
    assert len(_listeners()) == before and not cache.live
    assert not client.client_list(client_id=[connection])  # type: ignore[list-item]
    dropped = StreamStore(client, prefix=prefix, local_cache=10)
    assert len(_listeners()) == before + 1
    del dropped
    gc.collect()
    assert len(_listeners()) == before
    client.close()


async def test_the_async_store_closes_on_exit(redis_url: str, prefix: str) -> None:
    before = len(_listeners())
    async with AsyncStreamStore.from_conn_string(redis_url, prefix=prefix, local_cache=10) as store:
        await store.setup()
        await store.aput(NS, "a", {"n": 1})
        assert len(_listeners()) == before + 1
    assert len(_listeners()) == before


def test_local_cache_0_is_the_store_without_a_cache(client: redis.Redis, prefix: str) -> None:
    before = len(_listeners())
    store = StreamStore(client, prefix=prefix)
    store.setup()
    sent: list[Any] = []
    once = store._driver._once

    def recorded(steps: Any, *rest: Any) -> Any:
        sent.extend(steps)
        return once(steps, *rest)

    store._driver._once = recorded  # type: ignore[method-assign]
    store.put(NS, "a", {"n": 1})
    store.get(NS, "a")
    assert store.core.cache is None and store.cache_listener is None and len(_listeners()) == before
    # the get's one flag (refresh_on_read), and no PTTL asked
    assert sent[-1][0] == "EVALSHA" and sent[-1][-2:] == [store.core.document_key(NS, "a"), "1"]
    store.close()


@pytest.mark.parametrize("size", [-1, 1.5, True, "100", None])
def test_local_cache_is_a_count_of_documents(client: redis.Redis, prefix: str, size: Any) -> None:
    before = len(_listeners())
    with pytest.raises(InvalidInputError, match="local_cache"):
        StreamStore(client, prefix=prefix, local_cache=size)
    assert len(_listeners()) == before


@pytest.fixture
def evicting(redis_url: str, prefix: str) -> Iterator[StreamStore]:
    with StreamStore.from_conn_string(redis_url, prefix=prefix, local_cache=2) as store:
        store.setup()
        cache = store.core.cache
        assert cache is not None and cache.wait_for(lambda: cache.live, WAIT_S)
        yield store


def test_it_holds_at_most_n_documents_least_recently_used_out(evicting: StreamStore, client: redis.Redis) -> None:
    cache = evicting.core.cache
    assert cache is not None
    writer = StreamStore(client, prefix=evicting.core.prefix)
    for key in "abc":
        seed(writer, cache, NS, key, {"k": key})
    evicting.get(NS, "a")
    evicting.get(NS, "b")
    evicting.get(NS, "a")
    evicting.get(NS, "c")
    held = [key for key in "abc" if cache.holds(evicting.core.document_key(NS, key).encode())]
    assert held == ["a", "c"]


def test_a_resp3_client_is_served_alike(redis_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(redis_url, protocol=3)
    writer = StreamStore(redis.Redis.from_url(redis_url), prefix=prefix)
    with StreamStore(client, prefix=prefix, local_cache=10) as store:
        store.setup()
        cache = store.core.cache
        assert cache is not None and cache.wait_for(lambda: cache.live, WAIT_S)
        seed(writer, cache, NS, "a", {"n": 1})
        first = store.get(NS, "a")
        assert cache.holds(store.core.document_key(NS, "a").encode()) and store.get(NS, "a") == first
        hits = cache.hits
        seed(writer, cache, NS, "a", {"n": 2})
        assert store.get(NS, "a").value == {"n": 2} and cache.hits == hits  # type: ignore[union-attr]
    client.close()


def test_a_sentinel_managed_client_is_refused(prefix: str) -> None:
    from redis.sentinel import Sentinel

    client = Sentinel([("127.0.0.1", 1)]).master_for("memory")  # nothing is connected yet
    with pytest.raises(ConfigurationError, match="Sentinel"):
        StreamStore(client, prefix=prefix, local_cache=10)


def test_a_server_that_stops_answering_turns_the_cache_off(evicting: StreamStore, client: redis.Redis) -> None:
    cache = evicting.core.cache
    assert cache is not None
    seed(StreamStore(client, prefix=evicting.core.prefix), cache, NS, "a", {"n": 1})
    evicting.get(NS, "a")
    assert cache.holds(evicting.core.document_key(NS, "a").encode())
    assert evicting.cache_listener is not None
    evicting.cache_listener.lost_after = 0.5
    client.client_pause(3_000, all=True)  # the listener's heartbeat goes unanswered
    assert cache.wait_for(lambda: not cache.live, WAIT_S) and len(cache) == 0
    assert cache.wait_for(lambda: cache.live, WAIT_S)  # back once the server answers again
    assert evicting.get(NS, "a").value == {"n": 1}  # type: ignore[union-attr]
