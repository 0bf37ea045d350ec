"""A Redis Cluster that grows under a running client: the harness of the tests where a fourth
primary joins (``CLUSTER MEET``) and takes slots holding data, moved by Redis's own resharding
steps (``CLUSTER SETSLOT ... IMPORTING / MIGRATING``, ``MIGRATE`` of the slot's keys, then
``SETSLOT ... NODE`` on every node), as ``redis-cli --cluster reshard`` does
(tests/store/test_store_slot_moves.py, tests/integration/test_joined_primary.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import redis

from streamsaver.server.cluster import SLOTS, EmbeddedCluster
from streamsaver.server.embedded import EmbeddedRedis


def _ok(port: int, nodes: int) -> bool:
    with redis.Redis(port=port) as client:
        info = bytes(client.execute_command("CLUSTER", "INFO"))
    return b"cluster_state:ok" in info and f"cluster_known_nodes:{nodes}".encode() in info


@contextmanager
def grown_cluster() -> Iterator[tuple[EmbeddedCluster, EmbeddedRedis]]:
    """A cluster of three primaries of its own, and a fourth node that has joined it without slots.

    The four meet while the three form: a node reports ``cluster_state:ok`` no sooner than
    ``cluster-node-timeout`` (2 s) after it last saw too few primaries (Redis's rejoin delay), so
    the fourth node joining a formed cluster would wait those 2 s again."""
    cluster, extra = EmbeddedCluster(3), EmbeddedRedis(cluster=True)
    try:
        for node in [*cluster.nodes, extra]:
            node.start()
        share = SLOTS // len(cluster.nodes)
        for n, node in enumerate(cluster.nodes):
            last = SLOTS - 1 if n == len(cluster.nodes) - 1 else (n + 1) * share - 1
            with redis.Redis(port=node.port) as client:
                client.execute_command("CLUSTER", "ADDSLOTSRANGE", n * share, last)
        with redis.Redis(port=extra.port) as client:
            for node, bus in zip(cluster.nodes, cluster.bus_ports, strict=True):
                client.execute_command("CLUSTER", "MEET", "127.0.0.1", node.port, bus)
        deadline = time.monotonic() + 30
        while not all(_ok(port, 4) for port in [extra.port, *(node.port for node in cluster.nodes)]):
            assert time.monotonic() < deadline, "the four nodes did not form a cluster"
            time.sleep(0.05)  # the cluster bus gossips on its own schedule
        yield cluster, extra
    finally:
        cluster.stop()
        extra.stop()


def move(cluster: EmbeddedCluster, slot: int, to: EmbeddedRedis) -> None:
    """Give `slot` with its keys to `to` (the fourth node, or a primary of `cluster`), as
    ``redis-cli --cluster reshard`` does."""
    nodes = {port: redis.Redis(port=port) for port in [to.port, *(node.port for node in cluster.nodes)]}
    try:
        ids = {port: client.execute_command("CLUSTER", "MYID").decode() for port, client in nodes.items()}
        slots = nodes[to.port].execute_command("CLUSTER", "SLOTS")
        source = next(int(primary[1]) for start, end, primary, *_ in slots if start <= slot <= end)
        nodes[to.port].execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", ids[source])
        nodes[source].execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", ids[to.port])
        while keys := nodes[source].execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100):
            nodes[source].execute_command("MIGRATE", "127.0.0.1", to.port, "", 0, 5000, "KEYS", *keys)
        for client in nodes.values():
            client.execute_command("CLUSTER", "SETSLOT", slot, "NODE", ids[to.port])
    finally:
        for client in nodes.values():
            client.close()
