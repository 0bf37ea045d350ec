"""Erasure: after `delete_thread`, nothing of the thread is left in Redis. A scan of the whole
keyspace finds no key of the thread, no copy of its values anywhere (log, views, feed), no
index entry; the partition feed keeps only payload-free pointers and the `ThreadDeleted`
tombstone that tells subscribers."""

from __future__ import annotations

import uuid
from typing import Any

import redis
from delta_graphs import Journal, diary
from graph_harness import Harness, harness_fixture, kind_fixture, thread, view_fixture  # noqa: F401
from helpers import snapshot

from streamsaver import AsyncStreamSaver
from streamsaver.log.codec import escape, tag
from streamsaver.log.keys import Keyspace

POINTER_FIELDS = {b"id", b"type", b"thread", b"ns", b"cid"}


def indexed(client: redis.Redis, prefix: str, thread_id: str) -> int:
    """How many documents of `thread_id` the two views' indexes hold."""
    total = 0
    for view in ("full", "shallow"):
        found = client.execute_command(
            "FT.SEARCH", Keyspace(prefix).index(view), f"@th:{{{tag(thread_id)}}}", "LIMIT", 0, 0
        )
        total += int(found[0] if isinstance(found, list) else found.get(b"total_results", found.get("total_results")))
    return total


async def delete(saver: Any, thread_id: str) -> None:
    if isinstance(saver, AsyncStreamSaver):
        await saver.adelete_thread(thread_id)
    else:
        saver.delete_thread(thread_id)


async def test_a_deleted_thread_leaves_nothing_in_the_keyspace(h: Harness, client: redis.Redis, prefix: str) -> None:
    secret = f"secret-{uuid.uuid4().hex}"
    name = f"doomed {{thread}}:{uuid.uuid4().hex[:6]}"
    client.hset(Keyspace(prefix).meta, "views", "full,shallow")  # both views hold the thread, then neither
    driver = await h.driver(lambda: diary(5, Journal))
    await driver.invoke({"entries": [secret], "notes": [secret], "steps": 0}, thread(name))
    await driver.update(thread(name), {"notes": [secret + "-edit"]}, as_node="left")
    if isinstance(driver.saver, AsyncStreamSaver):
        await driver.saver.aprune([name])
    else:
        driver.saver.prune([name])  # type: ignore[attr-defined]
    await driver.invoke({"entries": ["x"], "notes": [], "steps": 0}, thread("survivor"))
    assert secret in repr(snapshot(client, prefix)) and indexed(client, prefix, name) > 0

    await delete(driver.saver, name)

    everything = snapshot(client, prefix)
    assert secret not in repr(everything)
    assert not [k for k in everything if escape(name).encode() in k]
    feeds = [k for k, (kind, _) in everything.items() if kind == "stream" and b":feed:" in k]
    mine = [f for k in feeds for _, f in client.xrange(k) if f[b"thread"] == name.encode()]
    assert mine and all(set(f) <= POINTER_FIELDS for f in mine)
    assert mine[-1][b"type"] == b"ThreadDeleted"
    assert indexed(client, prefix, name) == 0
    assert await driver.checkpoints(thread("survivor"))
