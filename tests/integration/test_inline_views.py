"""A deployment agrees on the views it projects inline: the first setup records its saver's
`projections` in the settings hash, and every later saver's writes project exactly those, or
the saver is refused before its first write when its projections would leave a view
half-projected (a view some writers project inline and others do not)."""

from __future__ import annotations

import pytest
import redis
from helpers import config, new_checkpoint

from streamsaver import AsyncStreamSaver, StreamSaver
from streamsaver.errors import ConfigurationError, InlineViewsError
from streamsaver.log.keys import Keyspace


def _put(saver: StreamSaver, thread: str) -> None:
    checkpoint, versions = new_checkpoint({"n": thread})
    saver.put(config(thread), checkpoint, {"source": "input"}, versions)


def _views(client: redis.Redis, prefix: str) -> bytes | None:
    return client.hget(Keyspace(prefix).meta, "views")  # type: ignore[return-value]


@pytest.mark.parametrize("projections", [("full", "shallow"), ("full",), ("shallow", "full")])
def test_the_first_setup_records_its_projections(
    client: redis.Redis, prefix: str, projections: tuple[str, ...]
) -> None:
    StreamSaver(client, prefix=prefix, projections=projections).setup()
    assert _views(client, prefix) == ",".join(projections).encode()


def test_a_later_setup_keeps_the_recorded_views(client: redis.Redis, prefix: str) -> None:
    StreamSaver(client, prefix=prefix, projections=("full", "shallow")).setup()
    StreamSaver(client, prefix=prefix, view="shallow", projections=("shallow",)).setup()
    assert _views(client, prefix) == b"full,shallow"


def test_a_saver_projecting_a_view_the_deployment_does_not_is_refused_before_writing(
    client: redis.Redis, prefix: str
) -> None:
    StreamSaver(client, prefix=prefix, projections=("full",)).setup()
    extra = StreamSaver(client, prefix=prefix, projections=("full", "shallow"))
    with pytest.raises(InlineViewsError) as refused:
        _put(extra, "t1")
    message = str(refused.value)
    assert "full" in message and f"{prefix}:meta" in message and "shallow half-projected" in message
    assert isinstance(refused.value, ConfigurationError)
    assert client.keys(f"{prefix}:log:*") == []


def test_a_shallow_only_saver_of_a_full_and_shallow_deployment_keeps_both_views(
    client: redis.Redis, prefix: str
) -> None:
    StreamSaver(client, prefix=prefix, projections=("full", "shallow")).setup()
    shallow = StreamSaver(client, prefix=prefix, view="shallow", projections=("shallow",))
    _put(shallow, "t1")
    assert shallow.core.projections == ("full", "shallow")
    full = StreamSaver(client, prefix=prefix)
    assert full.get_tuple(config("t1")) is not None
    assert shallow.get_tuple(config("t1")) is not None


def test_a_reader_of_a_worker_kept_view_writes_the_recorded_views_only(client: redis.Redis, prefix: str) -> None:
    StreamSaver(client, prefix=prefix, projections=("full",)).setup()
    reader = StreamSaver(client, prefix=prefix, view="shallow", projections=("shallow",))
    _put(reader, "t1")
    assert reader.core.projections == ("full",)
    assert StreamSaver(client, prefix=prefix, projections=("full",)).get_tuple(config("t1")) is not None
    assert reader.get_tuple(config("t1")) is None  # the shallow view waits for a projector worker


def test_a_refused_saver_stays_refused(client: redis.Redis, prefix: str) -> None:
    StreamSaver(client, prefix=prefix, view="shallow", projections=("shallow",)).setup()
    full = StreamSaver(client, prefix=prefix)
    for _ in range(2):
        with pytest.raises(InlineViewsError):
            _put(full, "t1")
    assert client.keys(f"{prefix}:log:*") == []


def test_changing_the_recorded_views_lets_the_new_projections_in(client: redis.Redis, prefix: str) -> None:
    StreamSaver(client, prefix=prefix, projections=("full",)).setup()
    client.hset(Keyspace(prefix).meta, "views", "full,shallow")
    saver = StreamSaver(client, prefix=prefix)
    _put(saver, "t1")
    assert saver.core.projections == ("full", "shallow")


async def test_the_async_saver_records_and_agrees_alike(
    aclient: redis.asyncio.Redis, client: redis.Redis, prefix: str
) -> None:
    await AsyncStreamSaver(aclient, prefix=prefix, projections=("full",)).setup()
    assert _views(client, prefix) == b"full"
    extra = AsyncStreamSaver(aclient, prefix=prefix, projections=("full", "shallow"))
    with pytest.raises(InlineViewsError):
        await extra.setup()
    reader = AsyncStreamSaver(aclient, prefix=prefix, view="shallow", projections=("shallow",))
    await reader.setup()
    assert reader.core.projections == ("full",)
