"""What the local cache on Redis Cluster relies on from Redis itself (docs/store.md "The local
cache on Redis Cluster"), checked on the embedded server: a primary that loses a slot to a newer
claim deletes the keys it still held there and invalidates them to BCAST trackers; a replica
(a primary demoted in a failover) invalidates the writes it applies from its primary. (The
deletion by ``MIGRATE`` is in tests/store/test_store_local_cache_cluster.py.)"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import redis
from helpers import cluster_of_three

from streamsaver.log.routing import key_slot
from streamsaver.server.embedded import EmbeddedRedis

PREFIX = b"P:items:doc:"
WAIT_S = 20.0


def _tracking(port: int) -> redis.Connection:
    connection = redis.Connection(port=port, protocol=2)
    connection.send_command("CLIENT", "ID")
    own = connection.read_response()
    connection.send_command("CLIENT", "TRACKING", "ON", "REDIRECT", own, "BCAST", "PREFIX", PREFIX)
    connection.send_command("SUBSCRIBE", "__redis__:invalidate")
    assert connection.read_response() == b"OK"
    connection.read_response()
    return connection


def _invalidations(connection: redis.Connection) -> Iterator[Any]:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if connection.can_read(timeout=0.5):
            yield connection.read_response()


def test_a_primary_losing_a_slot_it_still_holds_keys_of_invalidates_them() -> None:
    key = PREFIX + b"x"
    with cluster_of_three() as cluster:
        clients = {node.port: redis.Redis(port=node.port) for node in cluster.nodes}
        slots = next(iter(clients.values())).execute_command("CLUSTER", "SLOTS")
        owner = next(int(primary[1]) for start, end, primary, *_ in slots if start <= key_slot(key) <= end)
        other = clients[next(port for port in clients if port != owner)]
        clients[owner].set(key, b"1")
        tracking = _tracking(owner)
        other.execute_command("CLUSTER", "SETSLOT", key_slot(key), "NODE", other.execute_command("CLUSTER", "MYID"))
        other.execute_command("CLUSTER", "BUMPEPOCH")  # its claim now wins on the owner too
        assert next(_invalidations(tracking), None) == [b"message", b"__redis__:invalidate", [key]]
        assert clients[owner].dbsize() == 0
        tracking.disconnect()
        for client in clients.values():
            client.close()


def test_a_replica_invalidates_the_writes_it_applies() -> None:
    key = PREFIX + b"x"
    # No wait for more replicas before the first sync (5 s by default): there is only one.
    with EmbeddedRedis(extra_args=["--repl-diskless-sync-delay", "0"]) as primary, EmbeddedRedis() as replica, \
            redis.Redis(port=primary.port) as writer, redis.Redis(port=replica.port) as follower:
        writer.set(key, b"1")
        follower.execute_command("REPLICAOF", "127.0.0.1", primary.port)
        deadline = time.monotonic() + WAIT_S
        while follower.get(key) != b"1":
            assert time.monotonic() < deadline, "the replica never synced"
            time.sleep(0.05)  # replication has no event to wait on from here
        tracking = _tracking(replica.port)
        writer.set(key, b"2")
        assert next(_invalidations(tracking), None) == [b"message", b"__redis__:invalidate", [key]]
        tracking.disconnect()
