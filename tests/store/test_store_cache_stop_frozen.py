"""Closing a store with a local cache on Redis Cluster ends its supervisor at once, even while the
supervisor waits on a node that does not answer (every node frozen with SIGSTOP): `stop` shuts
the control connection's socket, as each listener's, rather than leaving the supervisor to its
socket timeout (5 s a node, node after node)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator

import pytest
from helpers import cluster_of_three
from redis.cluster import RedisCluster

from streamsaver import StreamStore
from streamsaver.memory.cluster_invalidations import ClusterInvalidations
from streamsaver.server.cluster import EmbeddedCluster
from tests.store.test_store_local_cache import WAIT_S


def _reading_the_slot_map(thread: threading.Thread) -> bool:
    """Whether `thread` waits in a socket read of ``CLUSTER SLOTS`` (its stack, as Python has it)."""
    frame, names = sys._current_frames().get(thread.ident or 0), set()
    while frame is not None:
        names.add(frame.f_code.co_name)
        frame = frame.f_back
    return {"_read_slot_map", "read_response"} <= names


@pytest.fixture
def frozen_later() -> Iterator[EmbeddedCluster]:
    """A cluster of its own, every node resumed after the test whatever happened."""
    with cluster_of_three() as cluster:
        try:
            yield cluster
        finally:
            for node in cluster.nodes:
                assert node.process is not None
                os.kill(node.process.pid, signal.SIGCONT)


def test_stop_ends_the_supervisor_waiting_on_a_frozen_node(frozen_later: EmbeddedCluster, prefix: str) -> None:
    client = RedisCluster.from_url(frozen_later.url)
    StreamStore(client, prefix=prefix).setup()
    store = StreamStore(client, prefix=prefix, local_cache=10)
    supervisor = store.cache_listener
    assert isinstance(supervisor, ClusterInvalidations)
    cache = store.core.cache
    assert cache is not None and cache.wait_for(lambda: cache.live, WAIT_S), "the cache never went live"
    for node in frozen_later.nodes:
        assert node.process is not None
        os.kill(node.process.pid, signal.SIGSTOP)
    supervisor.recheck()  # its next read of the slot map meets a node that does not answer
    deadline = time.monotonic() + WAIT_S
    while not _reading_the_slot_map(supervisor._thread):
        assert time.monotonic() < deadline, "the supervisor never read the slot map"
        time.sleep(0.001)  # polls the thread's state (no event to wait on from outside)
    supervisor.stop(timeout=3.0)
    assert not supervisor._thread.is_alive(), "the supervisor outlived stop, waiting on a frozen node"
    assert supervisor.listeners == {}
