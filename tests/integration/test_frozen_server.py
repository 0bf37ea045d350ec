"""A frozen or restarting server: calls fail within the client's timeout with a named error,
nothing is half-applied, and the same saver works again once the server does.

* A server stopped with ``SIGSTOP`` (frozen: its socket accepts, nothing answers) fails a
  `put` and a `get_tuple` of a saver `from_conn_string` made after ``socket_timeout`` with
  `ServerTimeoutError`; after ``SIGCONT`` the same saver (its `Lane` too) writes and reads
  again, and the put that timed out is logged once at most (a repeat writes nothing).
* Clients the library makes have connect and socket timeouts by default, overridable.
* A server loading its data (``LOADING``) delays a call instead of failing it.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import redis
from helpers import config, new_checkpoint

from streamsaver import AsyncStreamSaver, StreamSaver
from streamsaver.drivers.wire import CONNECT_TIMEOUT_S, SOCKET_TIMEOUT_S
from streamsaver.errors import ServerTimeoutError, ServerUnavailableError
from streamsaver.server.embedded import EmbeddedRedis

TIMEOUT_S = 0.5
FAST = {"socket_timeout": TIMEOUT_S}


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddedRedis]:
    with EmbeddedRedis() as embedded:
        yield embedded


@contextmanager
def frozen(server: EmbeddedRedis) -> Iterator[None]:
    assert server.process is not None
    os.kill(server.process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(server.process.pid, signal.SIGCONT)


def test_a_frozen_server_fails_sync_calls_in_time_and_the_saver_recovers(server: EmbeddedRedis, prefix: str) -> None:
    with StreamSaver.from_conn_string(server.url, prefix=prefix, connection_args=FAST) as saver:
        assert saver._driver.lane is not None  # the sync hot path runs on the lane
        first, versions = new_checkpoint({"step": 0})
        saver.put(config("t"), first, {}, versions)
        second, versions = new_checkpoint({"step": 1}, first)
        parent = config("t", "", first["id"])
        with frozen(server):
            started = time.monotonic()
            with pytest.raises(ServerTimeoutError):
                saver.put(parent, second, {}, versions)
            with pytest.raises(ServerTimeoutError):
                saver.get_tuple(config("t"))
            assert time.monotonic() - started < 4 * TIMEOUT_S + 1
        saver.put(parent, second, {}, versions)  # the one that timed out may have run: once
        latest = saver.get_tuple(config("t"))
        assert latest is not None and latest.checkpoint["channel_values"] == {"step": 1}
        assert saver.redis.xlen(saver.core.keys.thread("t").log) == 2


async def test_a_frozen_server_fails_async_calls_in_time_and_the_saver_recovers(
    server: EmbeddedRedis, prefix: str
) -> None:
    async with AsyncStreamSaver.from_conn_string(server.url, prefix=prefix, connection_args=FAST) as saver:
        first, versions = new_checkpoint({"step": 0})
        await saver.aput(config("t"), first, {}, versions)
        second, versions = new_checkpoint({"step": 1}, first)
        parent = config("t", "", first["id"])
        with frozen(server):
            started = time.monotonic()
            with pytest.raises(ServerTimeoutError):
                await saver.aput(parent, second, {}, versions)
            with pytest.raises(ServerTimeoutError):
                await saver.aget_tuple(config("t"))
            assert time.monotonic() - started < 4 * TIMEOUT_S + 1
        await saver.aput(parent, second, {}, versions)
        latest = await saver.aget_tuple(config("t"))
        assert latest is not None and latest.checkpoint["channel_values"] == {"step": 1}
        assert await saver.redis.xlen(saver.core.keys.thread("t").log) == 2


def test_an_unreachable_server_is_a_named_error(prefix: str) -> None:
    with EmbeddedRedis() as gone:
        saver = StreamSaver.from_conn_string(gone.url, prefix=prefix, cluster=False)
        with saver as opened:
            opened.setup()
            gone.stop()
            with pytest.raises(ServerUnavailableError) as caught:
                opened.get_tuple(config("t"))
    assert isinstance(caught.value.__cause__, redis.ConnectionError)


async def test_clients_the_library_makes_have_timeouts_and_they_can_be_overridden(server: EmbeddedRedis) -> None:
    with StreamSaver.from_conn_string(server.url) as saver:
        options = saver.redis.get_connection_kwargs()
        assert (options["socket_timeout"], options["socket_connect_timeout"]) == (SOCKET_TIMEOUT_S, CONNECT_TIMEOUT_S)
    with StreamSaver.from_conn_string(server.url, connection_args={"socket_timeout": 2.5}) as saver:
        assert saver.redis.get_connection_kwargs()["socket_timeout"] == 2.5
    async with AsyncStreamSaver.from_conn_string(server.url) as asaver:
        assert asaver.redis.get_connection_kwargs()["socket_timeout"] == SOCKET_TIMEOUT_S


def test_a_server_loading_its_data_delays_a_call_instead_of_failing_it(prefix: str) -> None:
    debug = ["--enable-debug-command", "yes", "--key-load-delay", "200",
             "--loading-process-events-interval-bytes", "1024"]
    with (
        EmbeddedRedis(extra_args=debug) as loading,
        redis.Redis.from_url(loading.url) as admin,
        StreamSaver.from_conn_string(loading.url, prefix=prefix, cluster=False) as saver,
    ):
        saver.setup()
        admin.execute_command("DEBUG", "POPULATE", 5000, "filler")
        reload = threading.Thread(target=admin.execute_command, args=("DEBUG", "RELOAD"))
        reload.start()
        with redis.Redis.from_url(loading.url) as probe:
            while reload.is_alive():  # until the server says it is loading
                try:
                    probe.ping()
                except redis.BusyLoadingError:
                    break
            else:
                pytest.fail("the reload ended before the server reported LOADING")
        checkpoint, versions = new_checkpoint({"step": 0})
        saver.put(config("t"), checkpoint, {}, versions)
        reload.join()
        latest = saver.get_tuple(config("t"))
    assert latest is not None and latest.checkpoint["id"] == checkpoint["id"]
