"""A saver's first call sets it up (no explicit ``setup()``); when that call lands while the
server is loading its data (``LOADING``), the setup waits it out as every other call does, sync
and async, instead of failing with `ServerUnavailableError`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from helpers import config, new_checkpoint
from loading_server import DEBUG_ARGS, fill, reloading

from streamsaver import AsyncStreamSaver, StreamSaver
from streamsaver.server.embedded import EmbeddedRedis


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddedRedis]:
    with EmbeddedRedis(extra_args=DEBUG_ARGS) as embedded, redis.Redis.from_url(embedded.url) as admin:
        fill(admin)
        yield embedded


def test_a_sync_saver_first_call_waits_out_a_loading_server(server: EmbeddedRedis, prefix: str) -> None:
    with StreamSaver.from_conn_string(server.url, prefix=prefix, cluster=False) as saver:
        checkpoint, versions = new_checkpoint({"step": 0})
        with reloading(server.url):
            assert saver.core.keyspace is None  # not set up: this put sets it up
            saver.put(config("t"), checkpoint, {}, versions)
        latest = saver.get_tuple(config("t"))
    assert latest is not None and latest.checkpoint["id"] == checkpoint["id"]


async def test_an_async_saver_first_call_waits_out_a_loading_server(server: EmbeddedRedis, prefix: str) -> None:
    async with AsyncStreamSaver.from_conn_string(server.url, prefix=prefix, cluster=False) as saver:
        checkpoint, versions = new_checkpoint({"step": 0})
        with reloading(server.url):
            assert saver.core.keyspace is None
            await saver.aput(config("t"), checkpoint, {}, versions)
        latest = await saver.aget_tuple(config("t"))
    assert latest is not None and latest.checkpoint["id"] == checkpoint["id"]
