"""The groundwork for Redis Cluster: a local cluster of three embedded primaries forms, every node
has the search and JSON modules, a deployment's keys of different partitions spread over the
shards, and a RediSearch index covers only its own node's keys (so a cross-thread query must
fan out to every primary) and must be named with a hash tag of a slot its node owns. The savers
on a cluster: tests/integration/test_savers_on_a_cluster.py and the contract suite."""

from __future__ import annotations

import uuid

import pytest
import redis
from redis.cluster import RedisCluster
from redis.commands.search.query import Query
from redis.exceptions import MovedError

from streamsaver.log.keys import Keyspace
from streamsaver.server.cluster import EmbeddedCluster

pytestmark = pytest.mark.slow


@pytest.fixture
def cluster(embedded_cluster: EmbeddedCluster) -> EmbeddedCluster:
    return embedded_cluster


def test_three_primaries_form_a_cluster_with_the_modules(cluster: EmbeddedCluster) -> None:
    client = RedisCluster.from_url(cluster.url)
    try:
        primaries = client.get_primaries()
        assert len(primaries) == 3
        slots = client.execute_command("CLUSTER", "SLOTS", target_nodes=RedisCluster.RANDOM)
        assert sum(int(end) - int(start) + 1 for start, end, *_ in slots) == 16384
        for node in cluster.nodes:
            names = {m[b"name"] for m in redis.Redis(port=node.port).module_list()}
            assert {b"search", b"ReJSON"} <= names
    finally:
        client.close()


def _index_on(node: redis.Redis, keyspace: Keyspace) -> str:
    """Create an index on `node` over ``P:doc:``; its name needs a hash tag of a slot the node
    owns (in cluster mode RediSearch answers MOVED for an index name of another node's slot)."""
    for partition in range(keyspace.partitions):
        name = f"{keyspace.prefix}:idx:{keyspace.slot_tag(partition)}"
        try:
            node.execute_command("FT.CREATE", name, "ON", "JSON", "PREFIX", 1, f"{keyspace.prefix}:doc:",
                                 "SCHEMA", "$.n", "AS", "n", "NUMERIC")
        except MovedError:
            continue
        return name
    raise AssertionError("no partition tag hashes to this node")


def test_partitions_spread_and_an_index_covers_only_its_nodes_keys(cluster: EmbeddedCluster) -> None:
    keyspace = Keyspace(f"cl{uuid.uuid4().hex[:8]}", 16)
    client = RedisCluster.from_url(cluster.url)
    nodes = [redis.Redis(port=node.port) for node in cluster.nodes]
    try:
        names = [_index_on(node, keyspace) for node in nodes]
        for partition in range(keyspace.partitions):
            client.execute_command(
                "JSON.SET", f"{keyspace.prefix}:doc:{keyspace.slot_tag(partition)}", "$", f'{{"n": {partition}}}'
            )
        held = [len(list(node.scan_iter(match=f"{keyspace.prefix}:doc:*"))) for node in nodes]
        indexed = [node.ft(name).search(Query("*").paging(0, 0)).total for node, name in zip(nodes, names, strict=True)]
        assert sum(held) == keyspace.partitions and all(held), held
        assert indexed == held
    finally:
        client.close()
        for node in nodes:
            node.close()
