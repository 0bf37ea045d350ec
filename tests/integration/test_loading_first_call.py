"""A saver's first call sets it up (no explicit ``setup()``); when that call lands while the
server is loading its data (``LOADING``), the setup waits it out as every other call does, sync
and async, instead of failing with `ServerUnavailableError`."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import redis
from helpers import config, new_checkpoint

from streamsaver import AsyncStreamSaver, StreamSaver
from streamsaver.server.embedded import EmbeddedRedis

DEBUG = ["--enable-debug-command", "yes", "--key-load-delay", "200", "--loading-process-events-interval-bytes", "1024"]


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddedRedis]:
    with EmbeddedRedis(extra_args=DEBUG) as embedded, redis.Redis.from_url(embedded.url) as admin:
        admin.execute_command("DEBUG", "POPULATE", 5000, "filler")  # ~1 s of loading at 200 us a key
        yield embedded


@contextmanager
def reloading(server: EmbeddedRedis) -> Iterator[None]:
    """The server reloads its data from disk until the block's end; it is loading on entry."""
    with redis.Redis.from_url(server.url) as admin, redis.Redis.from_url(server.url) as probe:
        reload = threading.Thread(target=admin.execute_command, args=("DEBUG", "RELOAD"))
        reload.start()
        try:
            while reload.is_alive():  # until the server says it is loading
                try:
                    probe.ping()
                except redis.BusyLoadingError:
                    break
            else:
                pytest.fail("the reload ended before the server reported LOADING")
            yield
        finally:
            reload.join()


def test_a_sync_saver_first_call_waits_out_a_loading_server(server: EmbeddedRedis, prefix: str) -> None:
    with StreamSaver.from_conn_string(server.url, prefix=prefix, cluster=False) as saver:
        checkpoint, versions = new_checkpoint({"step": 0})
        with reloading(server):
            assert saver.core.keyspace is None  # not set up: this put sets it up
            saver.put(config("t"), checkpoint, {}, versions)
        latest = saver.get_tuple(config("t"))
    assert latest is not None and latest.checkpoint["id"] == checkpoint["id"]


async def test_an_async_saver_first_call_waits_out_a_loading_server(server: EmbeddedRedis, prefix: str) -> None:
    async with AsyncStreamSaver.from_conn_string(server.url, prefix=prefix, cluster=False) as saver:
        checkpoint, versions = new_checkpoint({"step": 0})
        with reloading(server):
            assert saver.core.keyspace is None
            await saver.aput(config("t"), checkpoint, {}, versions)
        latest = await saver.aget_tuple(config("t"))
    assert latest is not None and latest.checkpoint["id"] == checkpoint["id"]
