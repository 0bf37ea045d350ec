"""`EmbeddedRedis` uses only the server process it spawned: another server already on the port
is refused (not used, nor shut down by `stop`), and a free port taken before the server binds
it (its client port, or a cluster node's bus port) is replaced by another."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
import redis

from streamsaver.errors import EmbeddedServerError
from streamsaver.server import embedded
from streamsaver.server.embedded import EmbeddedRedis


@pytest.fixture
def foreign() -> Iterator[EmbeddedRedis]:
    with EmbeddedRedis(modules=False) as server:
        yield server


def test_a_port_held_by_another_server_is_refused_and_that_server_left_running(foreign: EmbeddedRedis) -> None:
    with pytest.raises(EmbeddedServerError, match="held by another process"):
        EmbeddedRedis(port=foreign.port, modules=False).start()

    assert redis.Redis(port=foreign.port).ping()


def test_a_chosen_port_taken_before_the_server_binds_it_is_replaced(
    foreign: EmbeddedRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The race made certain: the port the server is first given is one another server holds.
    choices = iter([foreign.port])
    real_free_port = embedded.free_port
    monkeypatch.setattr(embedded, "free_port", lambda: next(choices, None) or real_free_port())

    with EmbeddedRedis(modules=False) as server:
        client = redis.Redis.from_url(server.url)
        assert server.port != foreign.port
        assert server.process is not None and int(client.info("server")["process_id"]) == server.process.pid

    assert redis.Redis(port=foreign.port).ping()


def test_a_cluster_bus_port_taken_before_the_node_binds_it_is_replaced() -> None:
    """Any process's outgoing connection can take a port chosen free: a cluster failed to start
    when one took a node's bus port before the node bound it."""
    node = EmbeddedRedis(modules=False, cluster=True)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", node.bus_port or 0))
        holder.listen()
        taken = holder.getsockname()[1]
        assert taken == node.bus_port
        with node, redis.Redis.from_url(node.url) as client:
            assert node.bus_port not in (None, taken)
            assert client.info("cluster")["cluster_enabled"] == 1


def test_a_port_held_by_a_silent_listener_is_refused_with_a_clear_error() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        with pytest.raises(EmbeddedServerError, match="held by another process"):
            EmbeddedRedis(port=port, modules=False, startup_timeout=10).start()


@pytest.mark.parametrize("extra_args", [[], ["--requirepass", "s3cret"]], ids=["open", "password"])
def test_stop_shuts_the_server_down_cleanly(extra_args: list[str]) -> None:
    """`stop` ends the server with SHUTDOWN (exit code 0), never by SIGKILL after its wait: a
    killed server may leave its append-only file torn. A password-protected one included: its
    NOAUTH answer is a ConnectionError to redis-py, which used to pass for a shutdown."""
    server = EmbeddedRedis(extra_args=extra_args).start()
    process = server.process
    assert process is not None
    server.stop()
    assert process.returncode == 0


def test_a_server_writing_its_first_append_only_file_stops_cleanly_once_it_is_written() -> None:
    """Redis refuses SHUTDOWN (and SIGTERM) while it writes the first append-only file after AOF
    was turned on, as a replica does after each full sync: `stop` asks again until it is
    written, where it used to wait 10 s and SIGKILL the server."""
    server = EmbeddedRedis(modules=False).start()
    process = server.process
    assert process is not None
    with redis.Redis(port=server.port) as client:
        client.mset({f"k{n}": n for n in range(5)})
        client.config_set("rdb-key-save-delay", 100_000)  # µs per key: the file takes 0.5 s to write
        client.config_set("appendonly", "no")
        client.config_set("appendonly", "yes")
        assert client.info("persistence")["aof_rewrite_in_progress"] == 1
    server.stop()
    assert process.returncode == 0
