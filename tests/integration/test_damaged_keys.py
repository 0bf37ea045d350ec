"""All or nothing, also against damaged keys: an append checks the type of every key it will
write (the thread's log, feed and positions, and every view key its projections name) before its
first write. A key of another type in the way refuses the call with `WrongKeyTypeError`, naming
the key, and nothing is written: no log entry, no feed pointer, no view key.
"""

from __future__ import annotations

import pytest
import redis
from helpers import config, keys_of, new_checkpoint

from streamsaver import StreamSaver
from streamsaver.errors import WrongKeyTypeError

THREAD = "clash"


def snapshot(client: redis.Redis, prefix: str) -> dict[bytes, bytes | None]:
    return {key: client.dump(key) for key in keys_of(client, prefix)}


def thread_keys(client: redis.Redis, prefix: str) -> dict[bytes, str]:
    """The keys of the thread (not the partition feed, which other threads share), with their types."""
    return {
        key: client.type(key).decode()
        for key in keys_of(client, prefix)
        if THREAD.encode() in key and b":feed:" not in key
    }


CHECKPOINT, VERSIONS = new_checkpoint({"messages": ["a"], "n": 1})
BOTH = ("full", "shallow")
"""The deployment keeps both views inline, so that every kind of view key is planted."""


def view_keys_of_a_put(client: redis.Redis, prefix: str) -> list[tuple[bytes, str]]:
    """Every key a put of `CHECKPOINT` writes, found by making the put once and deleting the
    thread's keys again."""
    StreamSaver(client, prefix=prefix, projections=BOTH).put(config(THREAD), CHECKPOINT, {"step": 1}, VERSIONS)
    found = thread_keys(client, prefix)
    client.delete(*found)
    return sorted(found.items())


def test_the_puts_keys_are_the_views_keys(client: redis.Redis, prefix: str) -> None:
    kinds = {kind for _, kind in view_keys_of_a_put(client, prefix)}
    assert kinds == {"stream", "hash", "set", "zset", "ReJSON-RL"}


@pytest.mark.parametrize(
    ("kind", "full_view"),
    [("ReJSON-RL", True), ("hash", True), ("set", True), ("zset", True),
     ("ReJSON-RL", False), ("hash", False), ("set", False)],
)
def test_a_view_key_of_another_type_refuses_the_put_and_writes_nothing(
    client: redis.Redis, prefix: str, kind: str, full_view: bool
) -> None:
    planted = 0
    for key, its_kind in view_keys_of_a_put(client, prefix):
        if its_kind != kind or (b":full:" in key) != full_view:
            continue
        client.set(key, "not a view key")
        before = snapshot(client, prefix)
        saver = StreamSaver(client, prefix=prefix, projections=BOTH)
        with pytest.raises(WrongKeyTypeError, match=f"{key.decode()} holds a string, not a {kind}"):
            saver.put(config(THREAD), CHECKPOINT, {"step": 1}, VERSIONS)
        assert snapshot(client, prefix) == before  # the log entry and the feed pointer too
        client.delete(key)
        planted += 1
    assert planted >= 1


def test_a_writes_key_of_another_type_refuses_put_writes_and_writes_nothing(client: redis.Redis, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix, projections=BOTH)
    checkpoint, versions = new_checkpoint({"n": 1})
    saved = saver.put(config(THREAD), checkpoint, {"step": 1}, versions)
    before_writes = set(thread_keys(client, prefix))
    saver.put_writes(saved, [("n", 2)], "probe")
    writes_keys = set(thread_keys(client, prefix)) - before_writes
    assert writes_keys
    client.delete(*writes_keys)
    client.sadd(sorted(writes_keys)[0], "a set, not a hash")
    before = snapshot(client, prefix)

    with pytest.raises(WrongKeyTypeError, match="not a hash"):
        saver.put_writes(saved, [("n", 3)], "task")
    assert snapshot(client, prefix) == before


def test_a_store_item_key_of_another_type_refuses_the_whole_batch(client: redis.Redis, prefix: str) -> None:
    """append_batch.lua (the store's writes) checks its keys the same way: nothing of the batch lands."""
    from streamsaver import StreamStore

    store = StreamStore(client, prefix=prefix)
    store.put(("users", "ada"), "profile", {"name": "Ada"})
    [item] = [key for key in keys_of(client, prefix) if b":items:" in key and key.endswith(b"profile")]
    client.delete(item)
    client.set(item, "not an item")
    before = snapshot(client, prefix)

    with pytest.raises(redis.ResponseError, match="holds a string, not a ReJSON-RL"):
        store.put(("users", "ada"), "profile", {"name": "Ada L."})
    assert snapshot(client, prefix) == before
