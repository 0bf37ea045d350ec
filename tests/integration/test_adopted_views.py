"""A saver that declares no `projections` adopts the deployment's inline views: on a new
deployment it records only the view it reads (one indexed document per put), on one whose
settings predate the record it records both (what its older writers project), and it is refused
before its first write when it reads a view the deployment neither keeps inline nor has a
projector worker for."""

from __future__ import annotations

import pytest
import redis
from helpers import config, new_checkpoint

from streamsaver import AsyncShallowStreamSaver, AsyncStreamSaver, ShallowStreamSaver, StreamSaver
from streamsaver.errors import InlineViewsError, SettingsLostError
from streamsaver.feeds.worker import ProjectorWorker
from streamsaver.log.keys import Keyspace


def _put(saver: StreamSaver, thread: str) -> None:
    checkpoint, versions = new_checkpoint({"n": thread})
    saver.put(config(thread), checkpoint, {"source": "input"}, versions)


def _views(client: redis.Redis, prefix: str) -> bytes | None:
    return client.hget(Keyspace(prefix).meta, "views")  # type: ignore[return-value]


def _documents(client: redis.Redis, prefix: str, view: str) -> list[bytes]:
    return client.keys(f"{prefix}:{view}:*")  # type: ignore[return-value]


@pytest.mark.parametrize(("saver_class", "view"), [(StreamSaver, "full"), (ShallowStreamSaver, "shallow")])
def test_a_new_deployment_keeps_only_the_view_its_first_saver_reads(
    client: redis.Redis, prefix: str, saver_class: type[StreamSaver], view: str
) -> None:
    saver = saver_class(client, prefix=prefix)
    _put(saver, "t1")
    assert _views(client, prefix) == view.encode()
    assert saver.core.projections == (view,)
    assert saver.get_tuple(config("t1")) is not None
    other = "shallow" if view == "full" else "full"
    assert _documents(client, prefix, other) == []


async def test_the_async_savers_adopt_alike(aclient: redis.asyncio.Redis, client: redis.Redis, prefix: str) -> None:
    shallow = AsyncShallowStreamSaver(aclient, prefix=prefix)
    await shallow.setup()
    assert _views(client, prefix) == b"shallow"
    with pytest.raises(InlineViewsError):
        await AsyncStreamSaver(aclient, prefix=prefix).setup()


def test_a_deployment_recording_both_views_keeps_both(client: redis.Redis, prefix: str) -> None:
    StreamSaver(client, prefix=prefix, projections=("full", "shallow")).setup()
    writer = StreamSaver(client, prefix=prefix)
    _put(writer, "t1")
    assert writer.core.projections == ("full", "shallow")
    assert ShallowStreamSaver(client, prefix=prefix).get_tuple(config("t1")) is not None


def test_a_deployment_set_up_before_the_record_records_both_views(client: redis.Redis, prefix: str) -> None:
    StreamSaver(client, prefix=prefix, projections=("full", "shallow")).setup()
    client.hdel(Keyspace(prefix).meta, "views")  # as an older release left its settings
    writer = StreamSaver(client, prefix=prefix)
    _put(writer, "t1")
    assert _views(client, prefix) == b"full,shallow"
    assert ShallowStreamSaver(client, prefix=prefix).get_tuple(config("t1")) is not None


def test_a_reader_of_a_view_nobody_keeps_is_refused_before_writing(client: redis.Redis, prefix: str) -> None:
    _put(StreamSaver(client, prefix=prefix), "t1")
    reader = ShallowStreamSaver(client, prefix=prefix)
    written = client.xlen(Keyspace(prefix).feed(0))
    with pytest.raises(InlineViewsError) as refused:
        _put(reader, "t2")
    message = str(refused.value)
    assert "'shallow'" in message and "projector worker" in message and "streamsaver replay --view shallow" in message
    assert client.xlen(Keyspace(prefix).feed(0)) == written
    assert _views(client, prefix) == b"full"


def test_a_reader_of_a_worker_kept_view_is_let_in(client: redis.Redis, prefix: str) -> None:
    StreamSaver(client, prefix=prefix).setup()
    worker = ProjectorWorker(client, prefix, ["shallow"])
    worker.prepare()  # makes its consumer groups: the deployment now has a worker for the view
    reader = ShallowStreamSaver(client, prefix=prefix)
    _put(reader, "t1")
    assert reader.core.projections == ("full",)
    worker.run_burst()
    assert reader.get_tuple(config("t1")) is not None


def test_a_new_deployment_whose_setup_fails_keeps_no_record(client: redis.Redis, prefix: str) -> None:
    _put(StreamSaver(client, prefix=prefix), "t1")
    client.delete(Keyspace(prefix).meta)  # the settings are lost: setup refuses to start
    with pytest.raises(SettingsLostError):
        StreamSaver(client, prefix=prefix).setup()
    assert client.exists(Keyspace(prefix).meta) == 0
