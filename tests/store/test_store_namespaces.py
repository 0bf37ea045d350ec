"""The namespace registry behind ``list_namespaces``: kept in the same call as each write,
rebuilt exactly by replay, erased by a purge, checked by verify; a namespace whose items all
expired is not listed (expiry is not an event: the registry still counts it, the listing checks)."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis
from store_adapter import StoreAdapter

from projectors.store_domain import STORE
from streamsaver import StreamStore
from streamsaver.log.keys import StoreKeys, item_stem
from streamsaver.ops.replay import Replayer
from streamsaver.ops.verify import verify


def _gone(client: redis.Redis, key: str, within_s: float = 5.0) -> bool:
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        if not client.exists(key):
            return True
        time.sleep(0.02)
    return False


def _registry(client: redis.Redis, keys: StoreKeys) -> tuple[Any, ...]:
    return (
        sorted(client.hgetall(keys.namespaces).items()),
        client.zrange(keys.expiring, 0, -1, withscores=True),
        sorted(client.smembers(keys.items)),
    )


def _partition(store: StreamStore, first_label: str) -> StoreKeys:
    return store.core.keyspace.store(store.core.keyspace.store_partition(first_label))


def test_a_namespace_whose_items_all_expired_is_not_listed(redis_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(redis_url)
    store = StreamStore(client, prefix=prefix)
    store.setup()
    store.put(("a", "gone"), "k", {"v": 1}, ttl=0.002)  # 120 ms
    store.put(("a", "mixed"), "short", {"v": 1}, ttl=0.002)
    store.put(("a", "mixed"), "kept", {"v": 2}, ttl=10)
    store.put(("a", "plain"), "k", {"v": 3})
    store.put(("a", "turned"), "k", {"v": 4})
    store.put(("a", "turned"), "k", {"v": 4}, ttl=0.002)  # a persistent item made expiring
    keys = _partition(store, "a")
    for ns, key in ((("a", "gone"), "k"), (("a", "mixed"), "short"), (("a", "turned"), "k")):
        assert _gone(client, keys.item(item_stem(ns, key)))
    assert store.list_namespaces() == [("a", "mixed"), ("a", "plain")]
    assert store.list_namespaces(prefix=("a", "gone")) == []
    assert store.list_namespaces(max_depth=1) == [("a",)]
    assert client.hget(keys.namespaces, "a.gone") == b"1"  # still counted: the listing checked it
    store.put(("a", "gone"), "k", {"v": 5})  # the same stem again, now without a TTL
    assert client.hget(keys.namespaces, "a.gone") == b"1"
    again = store.get(("a", "gone"), "k")  # made whole again: its document had expired
    assert again is not None and again.value == {"v": 5} and again.created_at == again.updated_at
    assert store.list_namespaces(prefix=("a",)) == [("a", "gone"), ("a", "mixed"), ("a", "plain")]
    store.delete(("a", "turned"), "k")  # deleting an expired item takes it out of the registry
    assert client.hget(keys.namespaces, "a.turned") is None
    assert verify(client, prefix, domain=STORE).matches


def test_replay_rebuilds_the_registry_and_a_purge_erases_it(redis_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(redis_url)
    store = StreamStore(client, prefix=prefix)
    store.setup()
    for n in range(6):
        store.put(("u", f"n{n % 3}"), f"k{n}", {"n": n}, ttl=10 if n % 2 else None)
    store.put(("u", "n0"), "k3", {"n": 3})  # an expiring item made persistent
    store.delete(("u", "n1"), "k4")
    store.delete(("u", "n1"), "missing")  # a delete of nothing changes no count
    store.put(("v",), "k", {"n": 0}, ttl=10)
    keys = _partition(store, "u")
    before = _registry(client, keys)
    assert before[0] == [(b"u.n0", b"2"), (b"u.n1", b"1"), (b"u.n2", b"2")]
    assert [stem for stem, _ in before[1]] == [b"u.n1:k1", b"u.n2:k5"]
    for key in (keys.namespaces, keys.expiring, keys.items):
        client.delete(key)
    Replayer.open(client, prefix, domain=STORE).rebuild(["items"])
    assert _registry(client, keys) == before
    assert verify(client, prefix, domain=STORE).matches
    store.purge(("u", "n0"))
    assert sorted(client.hkeys(keys.namespaces)) == [b"u.n1", b"u.n2"]
    assert store.list_namespaces(prefix=("u",)) == [("u", "n1"), ("u", "n2")]
    assert verify(client, prefix, domain=STORE).matches
    store.purge(("u",))
    assert not client.exists(keys.namespaces, keys.expiring)
    assert store.list_namespaces() == [("v",)]


async def test_a_damaged_registry_key_refuses_the_put_before_any_write(
        store: StoreAdapter, client: redis.Redis) -> None:
    core = store.store.core
    keys = core.keyspace.store(core.keyspace.store_partition("w"))
    client.set(keys.namespaces, "not a hash")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        await store.call("put", ("w",), "k", {"v": 1})
    assert client.xlen(keys.log) == 0 and not client.exists(keys.item(item_stem(("w",), "k")))


async def test_listings_of_many_namespaces_equal_the_full_listing_sliced(store: StoreAdapter) -> None:
    namespaces = [(f"t{n % 7}", f"s{n % 5}", *(("deep",) if n % 3 == 0 else ())) for n in range(40)]
    for n, ns in enumerate(namespaces):
        await store.call("put", ns, f"k{n}", {"n": n})
    everything = sorted(set(namespaces))
    assert await store.call("list_namespaces", limit=1000) == everything
    cases: list[dict[str, Any]] = [
        {}, {"prefix": ("t3",)}, {"prefix": ("t3", "*", "deep")}, {"suffix": ("deep",)}, {"prefix": ("*", "s1")},
        {"max_depth": 1}, {"prefix": ("t1",), "suffix": ("s2",)},
    ]
    for case in cases:
        full = await store.call("list_namespaces", **case, limit=1000)
        paged: list[tuple[str, ...]] = []
        for offset in range(0, len(full) + 3, 3):
            paged += await store.call("list_namespaces", **case, limit=3, offset=offset)
        assert paged == full, case
    assert await store.call("list_namespaces", prefix=("t3", "*", "deep"), limit=1000) == [
        ns for ns in everything if ns[0] == "t3" and ns[2:] == ("deep",)]
