"""Large payloads are stored zstd-compressed in the log; every reader expands them.

A conversation's message list is the payload that grows with every step, and the log holds each
of its versions: compressing it is what keeps a deployment's memory near the peers' disk bytes.
Compression must stay invisible: values read back equal, replays give the same views, other
readers (subscribers, a saver with compression off) decode the stored form, a serde whose own
type names look like the marker round-trips, and a corrupt compressed payload is reported with
its log entry like any unreadable payload.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from helpers import VARIANT_IDS, VARIANTS, config, new_checkpoint, open_adapter, snapshot
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from streamsaver import StreamSaver
from streamsaver.codec import pack, unpack
from streamsaver.compression import MIN_BYTES
from streamsaver.errors import InvalidInputError, PayloadDecodeError
from streamsaver.events import Blob, CheckpointSaved, WritesSaved, decode_channel_value, from_fields
from streamsaver.feed_event import decode_payload
from streamsaver.replay import Replayer

WORDS = "agent tool call result thread state graph node edge message redis".split()


def _conversation(turns: int) -> list[Any]:
    text = " ".join(WORDS[i % len(WORDS)] for i in range(90))
    messages: list[Any] = []
    for turn in range(turns):
        messages += [HumanMessage(f"{turn}: {text}", id=f"h{turn}"), AIMessage(f"{turn}: {text}", id=f"a{turn}")]
    return messages


@pytest.fixture
def saver(client: redis.Redis, prefix: str) -> Iterator[StreamSaver]:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    yield saver


def _log_entries(client: redis.Redis, saver: StreamSaver, thread_id: str) -> list[tuple[bytes, dict[bytes, bytes]]]:
    return client.xrange(saver.core.keys.thread(thread_id).log)


def _put(saver: StreamSaver, thread_id: str, values: dict[str, Any]) -> Any:
    checkpoint, new_versions = new_checkpoint(values)
    return saver.put(config(thread_id), checkpoint, {"source": "loop", "step": 1}, new_versions)


def test_a_large_channel_value_is_stored_compressed_and_reads_back_equal(
    client: redis.Redis, saver: StreamSaver
) -> None:
    messages = _conversation(20)
    saved = _put(saver, "t", {"messages": messages, "small": "tiny"})
    saver.put_writes(saved, [("messages", messages)], "task-1")

    [(_, checkpoint_fields), (_, writes_fields)] = _log_entries(client, saver, "t")
    stored = decode_channel_value(checkpoint_fields[b"c:messages"])
    plain_type, plain = JsonPlusSerializer().dumps_typed(messages)
    assert stored.blob.type == f"zstd:{plain_type}"
    assert len(stored.blob.data) * 3 < len(plain)
    assert decode_channel_value(checkpoint_fields[b"c:small"]).blob.type == "msgpack"
    assert unpack(writes_fields[b"w:0"])[1] == f"zstd:{plain_type}".encode()

    got = saver.get_tuple(saved)
    assert got is not None
    assert got.checkpoint["channel_values"] == {"messages": messages, "small": "tiny"}
    assert got.pending_writes == [("task-1", "messages", messages)]


def test_subscribers_decode_compressed_payloads(client: redis.Redis, saver: StreamSaver) -> None:
    messages = _conversation(20)
    saved = _put(saver, "t", {"messages": messages})
    saver.put_writes(saved, [("messages", messages)], "task-1")

    [(cid, cfields), (wid, wfields)] = _log_entries(client, saver, "t")
    checkpoint = from_fields(cfields, cid.decode())
    writes = from_fields(wfields, wid.decode())
    assert isinstance(checkpoint, CheckpointSaved) and isinstance(writes, WritesSaved)
    serde = JsonPlusSerializer()
    assert decode_payload(checkpoint, serde)["checkpoint"]["channel_values"] == {"messages": messages}
    assert decode_payload(writes, serde)["writes"] == [("messages", messages)]


def test_views_replayed_from_compressed_logs_equal_the_live_views(client: redis.Redis, saver: StreamSaver, prefix: str) -> None:
    previous = None
    for turn in range(1, 6):
        checkpoint, new_versions = new_checkpoint({"messages": _conversation(turn * 4)}, previous)
        saved = saver.put(config("t"), checkpoint, {"step": turn}, new_versions)
        saver.put_writes(saved, [("messages", _conversation(2))], f"task-{turn}")
        previous = checkpoint
    live = snapshot(client, prefix)

    replayer = Replayer.open(client, prefix)
    replayer.drop(["full", "shallow"])
    replayer.replay(["full", "shallow"])

    assert snapshot(client, prefix) == live


async def test_a_saver_without_compression_reads_what_a_compressing_saver_wrote(
    client: redis.Redis, redis_url: str, prefix: str
) -> None:
    messages = _conversation(20)
    async with open_adapter("sync", "full", redis_url, prefix) as writer:
        saved, _ = await writer.save("t", {"messages": messages})
    async with open_adapter("async", "full", redis_url, prefix, compression=None) as reader:
        got = await reader.get_tuple(saved)
        await reader.save("u", {"messages": messages})
    assert got is not None and got.checkpoint["channel_values"] == {"messages": messages}

    keys = StreamSaver(client, prefix=prefix)
    keys.setup()
    [(_, fields)] = _log_entries(client, keys, "u")
    assert decode_channel_value(fields[b"c:messages"]).blob == _plain_blob(messages)


@pytest.mark.parametrize(("kind", "view"), VARIANTS, ids=VARIANT_IDS)
async def test_every_variant_reads_compressed_values(redis_url: str, prefix: str, kind: str, view: str) -> None:
    messages = _conversation(20)
    async with open_adapter(kind, view, redis_url, prefix) as saver:
        saved, _ = await saver.save("t", {"messages": messages})
        await saver.put_writes(saved, [("messages", messages)], "task-1")
        got = await saver.get_tuple(saved)
        listed = await saver.list(config("t"))
    assert got is not None and got.checkpoint["channel_values"] == {"messages": messages}
    assert got.pending_writes == [("task-1", "messages", messages)]
    assert [t.checkpoint["channel_values"] for t in listed] == [{"messages": messages}]


def test_compression_off_stores_payloads_as_the_serde_wrote_them(client: redis.Redis, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix, compression=None)
    saver.setup()
    messages = _conversation(20)
    _put(saver, "t", {"messages": messages})

    [(_, fields)] = _log_entries(client, saver, "t")
    assert decode_channel_value(fields[b"c:messages"]).blob == _plain_blob(messages)


def _plain_blob(value: Any) -> Blob:
    return Blob(*JsonPlusSerializer().dumps_typed(value))


def test_a_payload_that_does_not_compress_is_stored_as_it_is(client: redis.Redis, saver: StreamSaver) -> None:
    noise = os.urandom(8 * MIN_BYTES)
    _put(saver, "t", {"noise": noise})

    [(_, fields)] = _log_entries(client, saver, "t")
    assert decode_channel_value(fields[b"c:noise"]).blob == _plain_blob(noise)
    got = saver.get_tuple(config("t"))
    assert got is not None and got.checkpoint["channel_values"] == {"noise": noise}


def test_encrypted_payloads_are_not_compressed(client: redis.Redis, prefix: str) -> None:
    serde = EncryptedSerializer.from_pycryptodome_aes(key=b"0123456789abcdef0123456789abcdef")
    saver = StreamSaver(client, prefix=prefix, serde=serde)
    saver.setup()
    messages = _conversation(20)
    _put(saver, "t", {"messages": messages})

    [(_, fields)] = _log_entries(client, saver, "t")
    assert not decode_channel_value(fields[b"c:messages"]).blob.type.startswith("zstd:")
    got = saver.get_tuple(config("t"))
    assert got is not None and got.checkpoint["channel_values"] == {"messages": messages}


class MarkerLookalikeSerde(JsonPlusSerializer):
    """A serde whose own type names start with the stored-form markers."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        type_, data = super().dumps_typed(obj)
        return ("zstd:" if isinstance(obj, str) else "raw:") + type_, data

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        type_, payload = data
        assert type_.startswith(("zstd:", "raw:")), type_
        return super().loads_typed((type_.split(":", 1)[1], payload))


@pytest.mark.parametrize("compression", ["zstd", None])
def test_serde_type_names_that_look_like_markers_round_trip(client: redis.Redis, prefix: str, compression: str | None) -> None:
    saver = StreamSaver(client, prefix=prefix, serde=MarkerLookalikeSerde(), compression=compression)
    saver.setup()
    values = {"short": "s", "long": "x" * (4 * MIN_BYTES), "messages": _conversation(10)}
    saved = _put(saver, "t", values)
    saver.put_writes(saved, [("short", "pending")], "task-1")

    got = saver.get_tuple(saved)
    assert got is not None
    assert got.checkpoint["channel_values"] == values
    assert got.pending_writes == [("task-1", "short", "pending")]


def test_a_corrupt_compressed_payload_is_reported_with_its_log_entry(client: redis.Redis, saver: StreamSaver) -> None:
    _put(saver, "t", {"messages": _conversation(20)})
    [(entry_id, fields)] = _log_entries(client, saver, "t")
    channel, version, type_, data = unpack(fields[b"c:messages"])
    assert type_.startswith(b"zstd:")
    # Rebuild the log with a damaged frame under the same id: the view keeps pointing at it.
    log = saver.core.keys.thread("t").log
    damaged = {**fields, b"c:messages": pack([channel, version, type_, data[:-9] + b"\x00" * 9])}
    client.delete(log)
    client.xadd(log, damaged, id=entry_id)

    with pytest.raises(PayloadDecodeError, match="compressed payload is corrupt") as caught:
        saver.get_tuple(config("t"))
    assert caught.value.event_id == entry_id.decode()


def test_an_unknown_compression_is_refused_before_anything_is_written(client: redis.Redis, prefix: str) -> None:
    with pytest.raises(InvalidInputError, match="compression"):
        StreamSaver(client, prefix=prefix, compression="gzip")
    assert not list(client.scan_iter(match=f"{prefix}:*"))
