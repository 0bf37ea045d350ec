"""Replay keeps item deadlines: a rebuilt item expires when its put made it expire, and an item
whose deadline has passed is not made again."""

from __future__ import annotations

import time

import redis

from projectors.store_domain import STORE
from streamsaver import StreamStore
from streamsaver.log.keys import item_stem
from streamsaver.ops.replay import Replayer


def _gone(client: redis.Redis, key: bytes, within_s: float = 5.0) -> bool:
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        if not client.exists(key):
            return True
        time.sleep(0.02)
    return False


def test_replay_neither_resurrects_expired_items_nor_restarts_ttls(redis_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(redis_url)
    store = StreamStore(client, prefix=prefix)
    store.setup()
    store.put(("t",), "short", {"v": 1}, ttl=0.002)  # 120 ms
    store.put(("t",), "long", {"v": 2}, ttl=10)
    store.put(("t",), "forever", {"v": 3})
    keys = store.core.keyspace.store(store.core.keyspace.store_partition("t"))
    docs = {name.encode(): keys.item(item_stem(("t",), name)).encode() for name in ("short", "long", "forever")}
    deadline = client.pexpiretime(docs[b"long"])
    assert deadline > 0 and client.pexpiretime(docs[b"forever"]) == -1
    assert _gone(client, docs[b"short"])
    Replayer.open(client, prefix, domain=STORE).rebuild(["items"])
    assert store.get(("t",), "short", refresh_ttl=False) is None
    assert not client.exists(docs[b"short"])
    assert client.pexpiretime(docs[b"long"]) == deadline
    assert client.pexpiretime(docs[b"forever"]) == -1
    assert [item.key for item in store.search(("t",))] == ["forever", "long"]
