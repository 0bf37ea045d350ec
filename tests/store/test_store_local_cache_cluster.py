"""A store with ``local_cache=N`` on Redis Cluster: a listener per primary (BCAST on each) feeds
the cache; another client's put or delete of an item on any primary evicts it; a flush of one
primary empties it; a listener connection killed on one primary empties it until that listener
is back; a slot moved to another primary, or to one that joined the cluster, empties it, and it
is coherent afterwards for the items on their new primary; a reply from a primary not tracked
yet is never held. Waits are conditions on the cache (with a deadline), never sleeps."""

from __future__ import annotations

import gc
import logging
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis
import redis.asyncio
from cluster_join import grown_cluster, move
from helpers import cluster_of_three
from redis.cluster import RedisCluster
from store_adapter import StoreAdapter, TripCounter

from streamsaver import AsyncStreamStore, StreamStore
from streamsaver.log.acl import runtime_rules
from streamsaver.log.routing import key_slot
from streamsaver.memory.cluster_invalidations import ClusterInvalidations
from streamsaver.server.cluster import EmbeddedCluster
from streamsaver.store.item_cache import ItemCache
from tests.store.test_store_local_cache import WAIT_S, seed


@dataclass
class OnCluster:
    """A set-up store with a local cache on a cluster (`adapter`), and another client's store on
    the same prefix (`writer`)."""

    adapter: StoreAdapter
    writer: StreamStore
    client: RedisCluster

    @property
    def cache(self) -> ItemCache:
        cache = self.adapter.store.core.cache
        assert cache is not None
        return cache

    @property
    def listeners(self) -> ClusterInvalidations:
        listener = self.adapter.store.cache_listener
        assert isinstance(listener, ClusterInvalidations)
        return listener

    def key(self, namespace: tuple[str, ...], key: str = "k") -> bytes:
        return self.writer.core.document_key(namespace, key).encode()

    def port_of(self, namespace: tuple[str, ...]) -> int:
        return int(self.client.get_node_from_key(self.key(namespace).decode()).port)

    def wait(self, condition: Any) -> None:
        assert self.cache.wait_for(condition, WAIT_S), "the cache never got there"

    def seed(self, namespace: tuple[str, ...], value: dict[str, Any]) -> None:
        seed(self.writer, self.cache, namespace, "k", value)

    async def get(self, namespace: tuple[str, ...]) -> Any:
        item = await self.adapter.call("get", namespace, "k", refresh_ttl=False)
        return None if item is None else item.value

    async def held(self, namespace: tuple[str, ...], value: dict[str, Any]) -> None:
        """Seed `value`, read it (held), and read it again from the cache."""
        self.seed(namespace, value)
        assert await self.get(namespace) == value and self.cache.holds(self.key(namespace))
        hits = self.cache.hits
        assert await self.get(namespace) == value and self.cache.hits == hits + 1


@pytest.fixture
def spread(cluster_url: str) -> list[tuple[str, ...]]:
    """A namespace on each primary of the test cluster."""
    client = RedisCluster.from_url(cluster_url)
    probe = StreamStore(client, prefix="probe")
    found: dict[str, tuple[str, ...]] = {}
    for n in range(200):
        namespace = (f"user{n}", "facts")
        found.setdefault(client.get_node_from_key(probe.core.document_key(namespace, "k")).name, namespace)
    client.close()
    assert len(found) == 3
    return sorted(found.values())


async def _on(url: str, kind: str, prefix: str) -> OnCluster:
    client = RedisCluster.from_url(url)
    writer = StreamStore(client, prefix=prefix)
    writer.setup()
    store: StreamStore | AsyncStreamStore
    if kind == "sync":
        store = StreamStore(RedisCluster.from_url(url), prefix=prefix, local_cache=100)
    else:
        store = AsyncStreamStore(redis.asyncio.RedisCluster.from_url(url), prefix=prefix, local_cache=100)
    made = OnCluster(StoreAdapter(store, TripCounter()), writer, client)
    await made.adapter.setup()
    made.wait(lambda: made.cache.live)
    return made


async def _close(made: OnCluster) -> None:
    made.adapter.store.close()
    if isinstance(made.adapter.store, AsyncStreamStore):
        await made.adapter.store.aclose()
    made.client.close()


@pytest.fixture(params=["sync", "async"])
async def on_cluster(request: pytest.FixtureRequest, cluster_url: str, prefix: str) -> AsyncIterator[OnCluster]:
    made = await _on(cluster_url, request.param, prefix)
    yield made
    await _close(made)


async def test_another_clients_put_and_delete_on_each_primary_evict(
        on_cluster: OnCluster, spread: list[tuple[str, ...]]) -> None:
    assert len(on_cluster.listeners.listeners) == 3
    for namespace in spread:
        await on_cluster.held(namespace, {"n": 1})
    for namespace in spread:
        on_cluster.writer.put(namespace, "k", {"n": 2})
        on_cluster.wait(lambda: not on_cluster.cache.holds(on_cluster.key(namespace)))  # noqa: B023
        assert await on_cluster.get(namespace) == {"n": 2}
        on_cluster.writer.delete(namespace, "k")
        on_cluster.wait(lambda: not on_cluster.cache.holds(on_cluster.key(namespace)))  # noqa: B023
        assert await on_cluster.get(namespace) is None


async def test_a_missing_item_is_not_held_on_a_cluster(on_cluster: OnCluster, spread: list[tuple[str, ...]]) -> None:
    """A missing key leaves nothing on its primary to invalidate when its slot moves."""
    assert await on_cluster.get(spread[0]) is None
    assert not on_cluster.cache.holds(on_cluster.key(spread[0]))


async def test_a_killed_listener_connection_on_one_primary_empties_and_recovers(
        on_cluster: OnCluster, spread: list[tuple[str, ...]]) -> None:
    for namespace in spread:
        await on_cluster.held(namespace, {"n": 1})
    victim = spread[1]
    port = on_cluster.port_of(victim)
    node = next(primary.node for *_, primary in on_cluster.listeners.slot_map or () if primary.port == port)
    listener = on_cluster.listeners.listeners[node]
    killed = listener.client_id
    assert killed is not None
    with redis.Redis(port=port) as client:
        client.client_kill_filter(_id=killed)
    on_cluster.wait(lambda: not on_cluster.cache.live and len(on_cluster.cache) == 0)
    on_cluster.writer.put(victim, "k", {"n": 2})
    assert await on_cluster.get(victim) == {"n": 2}
    on_cluster.wait(lambda: on_cluster.cache.live and listener.client_id not in (None, killed))
    for namespace in spread:
        await on_cluster.held(namespace, {"n": 3})


def _listener_threads() -> list[str]:
    return [thread.name for thread in threading.enumerate() if thread.name.startswith("streamsaver-invalidations")]


async def test_close_stops_every_listener(cluster_url: str, prefix: str) -> None:
    before = len(_listener_threads())
    made = await _on(cluster_url, "sync", prefix)
    port_of = {primary.node: primary.port for *_, primary in made.listeners.slot_map or ()}
    ids = {port_of[node]: listener.client_id for node, listener in made.listeners.listeners.items()}
    assert len(_listener_threads()) == before + 4 and None not in ids.values() and len(ids) == 3
    await _close(made)
    assert len(_listener_threads()) == before and not made.cache.live and not made.listeners.listeners
    for port, client_id in ids.items():  # client ids are per node
        with redis.Redis(port=port) as client:
            assert str(client_id) not in {entry["id"] for entry in client.client_list()}
    client = RedisCluster.from_url(cluster_url)
    dropped = StreamStore(client, prefix=prefix, local_cache=10)
    assert _until(lambda: len(_listener_threads()) == before + 4)
    del dropped
    gc.collect()
    assert len(_listener_threads()) == before
    client.close()


@pytest.fixture(scope="module")
def own_cluster() -> Iterator[EmbeddedCluster]:
    """A cluster of its own (the test flushes a primary)."""
    with cluster_of_three() as cluster:
        yield cluster


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_flush_of_one_primary_empties_the_cache(own_cluster: EmbeddedCluster, kind: str, prefix: str) -> None:
    made = await _on(own_cluster.url, kind, prefix)
    namespaces = [(f"user{n}", "facts") for n in range(12)]
    for namespace in namespaces:
        await made.held(namespace, {"n": 1})
    ports = {made.port_of(namespace) for namespace in namespaces}
    assert len(ports) == 3
    with redis.Redis(port=min(ports)) as client:
        client.flushall()
    made.wait(lambda: len(made.cache) == 0)
    survivors = [namespace for namespace in namespaces if made.port_of(namespace) != min(ports)]
    for namespace in survivors:
        await made.held(namespace, {"n": 2})
    await _close(made)


def _freeze(listeners: ClusterInvalidations) -> None:
    """Keep the supervisor on the slot map it knows (a change it has not learned of yet)."""
    frozen = listeners.slot_map
    listeners._read_slot_map = lambda: frozen  # type: ignore[method-assign]
    checks = listeners.checks
    listeners.recheck()
    assert _until(lambda: listeners.checks >= checks + 2)


def _until(condition: Any) -> bool:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            return False
        threading.Event().wait(0.01)
    return True


def _owner(made: OnCluster, namespace: tuple[str, ...]) -> bytes:
    slot = key_slot(made.key(namespace))
    return next(primary.node for start, end, primary in made.listeners.slot_map or () if start <= slot <= end)


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_moved_slots_and_a_joined_primary_empty_the_cache_which_stays_coherent(kind: str) -> None:
    with grown_cluster() as (cluster, extra):
        made = await _on(cluster.url, kind, "grow")
        namespace = ("users", "moving")
        await made.held(namespace, {"n": 1})
        slot, owner = key_slot(made.key(namespace)), _owner(made, namespace)
        # a slot moved between tracked primaries: the cache empties and learns the new owner
        other = next(node for node in cluster.nodes if node.port != made.port_of(namespace))
        before = made.listeners.slot_map
        move(cluster, slot, other)
        made.wait(lambda: made.listeners.slot_map != before and made.cache.live)
        assert _owner(made, namespace) != owner and not made.cache.holds(made.key(namespace))
        await made.held(namespace, {"n": 2})
        made.writer.put(namespace, "k", {"n": 3})
        made.wait(lambda: not made.cache.holds(made.key(namespace)))
        assert await made.get(namespace) == {"n": 3}
        # a primary joins and takes the slot, not learned of yet: its replies are never held
        await made.held(namespace, {"n": 4})
        _freeze(made.listeners)
        move(cluster, slot, extra)
        made.wait(lambda: not made.cache.holds(made.key(namespace)))  # MIGRATE deleted it on its old primary
        assert await made.get(namespace) == {"n": 4} and not made.cache.holds(made.key(namespace))
        made.writer.put(namespace, "k", {"n": 5})  # on the joined primary, whose writes are not heard yet
        assert await made.get(namespace) == {"n": 5}
        # learned: the joined primary is tracked, its items held and evicted by its invalidations
        del made.listeners._read_slot_map  # type: ignore[method-assign]
        made.listeners.recheck()
        made.wait(lambda: made.cache.live and len(made.listeners.listeners) == 4)
        await made.held(namespace, {"n": 6})
        made.writer.put(namespace, "k", {"n": 7})
        made.wait(lambda: not made.cache.holds(made.key(namespace)))
        assert await made.get(namespace) == {"n": 7}
        await _close(made)


def test_the_runtime_acl_user_is_refused_once_and_the_cache_stays_off(
        own_cluster: EmbeddedCluster, prefix: str, caplog: pytest.LogCaptureFixture) -> None:
    """It may not track nor subscribe (docs/security.md): every primary refuses it, one warning."""
    caplog.set_level(logging.DEBUG, logger="streamsaver.store")
    StreamStore(RedisCluster.from_url(own_cluster.url), prefix=prefix).setup()
    name, password = f"ss-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    for node in own_cluster.nodes:
        with redis.Redis(port=node.port) as admin:
            admin.execute_command("ACL", "SETUSER", name, "on", f">{password}", *runtime_rules(prefix))
    url = own_cluster.url.replace("redis://", f"redis://{name}:{password}@", 1)
    with StreamStore(RedisCluster.from_url(url), prefix=prefix, local_cache=10) as store:
        def refused() -> list[logging.LogRecord]:
            return [record for record in caplog.records if "local cache is off" in record.getMessage()]

        assert _until(lambda: len(refused()) >= 3)  # each primary's listener refused at least once
        assert [record.levelno for record in refused()].count(logging.WARNING) == 1
        store.put(("alice", "facts"), "k", {"n": 1})
        assert store.get(("alice", "facts"), "k").value == {"n": 1}  # type: ignore[union-attr]
        assert store.core.cache is not None and not store.core.cache.live and len(store.core.cache) == 0
