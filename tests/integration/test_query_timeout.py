"""A listing never returns a query's partial rows as if they were whole.

RediSearch cuts a query short at its ``TIMEOUT`` (500 ms by default) and, with its default
``ON_TIMEOUT return``, answers with the rows found so far, without an error in RESP2: a sort
cut short gives the newest of what it reached, not the newest. The saver's queries say
``TIMEOUT 0``. Shown on a server of its own whose timeout is 1 ms."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from helpers import config, new_checkpoint

from streamsaver import StreamSaver
from streamsaver.log.codec import tag
from streamsaver.log.keys import Keyspace
from streamsaver.server.embedded import EmbeddedRedis

CHECKPOINTS = 40_000
"""Enough that sorting the half of them a filter matches outlasts a 1 ms timeout."""


@pytest.fixture(scope="module")
def impatient() -> Iterator[redis.Redis]:
    with EmbeddedRedis() as server:
        client = redis.Redis.from_url(server.url)
        client.execute_command("FT.CONFIG", "SET", "TIMEOUT", 1)
        yield client
        client.close()


def test_a_filtered_listing_sorts_every_match_however_long_it_takes(impatient: redis.Redis, prefix: str) -> None:
    saver = StreamSaver(impatient, prefix=prefix, projections=("full",))
    saver.setup()
    pipe, ids = impatient.pipeline(transaction=False), []
    for i in range(CHECKPOINTS):
        checkpoint, versions = new_checkpoint({"i": i})
        command, saved = saver.core.put_request(config("long"), checkpoint, {"even": i % 2 == 0}, versions)
        pipe.execute_command(*command)
        ids.append(saved["configurable"]["checkpoint_id"])
        if len(pipe) == 1000:
            pipe.execute()
    pipe.execute()
    # the server does cut a sort of these matches short when the query does not say otherwise
    cut = impatient.execute_command(
        "FT.AGGREGATE", Keyspace(prefix).index("full"), f"@th:{{{tag('long')}}}",
        "SORTBY", 2, "@checkpoint_id", "DESC", "LIMIT", 0, 1, "DIALECT", 2,
    )
    assert (cut[b"total_results"] if isinstance(cut, dict) else cut[0]) < CHECKPOINTS

    listed = [
        t.config["configurable"]["checkpoint_id"] for t in saver.list(config("long"), filter={"even": True}, limit=5)
    ]

    assert listed == [ids[i] for i in range(CHECKPOINTS - 2, CHECKPOINTS - 12, -2)]
