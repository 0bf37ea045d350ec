"""A call that spans primaries of a Redis Cluster where one primary lost its scripts (``SCRIPT
FLUSH``, a restart, a failover to a replica that never loaded them): the scripts on the other
primaries ran, those on that one answered ``NOSCRIPT`` and ran nothing. The driver loads the
scripts again and sends again only the steps that did not run, so every event is logged once
(the log is the source of truth and the audit feed: a write sent twice would be logged twice)."""

from __future__ import annotations

from typing import Any

import pytest
import redis
import redis.asyncio
from langgraph.store.base import PutOp
from redis.cluster import RedisCluster

from streamsaver import AsyncStreamStore, StreamStore
from streamsaver.log.keys import Keyspace

USERS = [f"user{n}" for n in range(12)]  # first labels spread over the partitions, so over the primaries


def _ops(tag: str) -> list[PutOp]:
    return [PutOp((user, "facts"), f"{tag}{n}", {"n": n}) for user in USERS for n in range(3)]


def _logged(client: RedisCluster, keyspace: Keyspace) -> list[tuple[str, str]]:
    """(partition, event id) of every entry of every store partition log."""
    partitions = {keyspace.store_partition(user) for user in USERS}
    return sorted((log_id, entry_id.decode()) for log_id in partitions
                  for entry_id, _ in client.xrange(keyspace.store(log_id).log))


def _flush_the_primary_of(client: RedisCluster, key: str) -> None:
    client.get_node_from_key(key).redis_connection.script_flush()


def _primaries_written(client: RedisCluster, keyspace: Keyspace) -> int:
    return len({client.get_node_from_key(keyspace.store(keyspace.store_partition(u)).log).name for u in USERS})


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_batch_across_primaries_after_one_lost_its_scripts_logs_every_event_once(
        cluster_url: str, prefix: str, kind: str) -> None:
    client, aclient = RedisCluster.from_url(cluster_url), redis.asyncio.RedisCluster.from_url(cluster_url)
    store: Any = (StreamStore(client, prefix=prefix) if kind == "sync"  # type: ignore[arg-type]
                  else AsyncStreamStore(aclient, prefix=prefix))  # type: ignore[arg-type]
    await store.setup() if kind == "async" else store.setup()
    keyspace = store.core.keyspace
    assert _primaries_written(client, keyspace) == 3
    await store.abatch(_ops("a")) if kind == "async" else store.batch(_ops("a"))
    before = len(_logged(client, keyspace))
    _flush_the_primary_of(client, keyspace.store(keyspace.store_partition("user0")).log)

    await store.abatch(_ops("b")) if kind == "async" else store.batch(_ops("b"))
    # one ItemPut per put, whatever primary it went to: none sent twice
    assert len(_logged(client, keyspace)) - before == len(_ops("b"))
    for user in USERS:
        found = await store.aget((user, "facts"), "b2") if kind == "async" else store.get((user, "facts"), "b2")
        assert found is not None and found.value == {"n": 2}
    await aclient.aclose()
    client.close()
