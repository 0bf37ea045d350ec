"""The savers on a Redis Cluster of one primary (a managed cluster of one shard): setup indexes
that primary under its hash tag, and a listing across threads (more than a page, `before`,
`limit`, a filter) and `get_tuple` answer as on one server, sync and async, full and shallow."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import config, new_checkpoint
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.cluster import RedisCluster

from streamsaver import AsyncShallowStreamSaver, AsyncStreamSaver, ShallowStreamSaver, StreamSaver

THREADS = 120
"""More than a page (100) of checkpoints across threads."""


def _ids(tuples: Any) -> list[str]:
    return [t.config["configurable"]["checkpoint_id"] for t in tuples]


@pytest.mark.parametrize("kind", [StreamSaver, ShallowStreamSaver])
def test_a_saver_on_one_primary_lists_and_reads_as_one_server(
        one_primary_cluster_url: str, prefix: str, kind: type[StreamSaver]) -> None:
    client = RedisCluster.from_url(one_primary_cluster_url)
    saver = kind(client, prefix=prefix)
    saver.setup()
    assert saver.core.topology is not None and len(saver.core.topology.shards) == 1
    ids = []
    for i in range(THREADS):
        checkpoint, versions = new_checkpoint({"i": i})
        saved = saver.put(config(f"t{i}"), checkpoint, {"even": i % 2 == 0}, versions)
        ids.append(saved["configurable"]["checkpoint_id"])
    newest_first = ids[::-1]
    assert _ids(saver.list(None)) == newest_first
    assert _ids(saver.list(None, limit=7)) == newest_first[:7]
    assert _ids(saver.list(None, before=config("x", None, newest_first[10]), limit=105)) == newest_first[11:116]
    assert _ids(saver.list(None, filter={"even": True})) == [cid for n, cid in enumerate(ids) if n % 2 == 0][::-1]
    got = saver.get_tuple(config("t5"))
    assert got is not None and got.checkpoint["channel_values"] == {"i": 5}
    client.close()


@pytest.mark.parametrize("kind", [AsyncStreamSaver, AsyncShallowStreamSaver])
async def test_an_async_saver_on_one_primary_lists_and_reads_as_one_server(
        one_primary_cluster_url: str, prefix: str, kind: type[AsyncStreamSaver]) -> None:
    client = AsyncRedisCluster.from_url(one_primary_cluster_url)
    saver = kind(client, prefix=prefix)
    await saver.setup()
    ids = []
    for i in range(THREADS):
        checkpoint, versions = new_checkpoint({"i": i})
        saved = await saver.aput(config(f"t{i}"), checkpoint, {"even": i % 2 == 0}, versions)
        ids.append(saved["configurable"]["checkpoint_id"])
    assert [t.config["configurable"]["checkpoint_id"] async for t in saver.alist(None)] == ids[::-1]
    evens = [t.config["configurable"]["checkpoint_id"] async for t in saver.alist(None, filter={"even": True}, limit=9)]
    assert evens == [cid for n, cid in enumerate(ids) if n % 2 == 0][::-1][:9]
    got = await saver.aget_tuple(config("t7"))
    assert got is not None and got.checkpoint["channel_values"] == {"i": 7}
    await client.aclose()
