"""A local Redis Cluster of embedded servers (each with the search and JSON modules), for tests.

Starts `primaries` `EmbeddedRedis` servers in cluster mode, gives each an equal range of the
16384 slots, introduces them to each other (``CLUSTER MEET``) and waits until every node reports
``cluster_state:ok`` and knows every other. No replicas.

    with EmbeddedCluster(3) as cluster:
        client = redis.cluster.RedisCluster.from_url(cluster.url)

The savers run on it as on any cluster (see docs/reliability.md, "Redis Cluster"); the test
suite starts one per session.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import TYPE_CHECKING, Any

import redis

from streamsaver.errors import EmbeddedServerError
from streamsaver.server.embedded import EmbeddedRedis

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["EmbeddedCluster"]

SLOTS = 16384


def _info(client: redis.Redis) -> str:
    command: Callable[..., Any] = client.execute_command
    return bytes(command("CLUSTER", "INFO")).decode()


class EmbeddedCluster:
    """`primaries` embedded servers formed into one cluster, owned by this object.

    Args:
        primaries: how many primaries (each gets an equal share of the slots).
        startup_timeout: seconds to wait for the cluster to form.
        extra_args: more ``redis-server`` arguments for every node (as `EmbeddedRedis`'s).
    """

    def __init__(
        self, primaries: int = 3, *, startup_timeout: float = 30.0, extra_args: Sequence[str] = ()
    ) -> None:
        if primaries < 1:
            raise EmbeddedServerError(f"a cluster needs at least one primary, not {primaries}")
        self.startup_timeout = startup_timeout
        self.nodes = [EmbeddedRedis(cluster=True, extra_args=list(extra_args)) for _ in range(primaries)]

    @property
    def bus_ports(self) -> list[int]:
        """The cluster bus port of each node (known once it started)."""
        return [node.bus_port for node in self.nodes if node.bus_port is not None]

    @property
    def url(self) -> str:
        """The ``redis://`` URL of the first node (a cluster client discovers the others)."""
        return self.nodes[0].url

    def start(self) -> Self:
        """Start every node and form the cluster.

        Raises:
            EmbeddedServerError: a node did not start, or the cluster did not form in time.
        """
        try:
            for node in self.nodes:
                node.start()
            self._form()
        except BaseException:
            self.stop()
            raise
        return self

    def _form(self) -> None:
        clients = [redis.Redis(port=node.port) for node in self.nodes]
        try:
            share = SLOTS // len(clients)
            for n, client in enumerate(clients):
                last = SLOTS - 1 if n == len(clients) - 1 else (n + 1) * share - 1
                command: Callable[..., Any] = client.execute_command
                command("CLUSTER", "ADDSLOTSRANGE", n * share, last)
                if n:
                    command("CLUSTER", "MEET", "127.0.0.1", self.nodes[0].port, self.bus_ports[0])
            self._wait_formed(clients)
        finally:
            for client in clients:
                client.close()

    def _wait_formed(self, clients: list[redis.Redis]) -> None:
        deadline = time.monotonic() + self.startup_timeout
        known = f"cluster_known_nodes:{len(clients)}"
        while True:
            infos = [_info(client) for client in clients]
            if all("cluster_state:ok" in info and known in info for info in infos):
                return
            if time.monotonic() > deadline:
                raise EmbeddedServerError(f"the cluster did not form in {self.startup_timeout}s")
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop every node (in parallel: a node takes seconds to shut down)."""
        with ThreadPoolExecutor(max_workers=len(self.nodes)) as pool:
            list(pool.map(EmbeddedRedis.stop, self.nodes))

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
