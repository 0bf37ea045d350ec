"""The local cache's listener connects to the very server of the store's client (sync or
asyncio; TCP, TLS or a unix socket), with its credentials, in RESP2 (no connection is opened
here)."""

from __future__ import annotations

import redis
import redis.asyncio

from streamsaver.memory.invalidations import connection_factory


def test_a_tcp_client_with_credentials() -> None:
    client = redis.Redis(host="10.0.0.7", port=6380, db=3, username="app", password="secret", protocol=3)
    connection = connection_factory(client)()
    assert type(connection) is redis.Connection
    assert (connection.host, connection.port, connection.db) == ("10.0.0.7", 6380, 3)
    assert (connection.username, connection.password, connection.protocol) == ("app", "secret", 2)


def test_an_asyncio_tls_client() -> None:
    client = redis.asyncio.Redis(host="cache.example", port=6390, ssl=True, ssl_cert_reqs="none")
    connection = connection_factory(client)()
    assert type(connection) is redis.SSLConnection
    assert (connection.host, connection.port) == ("cache.example", 6390)


def test_a_unix_socket_client() -> None:
    client = redis.Redis(unix_socket_path="/run/redis.sock")
    connection = connection_factory(client)()
    assert type(connection) is redis.UnixDomainSocketConnection and connection.path == "/run/redis.sock"


def test_an_asyncio_cluster_client_with_tls_and_credentials() -> None:
    from streamsaver.memory.options import cluster_connections

    client = redis.asyncio.RedisCluster(host="10.0.0.8", port=7000, username="app", password="secret",
                                        ssl=True, ssl_cert_reqs="none")
    connect, seeds = cluster_connections(client)
    connection = connect("10.0.0.9", 7001)
    assert type(connection) is redis.SSLConnection
    assert (connection.host, connection.port, connection.protocol) == ("10.0.0.9", 7001, 2)
    assert (connection.username, connection.password) == ("app", "secret")
    assert seeds == [("10.0.0.8", 7000)]


def test_a_cluster_client_remapping_addresses_is_followed() -> None:
    from streamsaver.memory.options import cluster_connections

    client = redis.asyncio.RedisCluster(host="10.0.0.8", port=7000,
                                        address_remap=lambda address: ("gateway", address[1] + 10000))
    connect, _ = cluster_connections(client)
    connection = connect("10.0.0.9", 7001)
    assert (connection.host, connection.port) == ("gateway", 17001)
