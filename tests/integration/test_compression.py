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
from typing import Any

import pytest
import redis
from helpers import VARIANT_IDS, VARIANTS, config, new_checkpoint, open_adapter
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from streamsaver import StreamSaver
from streamsaver.errors import InvalidInputError, PayloadDecodeError
from streamsaver.feeds.event import FeedEvent, decode_payload
from streamsaver.log.codec import pack, unpack
from streamsaver.log.compression import MIN_BYTES
from streamsaver.log.events import Blob, CheckpointSaved, WritesSaved
from streamsaver.log.stored import decode_channel_value, from_fields
from streamsaver.ops.transfer import export_logs, import_logs

WORDS = ["agent", "tool", "call", "result", "thread", "state", "graph", "node", "edge", "message", "redis"]


def _conversation(turns: int) -> list[Any]:
    text = " ".join(WORDS[i % len(WORDS)] for i in range(90))
    messages: list[Any] = []
    for turn in range(turns):
        messages += [HumanMessage(f"{turn}: {text}", id=f"h{turn}"), AIMessage(f"{turn}: {text}", id=f"a{turn}")]
    return messages


@pytest.fixture
def saver(client: redis.Redis, prefix: str) -> StreamSaver:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    return saver


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


def _history(saver: StreamSaver, thread_id: str, turns: int) -> list[Any]:
    previous, configs = None, []
    for turn in range(1, turns + 1):
        checkpoint, new_versions = new_checkpoint({"messages": _conversation(turn * 4)}, previous)
        saved = saver.put(config(thread_id), checkpoint, {"step": turn}, new_versions)
        saver.put_writes(saved, [("messages", _conversation(2))], f"task-{turn}")
        previous, configs = checkpoint, [*configs, saved]
    return configs


def _values(saver: StreamSaver, thread_id: str) -> list[tuple[Any, Any]]:
    return [(t.checkpoint["channel_values"], t.pending_writes) for t in saver.list(config(thread_id))]


def test_copied_and_pruned_threads_keep_their_compressed_values(client: redis.Redis, saver: StreamSaver) -> None:
    _history(saver, "t", 4)
    original = _values(saver, "t")
    assert len(original) == 4 and all(v[0]["messages"] for v in original)

    saver.copy_thread("t", "copy")
    saver.prune(["t"], strategy="keep_latest")

    assert _values(saver, "copy") == original
    assert _values(saver, "t") == original[:1]
    [(_, fields), *_] = _log_entries(client, saver, "copy")[1:]
    assert decode_channel_value(fields[b"c:messages"]).blob.type.startswith("zstd:")


def test_an_exported_and_imported_deployment_reads_its_compressed_values(
    client: redis.Redis, saver: StreamSaver, prefix: str, tmp_path: Any
) -> None:
    _history(saver, "t", 3)
    original = _values(saver, "t")

    export_logs(client, prefix, tmp_path / "logs.jsonl.gz")
    imported = import_logs(client, tmp_path / "logs.jsonl.gz", prefix=f"{prefix}-imported")

    copy = StreamSaver(client, prefix=imported.prefix)
    copy.setup()
    assert _values(copy, "t") == original


def test_a_retried_put_with_compressed_values_is_logged_once(client: redis.Redis, saver: StreamSaver) -> None:
    checkpoint, new_versions = new_checkpoint({"messages": _conversation(20)})
    first = saver.put(config("t"), checkpoint, {"step": 1}, new_versions)
    again = saver.put(config("t"), checkpoint, {"step": 1}, new_versions)
    saver.put_writes(first, [("messages", _conversation(20))], "task-1")
    saver.put_writes(first, [("messages", _conversation(20))], "task-1")

    assert again == first
    assert client.xlen(saver.core.keys.thread("t").log) == 2


async def test_a_saver_without_compression_reads_what_a_compressing_saver_wrote(
    client: redis.Redis, redis_url: str, prefix: str
) -> None:
    messages = _conversation(20)
    async with open_adapter("async", "full", redis_url, prefix) as writer:
        saved, _ = await writer.save("t", {"messages": messages})
    async with open_adapter("async", "full", redis_url, prefix, compression=None) as reader:
        got = await reader.get_tuple(saved)
        await reader.save("u", {"messages": messages})
    assert got is not None and got.checkpoint["channel_values"] == {"messages": messages}

    keys = StreamSaver(client, prefix=prefix)
    keys.setup()
    [(_, written)] = _log_entries(client, keys, "t")
    assert decode_channel_value(written[b"c:messages"]).blob.type == "zstd:msgpack"
    [(_, fields)] = _log_entries(client, keys, "u")
    assert decode_channel_value(fields[b"c:messages"]).blob == _plain_blob(messages)


@pytest.mark.parametrize(("kind", "view"), VARIANTS, ids=VARIANT_IDS)
async def test_every_variant_stores_and_reads_compressed_values(
    client: redis.Redis, redis_url: str, prefix: str, kind: str, view: str
) -> None:
    messages = _conversation(20)
    both = ("full", "shallow")  # the full view is read below whatever the variant reads
    async with open_adapter(kind, view, redis_url, prefix, projections=both) as saver:
        saved, _ = await saver.save("t", {"messages": messages})
        await saver.put_writes(saved, [("messages", messages)], "task-1")
        got = await saver.get_tuple(saved)
        listed = await saver.list(config("t"))
    assert got is not None and got.checkpoint["channel_values"] == {"messages": messages}
    assert got.pending_writes == [("task-1", "messages", messages)]
    assert [t.checkpoint["channel_values"] for t in listed] == [{"messages": messages}]
    keys = StreamSaver(client, prefix=prefix)
    keys.setup()
    [(_, cfields), (_, wfields)] = _log_entries(client, keys, "t")
    assert decode_channel_value(cfields[b"c:messages"]).blob.type == "zstd:msgpack"
    assert unpack(wfields[b"w:0"])[1] == b"zstd:msgpack"


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
    assert decode_channel_value(fields[b"c:messages"]).blob.type == "msgpack+aes"
    # Ciphertext would not compress anyway; what is checked is that the saver does not try,
    # also on the copy LangGraph makes with `with_allowlist` when a graph is compiled.
    assert saver.core.compress is False
    assert saver.with_allowlist([("my", "Type")]).core.compress is False
    assert StreamSaver(client, prefix=prefix).core.compress is True
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
def test_serde_type_names_that_look_like_markers_round_trip(
    client: redis.Redis, prefix: str, compression: str | None
) -> None:
    saver = StreamSaver(client, prefix=prefix, serde=MarkerLookalikeSerde(), compression=compression)
    saver.setup()
    values = {"short": "s", "long": "x" * (4 * MIN_BYTES), "messages": _conversation(10)}
    saved = _put(saver, "t", values)
    saver.put_writes(saved, [("short", "pending")], "task-1")

    got = saver.get_tuple(saved)
    assert got is not None
    assert got.checkpoint["channel_values"] == values
    assert got.pending_writes == [("task-1", "short", "pending")]


def _rewrite_field(client: redis.Redis, log: str, entry_id: bytes, field: bytes, value: bytes) -> None:
    """Replace one field of one log entry, keeping every id (a stream entry cannot be edited)."""
    entries = client.xrange(log)
    client.delete(log)
    for eid, fields in entries:
        client.xadd(log, {**fields, field: value} if eid == entry_id else fields, id=eid)


def test_a_damaged_compressed_payload_is_reported_with_its_log_entry_never_read_as_other_values(
    client: redis.Redis, saver: StreamSaver
) -> None:
    saved = _put(saver, "t", {"messages": _conversation(20)})
    saver.put_writes(saved, [("messages", _conversation(20))], "task-1")
    log = saver.core.keys.thread("t").log
    [(checkpoint_id, cfields), (writes_id, wfields)] = _log_entries(client, saver, "t")
    # The log is edited by hand below, behind the scripts' back: a saver's read cache would keep
    # serving the entries as it first read them (an entry never changes once written), so the
    # reads go through a saver without one.
    saver = StreamSaver(client, prefix=saver.core.prefix, read_cache_bytes=0)
    channel, version, type_, data = unpack(cfields[b"c:messages"])
    write_channel, write_type, write_data = unpack(wfields[b"w:0"])
    assert type_ == write_type == b"zstd:msgpack"

    # One flipped bit anywhere in a frame: its checksum (or the frame's own structure) fails.
    for position in range(0, len(data), max(1, len(data) // 40)):
        damaged = bytearray(data)
        damaged[position] ^= 0x10
        _rewrite_field(client, log, checkpoint_id, b"c:messages", pack([channel, version, type_, bytes(damaged)]))
        with pytest.raises(PayloadDecodeError, match="compressed payload is corrupt") as caught:
            saver.get_tuple(config("t"))
        assert caught.value.event_id == checkpoint_id.decode()
    _rewrite_field(client, log, checkpoint_id, b"c:messages", cfields[b"c:messages"])

    damaged_write = bytearray(write_data)
    damaged_write[len(damaged_write) // 2] ^= 0x01
    _rewrite_field(client, log, writes_id, b"w:0", pack([write_channel, write_type, bytes(damaged_write)]))
    with pytest.raises(PayloadDecodeError, match="compressed payload is corrupt") as caught:
        saver.get_tuple(config("t"))
    assert caught.value.event_id == writes_id.decode()


def test_an_unknown_compression_is_refused_before_anything_is_written(client: redis.Redis, prefix: str) -> None:
    with pytest.raises(InvalidInputError, match="compression"):
        StreamSaver(client, prefix=prefix, compression="gzip")
    assert not list(client.scan_iter(match=f"{prefix}:*"))


def test_a_subscriber_reading_a_damaged_compressed_payload_gets_an_error_naming_the_entry(
    client: redis.Redis, saver: StreamSaver
) -> None:
    _put(saver, "t", {"messages": _conversation(20)})
    [(entry_id, fields)] = _log_entries(client, saver, "t")
    channel, version, type_, data = unpack(fields[b"c:messages"])
    damaged = {**fields, b"c:messages": pack([channel, version, type_, data[:20] + bytes([data[20] ^ 1]) + data[21:]])}
    keys = saver.core.keys.thread("t")
    event = FeedEvent(
        type_="CheckpointSaved", thread_id="t", checkpoint_ns="", checkpoint_id=fields[b"cid"].decode(),
        partition=0, feed_id="0-1", log_id=entry_id.decode(), log_key=keys.log, deliveries=1,
        serde=JsonPlusSerializer(),
    )
    event.set_entry(damaged)

    with pytest.raises(PayloadDecodeError, match="compressed payload is corrupt") as caught:
        event.payload()
    assert caught.value.event_id == entry_id.decode()
    event.set_entry(fields)
    payload = event.payload()
    assert payload is not None and payload["checkpoint"]["channel_values"] == {"messages": _conversation(20)}


def _claiming(frame: bytes, size: int) -> bytes:
    """`frame` with a header that claims `size` bytes of content (rewritten as an 8-byte size
    field): what a damaged header looks like, the frame's blocks and checksum left as they are."""
    descriptor = frame[4]
    single_segment = descriptor & 0x20
    width = {0: 1 if single_segment else 0, 1: 2, 2: 4, 3: 8}[descriptor >> 6]
    start = 5 if single_segment else 6  # after the window descriptor, when there is one
    return frame[:4] + bytes([descriptor | 0xC0]) + frame[5:start] + size.to_bytes(8, "little") + frame[start + width:]


@pytest.mark.parametrize("claimed", [0, 1 << 40], ids=["empty", "a-terabyte"])
def test_a_frame_whose_header_misstates_its_content_size_is_reported_with_its_log_entry(
    client: redis.Redis, saver: StreamSaver, claimed: int
) -> None:
    """The header's content size is not covered by the checksum: a header claiming no content
    must not read as empty bytes (the checksum never checked), and one claiming more than a frame
    of its length can hold must not be allocated (a MemoryError, not a `PayloadDecodeError`)."""
    value = b"tool output: " + b"0123456789abcdef" * 8192  # `bytes`: the serde stores them as they are
    _put(saver, "t", {"blob": value})
    log = saver.core.keys.thread("t").log
    [(entry_id, fields)] = _log_entries(client, saver, "t")
    channel, version, type_, data = unpack(fields[b"c:blob"])
    assert type_ == b"zstd:bytes"
    saver = StreamSaver(client, prefix=saver.core.prefix, read_cache_bytes=0)  # the log is edited by hand
    _rewrite_field(client, log, entry_id, b"c:blob", pack([channel, version, type_, _claiming(data, len(value))]))
    got = saver.get_tuple(config("t"))
    assert got is not None and got.checkpoint["channel_values"] == {"blob": value}  # the rewrite alone reads

    _rewrite_field(client, log, entry_id, b"c:blob", pack([channel, version, type_, _claiming(data, claimed)]))
    with pytest.raises(PayloadDecodeError, match="compressed payload is corrupt") as caught:
        saver.get_tuple(config("t"))
    assert caught.value.event_id == entry_id.decode()
