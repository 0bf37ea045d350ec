"""A put alone in its partition's batch (what `StreamStore.put` sends) goes as ``store_put.lua``
(`streamsaver.store.put`), not ``append_batch.lua``: the two write the same keys with the same
bytes, TTLs and registry, refuse the same damaged keys, and replay rebuilds what the lone put
wrote. Each scenario applies the same events through both scripts, under two prefixes of one
server (and of the embedded cluster), and compares every key."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis
from redis.cluster import RedisCluster

from projectors.store import VIEW
from projectors.store_domain import STORE
from streamsaver import StreamStore
from streamsaver.log.append import append_batch_call
from streamsaver.log.events import ItemPut, RunContext
from streamsaver.ops.replay import Replayer
from streamsaver.store.put import put_call
from tests.helpers import keys_of
from tests.store.test_store_vectors import DIMS, embed

INDEX = {"dims": DIMS, "embed": embed, "fields": ["text"]}
_ENTRY_ID = re.compile(rb"^\d+-\d+$")


def _plain(value: Any) -> Any:
    """A stored value with its log entry ids (which differ between the two prefixes) masked."""
    if isinstance(value, bytes):
        return b"<id>" if _ENTRY_ID.match(value) else value
    if isinstance(value, (list, tuple)):
        return [_plain(inner) for inner in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _state(client: Any, prefix: str) -> dict[bytes, Any]:
    """Every key of the store under `prefix` (named without it): type, content (entry ids
    masked) and deadline."""
    out: dict[bytes, Any] = {}
    for key in keys_of(client, prefix):
        kind = client.type(key)
        if kind == b"stream":
            content: Any = [fields for _, fields in client.xrange(key)]
        elif kind == b"hash":
            content = client.hgetall(key)
        elif kind == b"set":
            content = sorted(client.smembers(key))
        elif kind == b"zset":
            content = client.zrange(key, 0, -1, withscores=True)
        elif kind == b"string":
            content = client.get(key)
        else:
            content = client.execute_command("JSON.GET", key)
        out[key[len(prefix):]] = (kind, _plain(content), client.pexpiretime(key))
    return out


Send = Callable[[StreamStore, ItemPut], Any]


def _lone(store: StreamStore, event: ItemPut) -> Any:
    return store._driver.redis.execute_command(*put_call(store.core.keyspace, event))


def _batched(store: StreamStore, event: ItemPut) -> Any:
    return store._driver.redis.execute_command(*append_batch_call(STORE, [event], store.core.keyspace, (VIEW,)))


def _pair(client: Any, prefix: str) -> tuple[StreamStore, StreamStore]:
    stores = (StreamStore(client, prefix=f"{prefix}l", index=INDEX),  # type: ignore[arg-type]
              StreamStore(client, prefix=f"{prefix}b", index=INDEX))  # type: ignore[arg-type]
    for store in stores:
        store.setup()
    return stores


def _both(stores: tuple[StreamStore, StreamStore], event: ItemPut) -> None:
    for store, send in zip(stores, (_lone, _batched), strict=True):
        send(store, event)


def _same(client: Any, stores: tuple[StreamStore, StreamStore]) -> None:
    lone, batched = (_state(client, store.core.prefix) for store in stores)
    assert lone == batched


def _scenario(client: Any, prefix: str) -> None:
    stores = _pair(client, prefix)
    keyspace = stores[0].core.keyspace
    log_id = keyspace.store_partition("users")
    now = time.time_ns() // 1000
    item = (log_id, ("users", "ada"), "k")
    [vector] = embed(["hello apple"])
    # A new item that expires, with its vector: the whole document, the registry, a deadline.
    _both(stores, ItemPut(*item, {"text": "hello apple", "n": 1}, now, 3_600_000, (tuple(vector),), "m"))
    _same(client, stores)
    # The same item again without a TTL nor vectors (index=False): its body only (created kept), PERSIST.
    _both(stores, ItemPut(*item, {"n": 2}, now + 1, 0))
    _same(client, stores)
    # Another item of the namespace, new without a TTL, with its own paths.
    _both(stores, ItemPut(log_id, ("users", "ada"), "j", {"text": "kiwi"}, now + 2, 0, (tuple(vector),), "m",
                          ("text",)))
    _same(client, stores)
    # The first item's document expired (its stem stays in the item set): written whole again.
    for store in stores:
        [doc] = [key for key in keys_of(client, store.core.prefix) if key.endswith(b":users.ada:k")]
        client.delete(doc)
    _both(stores, ItemPut(*item, {"n": 3}, now + 3, 60_000))
    _same(client, stores)
    # A log with a deadline: the keys the put writes without one of their own take it.
    deadline = now // 1000 + 7_200_000
    for store in stores:
        client.pexpireat(store.core.keyspace.store(log_id).log, deadline)
    _both(stores, ItemPut(log_id, ("users", "ada"), "j", {"text": "pear"}, now + 4, 0))
    _same(client, stores)
    # Every optional field of the entry: a kept deadline, a writer and a run (a re-embedding's shape).
    _both(stores, ItemPut(log_id, ("users", "ada"), "j", {"text": "pear"}, now + 5, 60_000, (tuple(vector),), "m",
                          None, deadline + 1, "agent", RunContext("t-1", "node:1", "r-1")))
    _same(client, stores)
    lone, batched = stores
    assert lone.get(("users", "ada"), "k") == batched.get(("users", "ada"), "k")
    assert lone.search(("users",), query="kiwi pear") == batched.search(("users",), query="kiwi pear")


def test_a_lone_put_writes_what_a_batch_of_it_writes(client: redis.Redis, prefix: str) -> None:
    _scenario(client, prefix)


def test_a_lone_put_writes_what_a_batch_of_it_writes_on_a_cluster(cluster_url: str, prefix: str) -> None:
    cluster = RedisCluster.from_url(cluster_url)
    try:
        _scenario(cluster, prefix)
    finally:
        cluster.close()


@pytest.mark.parametrize("damaged", ["items", "namespaces", "expiring", "doc"])
def test_a_lone_put_refuses_a_damaged_key_as_a_batch_does(client: redis.Redis, prefix: str, damaged: str) -> None:
    stores = _pair(client, prefix)
    log_id = stores[0].core.keyspace.store_partition("users")
    for store in stores:
        store.put(("users", "ada"), "k", {"n": 1}, ttl=10)
        keys = store.core.keyspace.store(log_id)
        key = keys.item("users.ada:k") if damaged == "doc" else getattr(keys, damaged)
        client.delete(key)
        client.set(key, "not this type")
    before = [_state(client, store.core.prefix) for store in stores]
    event = ItemPut(log_id, ("users", "ada"), "k", {"n": 2}, time.time_ns() // 1000, 0)
    errors = []
    for store, send in zip(stores, (_lone, _batched), strict=True):
        with pytest.raises(redis.ResponseError, match="WRONGTYPE") as refused:
            send(store, event)
        errors.append(str(refused.value).replace(store.core.prefix, "P"))
    assert errors[0] == errors[1]
    assert [_state(client, store.core.prefix) for store in stores] == before  # nothing written


def test_replay_rebuilds_what_lone_puts_wrote(client: redis.Redis, prefix: str) -> None:
    store = StreamStore(client, prefix=prefix, index=INDEX)  # type: ignore[arg-type]
    store.setup()
    store.put(("users", "ada"), "k", {"text": "apple"}, ttl=30)
    store.put(("users", "ada"), "k", {"text": "apple pie"})  # created_at kept, TTL dropped
    store.put(("users", "ada"), "j", {"text": "fig"}, ttl=30)
    store.put(("users", "bob"), "k", {"text": "kiwi"}, index=False)
    store.put(("users", "bob"), "j", {"text": "kiwi"}, index=["text"])
    written = _state(client, prefix)
    Replayer.open(client, prefix, domain=STORE).rebuild([VIEW])
    assert _state(client, prefix) == written
    assert [item.key for item in store.search(("users",), query="apple pie", limit=1)] == ["k"]
