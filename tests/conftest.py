"""Fixtures: one real Redis 8 (search + JSON) for the session, a fresh key prefix per test.

The server is, in order: ``REDIS_URL`` if set; a ``redis:8`` container via testcontainers when
``STREAMSAVER_TEST_SERVER=docker``; otherwise the embedded server (``streamsaver[embedded]``).
Tests share the server: each one owns a unique key prefix. Between test modules, the servers the
session started itself (never a ``REDIS_URL`` one) are flushed: every ``FT.CREATE`` scans the whole
keyspace in the background, one index after another, so a server holding every earlier module's
keys and indexes made the scans queue up for minutes and the suite's setups wait on them.
Under pytest-xdist (``-n 2 --dist loadfile``, the README's command) each worker process starts
servers of its own, and runs a file's tests in order.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import pytest
import redis
import redis.asyncio
import redis.cluster
from helpers import CLUSTER_URLS, async_client, cluster_of, cluster_of_three, sync_client

from streamsaver import AsyncStreamSaver, StreamSaver

if TYPE_CHECKING:
    from streamsaver.server.cluster import EmbeddedCluster


OWN_SERVERS: set[str] = set()
"""URLs of the single servers the session started (flushed between modules)."""


@pytest.fixture(scope="module", autouse=True)
def _servers_flushed_after_each_module() -> Iterator[None]:
    """Flush the session's own servers and clusters once a module is done (its module-scoped
    fixtures torn down first: an autouse fixture is set up first, so torn down last)."""
    yield
    for url in OWN_SERVERS:
        with redis.Redis.from_url(url) as own:
            own.flushall()
    for url in CLUSTER_URLS:
        with redis.cluster.RedisCluster.from_url(url) as own:
            own.flushall(target_nodes=redis.cluster.RedisCluster.PRIMARIES)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    if url := os.environ.get("REDIS_URL"):
        yield url
    elif os.environ.get("STREAMSAVER_TEST_SERVER") == "docker":
        from testcontainers.redis import RedisContainer

        with RedisContainer("redis:8") as container:
            host, port = container.get_container_host_ip(), container.get_exposed_port(6379)
            url = f"redis://{host}:{port}/0"
            OWN_SERVERS.add(url)
            yield url
            OWN_SERVERS.discard(url)
    else:
        from streamsaver.server.embedded import EmbeddedRedis

        with EmbeddedRedis() as server:
            OWN_SERVERS.add(server.url)
            yield server.url
            OWN_SERVERS.discard(server.url)


@pytest.fixture(scope="session")
def embedded_cluster() -> Iterator[EmbeddedCluster]:
    """A Redis Cluster of three embedded primaries (each with the modules), started once per
    session, on first use."""
    with cluster_of_three() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def one_primary_cluster_url() -> Iterator[str]:
    """The URL of a Redis Cluster of one primary holding every slot (a managed cluster of one
    shard), started once per session, on first use."""
    with cluster_of(1) as cluster:
        yield cluster.url


@pytest.fixture(scope="session")
def cluster_url(embedded_cluster: EmbeddedCluster) -> str:
    """The URL of a node of that cluster (a cluster client discovers the others)."""
    return embedded_cluster.url


@pytest.fixture
def prefix() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    """A client of the test server (a ``RedisCluster`` where the contract suite runs on the cluster)."""
    c = sync_client(redis_url)
    yield c
    c.close()


@pytest.fixture
async def aclient(redis_url: str) -> AsyncIterator[redis.asyncio.Redis]:
    c = async_client(redis_url)
    yield c
    await c.aclose()


@pytest.fixture
def sync_saver(client: redis.Redis, prefix: str) -> StreamSaver:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    return saver


@pytest.fixture
async def async_saver(aclient: redis.asyncio.Redis, prefix: str) -> AsyncStreamSaver:
    saver = AsyncStreamSaver(aclient, prefix=prefix)
    await saver.setup()
    return saver
