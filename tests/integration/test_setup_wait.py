"""`setup` waiting for new indexes (after slots moved, on Redis Cluster) pauses between two reads
of their state instead of sending ``FT.INFO`` as fast as the server answers.

The wait is exercised on one server of its own: documents already under the view's prefix when
its index is created keep the index "indexing" for a while, as on a primary that received slots.
(On the suite's shared server, which by then holds every earlier test's keys and indexes, the
new index was once still indexing after setup's 30 s limit. RediSearch 2.10 seems to scan for
one new index at a time, each scan over the whole keyspace: with 300,000 other keys the same
documents are indexed in under a second, but after 200 other indexes were created on that
server the new one was still indexing 290 s later.)"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis

from streamsaver import AsyncStreamSaver, StreamSaver
from streamsaver.checkpoints import programs
from streamsaver.log.keys import Keyspace
from streamsaver.log.setup import INDEXING_POLL_S
from streamsaver.server.embedded import EmbeddedRedis

DOCUMENTS = 20_000
"""Enough documents that indexing them outlasts several polls."""


@pytest.fixture(scope="module")
def own_url() -> Iterator[str]:
    with EmbeddedRedis() as server:
        yield server.url


def _ft_info_calls(client: redis.Redis) -> int:
    stats = client.info("commandstats")
    return int(stats.get("cmdstat_FT.INFO", {}).get("calls", 0))


def _documents_before_the_index(client: redis.Redis, prefix: str) -> None:
    pipe = client.pipeline(transaction=False)
    for n in range(DOCUMENTS):
        pipe.execute_command("JSON.SET", f"{Keyspace(prefix).document_prefix('full')}{{p0}}:t{n}::c", "$", '{"th":"x"}')
    pipe.execute()


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_the_wait_for_new_indexes_pauses_between_two_reads_of_their_state(
    own_url: str, prefix: str, kind: str
) -> None:
    client = redis.Redis.from_url(own_url)
    _documents_before_the_index(client, prefix)
    calls, started = _ft_info_calls(client), time.monotonic()

    if kind == "sync":
        sync_saver = StreamSaver(client, prefix=prefix, projections=("full",))
        sync_saver._driver.run(programs.set_up(sync_saver.core, wait_indexed=True))
    else:
        async with AsyncStreamSaver.from_conn_string(own_url, prefix=prefix, projections=("full",)) as saver:
            await saver._adriver.run(programs.set_up(saver.core, wait_indexed=True))

    polls, waited = _ft_info_calls(client) - calls, time.monotonic() - started
    info = client.ft(Keyspace(prefix).index("full")).info()
    assert int(info["indexing"]) == 0 and int(info["num_docs"]) == DOCUMENTS
    assert polls >= 2, "the index was ready at the first read: the wait was not exercised"
    assert polls <= waited / INDEXING_POLL_S + 2
    client.close()
