"""A slot migration under write load (Redis Cluster's own resharding steps: ``CLUSTER SETSLOT
IMPORTING / MIGRATING``, then ``MIGRATE`` of the slot's keys, without ``REPLACE``, batch by
batch) completes with no key on both nodes and nothing lost.

Every script call declares every key it writes (`streamsaver.log.append`), so while the slot
migrates Redis runs a call only where all its keys are, and asks the client to try again
(``TRYAGAIN``, ``ASK``) otherwise. Before, the append declared only the log, the feed and the
positions: with those still on the old node it ran there and re-created view keys (and the feed)
that had already moved, and the next ``MIGRATE`` of them failed with ``BUSYKEY``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
import redis
from helpers import cluster_of_three, config, new_checkpoint
from redis.cluster import RedisCluster
from redis.crc import key_slot
from redis.exceptions import TryAgainError

from streamsaver import StreamSaver
from streamsaver.server.cluster import EmbeddedCluster

T = TypeVar("T")
WRITERS = 3
BEFORE, AFTER = 6, 4
"""Checkpoints each writer has acknowledged before the migration starts, and more after it ends."""


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with cluster_of_three() as made:
        yield made


class Writer(threading.Thread):
    """Puts checkpoints (each with a write) on one thread until stopped; a call Redis asks to try
    again (the slot is migrating) is sent again, after a pause."""

    def __init__(self, url: str, prefix: str, thread_id: str) -> None:
        super().__init__(daemon=True)
        self.client = RedisCluster.from_url(url)
        self.saver = StreamSaver(self.client, prefix=prefix, partitions=1)
        self.thread_id = thread_id
        self.acked: list[str] = []
        self.retries = 0
        self.failure: BaseException | None = None
        self.stop = threading.Event()
        self.progress = threading.Condition()

    def wait_for(self, count: int) -> None:
        """Block until `count` more checkpoints than now are acknowledged."""
        with self.progress:
            target = len(self.acked) + count
            reached = self.progress.wait_for(lambda: len(self.acked) >= target or self.failure is not None, 120)
        assert reached and self.failure is None, f"{self.thread_id} made no progress ({self.failure!r})"

    def _again(self, call: Callable[..., T], *args: Any) -> T:
        while True:
            try:
                return call(*args)
            except TryAgainError:
                self.retries += 1
                time.sleep(0.01)  # back off while the slot moves

    def run(self) -> None:
        previous, parent = None, config(self.thread_id)
        try:
            while not self.stop.is_set():
                step = len(self.acked)
                checkpoint, versions = new_checkpoint({"step": step, "log": [step]}, previous)
                saved: Any = self._again(self.saver.put, parent, checkpoint, {"step": step}, versions)
                self._again(self.saver.put_writes, saved, [("step", step + 1)], f"task-{step}")
                with self.progress:
                    self.acked.append(saved["configurable"]["checkpoint_id"])
                    self.progress.notify_all()
                previous, parent = checkpoint, saved
        except BaseException as exc:  # noqa: BLE001 -- handed to the test, which fails with it
            with self.progress:
                self.failure = exc
                self.progress.notify_all()


def migrate(cluster: EmbeddedCluster, slot: int) -> list[str]:
    """Move `slot` to another primary as ``redis-cli --cluster reshard`` does; the errors of the
    MIGRATE calls (none expected)."""
    nodes = {node.port: redis.Redis(port=node.port) for node in cluster.nodes}
    try:
        ids = {port: client.execute_command("CLUSTER", "MYID").decode() for port, client in nodes.items()}
        source = next(port for port, node in nodes.items() if node.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot))
        target = next(port for port in nodes if port != source)
        nodes[target].execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", ids[source])
        nodes[source].execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", ids[target])
        errors = []
        while keys := nodes[source].execute_command("CLUSTER", "GETKEYSINSLOT", slot, 5):
            try:
                nodes[source].execute_command("MIGRATE", "127.0.0.1", target, "", 0, 5000, "KEYS", *keys)
            except redis.ResponseError as exc:
                errors.append(str(exc))
                if len(errors) > 20:
                    break
        for port in sorted(nodes, key=lambda p: (p != target, p != source)):
            nodes[port].execute_command("CLUSTER", "SETSLOT", slot, "NODE", ids[target])
        return errors
    finally:
        for client in nodes.values():
            client.close()


def test_a_slot_migrates_under_write_load_with_no_key_on_both_nodes_and_nothing_lost(
    cluster: EmbeddedCluster, prefix: str
) -> None:
    StreamSaver(RedisCluster.from_url(cluster.url), prefix=prefix, partitions=1).setup()  # one slot: {p0}
    writers = [Writer(cluster.url, prefix, f"worker-{n}") for n in range(WRITERS)]
    for writer in writers:
        writer.start()
    try:
        for writer in writers:
            writer.wait_for(BEFORE)
        errors = migrate(cluster, key_slot(b"p0"))
        for writer in writers:
            writer.wait_for(AFTER)  # the writers go on, on the new owner
    finally:
        for writer in writers:
            writer.stop.set()
        for writer in writers:
            writer.join(60)

    assert errors == []  # no BUSYKEY: nothing was re-created on the old node
    assert [w.failure for w in writers] == [None] * WRITERS
    counts = {}
    for node in cluster.nodes:
        with redis.Redis(port=node.port) as client:
            counts[node.port] = int(client.execute_command("CLUSTER", "COUNTKEYSINSLOT", key_slot(b"p0")))
    assert sorted(counts.values())[:-1] == [0, 0]  # every key of the slot on one node, none on two
    reader = StreamSaver(RedisCluster.from_url(cluster.url), prefix=prefix)
    for writer in writers:
        listed = list(reader.list(config(writer.thread_id)))
        assert [t.checkpoint["id"] for t in listed] == writer.acked[::-1]
        for n, found in enumerate(reversed(listed)):
            assert found.checkpoint["channel_values"]["step"] == n
            assert [w[2] for w in found.pending_writes or []] == [n + 1]
    for writer in writers:
        writer.client.close()
