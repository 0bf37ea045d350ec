"""A deployment whose data exists but whose settings (``<prefix>:meta``, the partition count) are
gone refuses to start instead of re-partitioning itself, until its settings are restored.

Before, a saver started with another count (or the default) after the settings key was deleted
or evicted stored its own count and went on: the old threads read as missing and new writes of
them went to other partitions (a fork). `restore-settings` writes the count back only when every
thread log agrees with it.
"""

from __future__ import annotations

import json

import pytest
import redis
from helpers import config, new_checkpoint

from streamsaver import AsyncStreamSaver, StreamSaver
from streamsaver.cli.main import main
from streamsaver.errors import InvalidInputError, SettingsLostError
from streamsaver.log.keys import Keyspace
from streamsaver.ops.settings import possible_partitions, restore_settings

THREADS = [f"thread-{n}" for n in range(12)]


def deployment_without_settings(client: redis.Redis, prefix: str, partitions: int = 7) -> None:
    saver = StreamSaver(client, prefix=prefix, partitions=partitions)
    for thread in THREADS:
        checkpoint, versions = new_checkpoint({"n": thread})
        saver.put(config(thread), checkpoint, {"source": "input"}, versions)
    client.delete(Keyspace(prefix).meta)


@pytest.mark.parametrize("partitions", [None, 16, 7])
def test_a_saver_refuses_to_start_on_a_deployment_that_lost_its_settings(
    client: redis.Redis, prefix: str, partitions: int | None
) -> None:
    deployment_without_settings(client, prefix)

    with pytest.raises(SettingsLostError, match="restore-settings"):
        StreamSaver(client, prefix=prefix, partitions=partitions).setup()
    assert not client.exists(Keyspace(prefix).meta)  # nothing written: the refusal takes its count back


async def test_the_async_saver_refuses_too(aclient: redis.asyncio.Redis, client: redis.Redis, prefix: str) -> None:
    deployment_without_settings(client, prefix)
    with pytest.raises(SettingsLostError):
        await AsyncStreamSaver(aclient, prefix=prefix).setup()


def test_a_new_deployment_on_an_empty_prefix_starts(client: redis.Redis, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix, partitions=3)
    saver.setup()
    assert client.hget(Keyspace(prefix).meta, "partitions") == b"3"


def test_restore_settings_checks_the_count_against_the_logs(client: redis.Redis, prefix: str) -> None:
    deployment_without_settings(client, prefix, partitions=7)

    assert 7 in possible_partitions(client, prefix)
    with pytest.raises(InvalidInputError, match="not written with 16 partitions"):
        restore_settings(client, prefix, 16)
    assert not client.exists(Keyspace(prefix).meta)
    restored = restore_settings(client, prefix, 7)

    assert restored.logs_checked == len(THREADS)
    saver = StreamSaver(client, prefix=prefix)
    assert all(saver.get_tuple(config(thread)) is not None for thread in THREADS)


def test_the_restore_settings_command(
    client: redis.Redis, redis_url: str, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    deployment_without_settings(client, prefix, partitions=5)

    assert main(["restore-settings", "--partitions", "5", "--json", "--url", redis_url, "--prefix", prefix]) == 0
    assert json.loads(capsys.readouterr().out) == {"partitions": 5, "logs_checked": len(THREADS), "views": ["full"]}
    assert StreamSaver(client, prefix=prefix).get_tuple(config(THREADS[0])) is not None


@pytest.mark.parametrize("views", [("full",), ("full", "shallow")])
def test_restore_settings_records_the_inline_views_the_writers_projected(
    client: redis.Redis, prefix: str, views: tuple[str, ...]
) -> None:
    """A deployment indexing one view must not come back as one set up before the record (which
    would start projecting a second view that lacks every earlier checkpoint)."""
    saver = StreamSaver(client, prefix=prefix, partitions=7, projections=views)  # type: ignore[arg-type]
    for thread in THREADS:
        checkpoint, versions = new_checkpoint({"n": thread})
        saver.put(config(thread), checkpoint, {"source": "input"}, versions)
    client.delete(Keyspace(prefix).meta)

    assert restore_settings(client, prefix, 7).views == views
    assert client.hget(Keyspace(prefix).meta, "views") == ",".join(views).encode()
    checkpoint, versions = new_checkpoint({"n": "after"})
    StreamSaver(client, prefix=prefix).put(config("after"), checkpoint, {"source": "input"}, versions)
    assert bool(list(client.scan_iter(match=f"{prefix}:shallow:*"))) == ("shallow" in views)

