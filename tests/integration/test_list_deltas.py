"""A list channel that only grows is stored as deltas; every reader sees the whole value.

The log keeps, for most versions of an append-only msgpack list (LangGraph's ``messages``), only
the elements added since the last full value (the base), linked to the entry holding it, with a
full value every 8 versions (`streamsaver.log.deltas`); logs written before base links hold chains
of links to the version before, which readers still follow. What a reader gets back must be what was put, byte for
byte through the serde; and a delta must never point at something the log does not hold: a
saver whose memory is stale (another writer, a deleted, pruned, copied or restored thread) gets
``SSBASE`` from the append and sends the full value instead.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import redis
from helpers import config, new_checkpoint
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import Checkpoint

from streamsaver import StreamSaver
from streamsaver.checkpoints import reads
from streamsaver.checkpoints.compaction import rewrite_call
from streamsaver.drivers.sync import round_trip
from streamsaver.log import compression, deltas
from streamsaver.log.codec import pack, unpack
from streamsaver.log.events import Blob, ChannelValue, CheckpointSaved
from streamsaver.log.rewrite import decode_log
from streamsaver.log.stored import channel_field

TEXT = " ".join(["agent", "tool", "call", "result", "graph", "node", "message", "redis"] * 12)


def _messages(turns: int, start: int = 0) -> list[Any]:
    out: list[Any] = []
    for turn in range(start, start + turns):
        out += [HumanMessage(f"{turn}: {TEXT}", id=f"h{turn}"), AIMessage(f"{turn}: {TEXT}", id=f"a{turn}")]
    return out


@pytest.fixture
def saver(client: redis.Redis, prefix: str) -> StreamSaver:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    return saver


def _grow(
    saver: StreamSaver, thread: str, steps: int, previous: Checkpoint | None = None, start: int = 0
) -> tuple[list[Any], Checkpoint | None, list[str]]:
    """`steps` puts, each adding two messages; returns the last list, checkpoint and the ids."""
    messages = list(previous["channel_values"]["messages"]) if previous else []
    ids: list[str] = []
    parent_id = previous["id"] if previous else None
    for step in range(start, start + steps):
        messages = messages + _messages(1, step)
        checkpoint, versions = new_checkpoint({"messages": messages, "step": step}, previous)
        saved = saver.put(
            config(thread, "", parent_id), checkpoint, {"step": step, "run_id": f"r{step // 4}"}, versions
        )
        parent_id = saved["configurable"]["checkpoint_id"]
        ids.append(parent_id)
        previous = checkpoint
    return messages, previous, ids


def _stored_types(client: redis.Redis, saver: Any, thread: str) -> list[str]:
    field = channel_field("messages")
    out = []
    for _, fields in client.xrange(saver.core.keys.thread(thread).log):
        if field in fields:
            out.append(unpack(fields[field])[2].decode())
    return out


def test_a_growing_list_is_stored_as_deltas_and_read_back_whole(saver: StreamSaver, client: redis.Redis) -> None:
    messages, _, ids = _grow(saver, "t", 20)
    types = _stored_types(client, saver, "t")
    assert sum(t.startswith("delta:") for t in types) >= 14
    assert all(not t.startswith("delta:") for t in types[::8])  # a full value every 8 versions
    got = saver.get_tuple(config("t"))
    assert got is not None and got.checkpoint["channel_values"]["messages"] == messages
    listed = list(saver.list(config("t")))
    assert [len(t.checkpoint["channel_values"]["messages"]) for t in listed] == [2 * n for n in range(20, 0, -1)]
    for n, cid in enumerate(ids):
        one = saver.get_tuple(config("t", "", cid))
        assert one is not None and one.checkpoint["channel_values"]["messages"] == messages[: 2 * (n + 1)]


def _whole_history(saver: StreamSaver, thread: str) -> list[list[Any]]:
    return [t.checkpoint["channel_values"]["messages"] for t in saver.list(config(thread))]


def _expected(steps: int) -> list[list[Any]]:
    return [_messages(n) for n in range(steps, 0, -1)]


def test_a_stale_link_is_refused_and_the_full_value_sent_instead(client: redis.Redis, prefix: str) -> None:
    writer, other = StreamSaver(client, prefix=prefix), StreamSaver(client, prefix=prefix)
    writer.setup()
    _, last, _ = _grow(writer, "t", 3)
    other.delete_thread("t")  # what `writer` remembers of the thread is gone
    _grow(writer, "t", 2, last, 3)  # extends what `writer` remembers: a delta, refused
    assert _stored_types(client, writer, "t")[0] in ("msgpack", "zstd:msgpack")
    assert _whole_history(writer, "t") == [_messages(5), _messages(4)]


def test_a_delta_is_refused_when_its_link_was_rewritten_to_hold_another_value(client: redis.Redis, prefix: str) -> None:
    writer = StreamSaver(client, prefix=prefix)
    writer.setup()
    _, last, _ = _grow(writer, "t", 2)  # a base, then a delta linked to it: the writer links the next one there too
    log = writer.core.keys.thread("t").log
    entries = decode_log(client.xrange(log))
    base_id, base = entries[0]
    assert isinstance(base, CheckpointSaved)
    # A log rewritten under its own ids (as a prune keeps a removed checkpoint's entry) whose
    # remembered entry now holds another version of the channel: a delta linked to it would
    # join into the wrong list.
    other = tuple(
        ChannelValue(v.channel, "other", v.blob) if v.channel == "messages" else v for v in base.values
    )
    rewritten = [(base_id, dataclasses.replace(base, values=other)), *entries[1:]]
    round_trip(client, [rewrite_call(
        writer.core.keys, writer.core.projections, "t", guard=entries[-1][0], replace_log=True, entries=rewritten,
        pointers=False,
    )])
    _, _, ids = _grow(writer, "t", 1, last, 2)
    assert not _stored_types(client, writer, "t")[-1].startswith("delta:")
    got = writer.get_tuple(config("t", "", ids[0]))
    assert got is not None and got.checkpoint["channel_values"]["messages"] == _messages(3)


def test_a_new_saver_with_nothing_remembered_stores_a_full_value_and_continues(
    client: redis.Redis, prefix: str
) -> None:
    first = StreamSaver(client, prefix=prefix)
    first.setup()
    _, last, _ = _grow(first, "t", 3)
    second = StreamSaver(client, prefix=prefix)
    _grow(second, "t", 3, last, 3)
    types = _stored_types(client, second, "t")
    assert not types[3].startswith("delta:") and types[4].startswith("delta:")
    assert _whole_history(second, "t") == _expected(6)


def test_without_deltas_every_value_is_whole(client: redis.Redis, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix, deltas=False)
    saver.setup()
    _grow(saver, "t", 5)
    assert not any(t.startswith("delta:") for t in _stored_types(client, saver, "t"))


@pytest.mark.parametrize("strategy", ["prune", "retain", "runs"])
def test_compacting_a_log_keeps_every_surviving_value_readable_and_puts_go_on(
    saver: StreamSaver, client: redis.Redis, strategy: str
) -> None:
    _, last, _ = _grow(saver, "t", 12)
    if strategy == "prune":
        saver.prune(["t"])
        survivors = 1
    elif strategy == "retain":
        saver.retain(["t"], keep_last=3)
        survivors = 3
    else:
        saver.delete_for_runs(["r0"])  # steps 0-3: step 0 is the base the deltas of steps 4-7 link to
        survivors = 8
    assert _whole_history(saver, "t") == _expected(12)[:survivors]
    _grow(saver, "t", 2, last, 12)  # the remembered links may be gone: SSBASE, then full values
    assert _whole_history(saver, "t")[:3] == _expected(14)[:3]


@pytest.mark.parametrize("compress", ["zstd", None])
def test_a_rewrite_stores_joined_values_compressed_only_as_the_writer_did(
    client: redis.Redis, prefix: str, compress: str | None
) -> None:
    saver = StreamSaver(client, prefix=prefix, compression=compress)
    saver.setup()
    _grow(saver, "t", 12)
    saver.delete_for_runs(["r0"])  # drops the base of the deltas of steps 4-7: they are stored whole
    saver.copy_thread("t", "copy")  # every delta is stored whole under new ids
    for thread in ("t", "copy"):
        types = _stored_types(client, saver, thread)
        assert any(t.startswith("zstd:") for t in types) == (compress is not None)
        assert _whole_history(saver, thread) == _expected(12)[:8]


def test_copy_and_restore_store_whole_values(saver: StreamSaver, client: redis.Redis) -> None:
    from streamsaver.ops.restore import restore_thread

    _grow(saver, "t", 10)
    saver.copy_thread("t", "copy")
    assert not any(t.startswith("delta:") for t in _stored_types(client, saver, "copy"))
    assert _whole_history(saver, "copy") == _expected(10)
    [(last_id, _)] = client.xrevrange(saver.core.keys.thread("t").log, count=1)
    restore_thread(saver, "t", at=last_id.decode(), into="restored")
    assert _whole_history(saver, "restored") == _expected(10)


def test_shallow_history_subscribers_export_and_verify_read_deltas(
    saver: StreamSaver, client: redis.Redis, prefix: str, tmp_path: Any
) -> None:
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from streamsaver.feeds.event import FeedEvent
    from streamsaver.ops.transfer import export_logs, import_logs
    from streamsaver.ops.verify import verify

    client.hset(saver.core.keys.meta, "views", "full,shallow")  # the shallow view is read too
    saver = StreamSaver(client, prefix=prefix)
    messages, _, _ = _grow(saver, "t", 10)
    shallow = StreamSaver(client, prefix=prefix, view="shallow")
    got = shallow.get_tuple(config("t"))
    assert got is not None and got.checkpoint["channel_values"]["messages"] == messages
    history = saver.get_delta_channel_history(config=config("t"), channels=["messages"])
    assert history["messages"].get("seed") == _messages(9)

    log = saver.core.keys.thread("t").log

    class Source:
        def fetch_entry(self, log_key: str, log_id: str) -> dict[bytes, bytes]:
            found = client.xrange(log_key, log_id, log_id)
            return found[0][1] if found else {}

        async def afetch_entry(self, log_key: str, log_id: str) -> dict[bytes, bytes]:
            return self.fetch_entry(log_key, log_id)

    [(last_id, fields)] = client.xrevrange(log, count=1)
    assert unpack(fields[channel_field("messages")])[2].startswith(b"delta:")
    event = FeedEvent(
        type_="CheckpointSaved", thread_id="t", checkpoint_ns="", checkpoint_id=fields[b"cid"].decode(),
        partition=0, feed_id="0-1", log_id=last_id.decode(), log_key=log, deliveries=1,
        serde=JsonPlusSerializer(), source=Source(),
    )
    payload = event.payload()
    assert payload is not None and payload["checkpoint"]["channel_values"]["messages"] == messages

    assert verify(client, prefix).matches
    export_logs(client, prefix, tmp_path / "logs.jsonl.gz")
    imported = import_logs(client, tmp_path / "logs.jsonl.gz", prefix=f"{prefix}-imported")
    copy = StreamSaver(client, prefix=imported.prefix)
    assert _whole_history(copy, "t") == _expected(10)


async def test_the_async_saver_writes_and_reads_deltas(client: redis.Redis, aclient: Any, prefix: str) -> None:
    from streamsaver import AsyncStreamSaver

    saver = AsyncStreamSaver(aclient, prefix=prefix)
    await saver.setup()
    messages: list[Any] = []
    previous = None
    parent = None
    for step in range(10):
        messages = messages + _messages(1, step)
        checkpoint, versions = new_checkpoint({"messages": messages}, previous)
        parent = (await saver.aput(config("t", "", parent), checkpoint, {}, versions))["configurable"]["checkpoint_id"]
        previous = checkpoint
    got = await saver.aget_tuple(config("t"))
    assert got is not None and got.checkpoint["channel_values"]["messages"] == messages
    assert sum(t.startswith("delta:") for t in _stored_types(client, saver, "t")) >= 7


def test_a_retried_put_of_a_delta_is_logged_once(saver: StreamSaver, client: redis.Redis) -> None:
    _, last, ids = _grow(saver, "t", 3)
    assert last is not None
    log = saver.core.keys.thread("t").log
    length = client.xlen(log)
    # The same checkpoint again (a retry after a lost reply): the same delta, a repeat.
    parent = saver.get_tuple(config("t", "", ids[-1]))
    assert parent is not None and parent.parent_config is not None
    versions = {"messages": last["channel_versions"]["messages"], "step": last["channel_versions"]["step"]}
    again = saver.put(parent.parent_config, last, {"step": 2, "run_id": "r0"}, versions)
    assert again["configurable"]["checkpoint_id"] == ids[-1]
    assert client.xlen(log) == length


def _by_id(saver: StreamSaver, thread: str, ns: str, cid: str) -> tuple[Any, ...]:
    got = saver.get_tuple(config(thread, ns, cid))
    assert got is not None, (thread, ns, cid)
    parent = got.parent_config["configurable"]["checkpoint_id"] if got.parent_config else None
    return got.checkpoint["channel_values"], got.metadata, parent, got.pending_writes


def test_a_fork_in_time_of_a_delta_thread_reads_as_its_source_and_both_go_on(
    saver: StreamSaver, client: redis.Redis, prefix: str
) -> None:
    _, last, ids = _grow(saver, "src", 12)
    # late writes to checkpoints before the fork point, logged after later checkpoints
    for n in (2, 5):
        saver.put_writes(config("src", "", ids[n]), [("messages", [f"late{n}"])], f"task{n}")
    other = StreamSaver(client, prefix=prefix)  # a second process forks
    other.copy_thread("src", "fork", until=ids[6])
    assert [t.config["configurable"]["checkpoint_id"] for t in saver.list(config("fork"))] == ids[6::-1]
    for cid in ids[:7]:
        assert _by_id(saver, "fork", "", cid) == _by_id(saver, "src", "", cid)
    # both threads go on, each from its own head, by both savers: no delta links across threads
    fork_head = saver.get_tuple(config("fork"))
    assert fork_head is not None
    _, _, fork_ids = _grow(other, "fork", 3, fork_head.checkpoint, 7)
    _, _, src_ids = _grow(saver, "src", 3, last, 12)
    _, _, fork_ids2 = _grow(saver, "fork", 3, saver.get_tuple(config("fork")).checkpoint, 10)  # type: ignore[union-attr]
    assert any(t.startswith("delta:") for t in _stored_types(client, saver, "fork")[7:]), "the fork goes on in deltas"
    for thread in ("src", "fork"):
        log = saver.core.keys.thread(thread).log
        own = {entry_id for entry_id, _ in client.xrange(log)}
        for _, fields in client.xrange(log):
            for key, value in fields.items():
                if key.startswith(b"c:"):
                    _, _, type_, data = unpack(value)
                    if type_.startswith(b"delta:"):
                        assert unpack(data)[0] in own, f"a delta of {thread} links outside its log"
    assert _whole_history(saver, "fork") == _expected(13)
    assert _whole_history(saver, "src") == _expected(15)
    listed = {(t.config["configurable"]["thread_id"], t.config["configurable"]["checkpoint_id"]): t
              for t in saver.list(None)}
    for thread, cids in (("src", ids + src_ids), ("fork", ids[:7] + fork_ids + fork_ids2)):
        for cid in cids:
            one = listed[(thread, cid)]
            values, metadata, _parent, writes = _by_id(saver, thread, "", cid)
            assert (one.checkpoint["channel_values"], one.metadata, one.pending_writes) == (values, metadata, writes)


def test_the_history_of_a_delta_channel_equals_the_base_class_walk(saver: StreamSaver) -> None:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    _, _, ids = _grow(saver, "t", 12)
    for n in (3, 9):
        saver.put_writes(config("t", "", ids[n]), [("messages", [f"w{n}"]), ("step", n)], f"task{n}")
    for cid in (None, ids[11], ids[8], ids[1]):
        cfg = config("t", "", cid)
        native = saver.get_delta_channel_history(config=cfg, channels=["messages", "step"])
        walked = BaseCheckpointSaver.get_delta_channel_history(saver, config=cfg, channels=["messages", "step"])
        assert native == walked, cid


@pytest.mark.parametrize("strategy", ["prune", "runs"])
def test_subscriber_payloads_after_a_compaction_are_whole_or_gone(
    saver: StreamSaver, client: redis.Redis, strategy: str
) -> None:
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from streamsaver.feeds.event import FeedEvent

    _, _, ids = _grow(saver, "t", 14)
    log = saver.core.keys.thread("t").log
    before = [
        (entry_id.decode(), fields[b"cid"].decode())
        for entry_id, fields in client.xrange(log)
        if b"cid" in fields and channel_field("messages") in fields
    ]
    if strategy == "prune":
        saver.prune(["t"])
        survivors = {ids[-1]}
    else:
        saver.delete_for_runs(["r0", "r2"])  # steps 0-3 and 8-11
        survivors = set(ids[4:8] + ids[12:])

    class Source:
        def fetch_entry(self, log_key: str, log_id: str) -> dict[bytes, bytes]:
            found = client.xrange(log_key, log_id, log_id)
            return found[0][1] if found else {}

        async def afetch_entry(self, log_key: str, log_id: str) -> dict[bytes, bytes]:
            return self.fetch_entry(log_key, log_id)

    for step, (entry_id, cid) in enumerate(before):
        event = FeedEvent(
            type_="CheckpointSaved", thread_id="t", checkpoint_ns="", checkpoint_id=cid, partition=0,
            feed_id="0-1", log_id=entry_id, log_key=log, deliveries=1, serde=JsonPlusSerializer(), source=Source(),
        )
        payload = event.payload()
        if cid in survivors:
            assert payload is not None and payload["checkpoint"]["channel_values"]["messages"] == _messages(step + 1)
        else:
            assert payload is None, step


def _channel_entries(client: redis.Redis, saver: Any, thread: str) -> list[tuple[str, dict[bytes, bytes], list[bytes]]]:
    """(entry id, fields, the unpacked stored field of `messages`) of each entry holding it."""
    field = channel_field("messages")
    return [
        (entry_id.decode(), fields, unpack(fields[field]))
        for entry_id, fields in client.xrange(saver.core.keys.thread(thread).log)
        if field in fields
    ]


def test_every_delta_links_to_its_base_and_a_read_follows_one_link(saver: StreamSaver, client: redis.Redis) -> None:
    messages, _, ids = _grow(saver, "t", 10)
    entries = _channel_entries(client, saver, "t")
    # The 8th version (7 deltas after its base): the read script returns exactly one link, the
    # base's entry (the chain before base links: 7).
    [row] = client.execute_command(*reads.get_request(saver.core.keys, "full", config("t", "", ids[7])))
    assert [entry for entry, _ in reads.links_of(row[4])] == [entries[0][0].encode()]
    got = saver.get_tuple(config("t", "", ids[7]))
    assert got is not None and got.checkpoint["channel_values"]["messages"] == messages[:16]
    base = ""
    for entry_id, _, (_, _, type_, data) in entries:
        if not deltas.is_delta(type_.decode()):
            base = entry_id
        else:
            assert deltas.split(type_.decode(), data).link == base  # the last full value's entry


def _rechain(client: redis.Redis, saver: StreamSaver, thread: str) -> list[str]:
    """Rewrite the deltas of `thread`'s log as writers before base links stored them: each
    against the version before, a chain of up to 7 links (same ids, so the views still point at
    them). Returns the links, in log order."""
    log = saver.core.keys.thread(thread).log
    field = channel_field("messages")
    entries = _channel_entries(client, saver, thread)
    held = {entry_id: fields[field] for entry_id, fields, _ in entries}
    whole = {e: compression.joined(Blob(t.decode(), d), held.get) for e, _, (_, _, t, d) in entries}
    rewritten: dict[str, dict[bytes, bytes]] = {}
    previous: tuple[str, bytes, bytes, int] | None = None  # entry, version, stored field, header length
    for entry_id, fields, (channel, version, type_, _) in entries:
        count, start = deltas.read_header(whole[entry_id].data)  # type: ignore[misc]
        stored = fields[field]
        if deltas.is_delta(type_.decode()) and previous is not None:
            link, link_version, link_field, link_start = previous
            added = whole[entry_id].data[start + len(whole[link].data) - link_start :]
            dtype, ddata = deltas.encode(link, link_version, len(link_field), count, "msgpack", added)
            stored = pack([channel, version, dtype.encode(), ddata])
        rewritten[entry_id] = {**fields, field: stored}
        previous = (entry_id, version, stored, start)
    all_entries = client.xrange(log)
    client.delete(log)
    for entry_id, fields in all_entries:
        client.xadd(log, rewritten.get(entry_id.decode(), fields), id=entry_id)
    links = [
        deltas.split(t.decode(), d).link
        for _, _, (_, _, t, d) in _channel_entries(client, saver, thread)
        if deltas.is_delta(t.decode())
    ]
    assert links == [e for e, _, _ in entries[:7]] + [entries[8][0]]  # a chain, 7 links long at the 8th version
    return links


def test_chains_of_links_to_the_version_before_stay_readable(saver: StreamSaver, client: redis.Redis) -> None:
    messages, _, ids = _grow(saver, "t", 10)
    _rechain(client, saver, "t")
    for n, cid in enumerate(ids):
        one = saver.get_tuple(config("t", "", cid))
        assert one is not None and one.checkpoint["channel_values"]["messages"] == messages[: 2 * (n + 1)]
    assert _whole_history(saver, "t") == _expected(10)


def test_a_page_holding_a_base_and_its_deltas_decompresses_each_payload_once(
    saver: StreamSaver, client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    messages, _, _ = _grow(saver, "t", 12)
    types = _stored_types(client, saver, "t")
    assert types[8].startswith("zstd:") and types[9].startswith("delta:"), "a compressed base, then deltas on it"
    frames: list[bytes] = []
    real = compression._decompress
    monkeypatch.setattr(compression, "_decompress", lambda data: frames.append(data) or real(data))
    listed = list(saver.list(config("t"), limit=5))
    assert [len(t.checkpoint["channel_values"]["messages"]) for t in listed] == [24, 22, 20, 18, 16]
    assert listed[0].checkpoint["channel_values"]["messages"] == messages
    assert len(frames) == len(set(frames)), "the base, a row's own value too, is expanded once a read"


@pytest.mark.parametrize("batch", [1, 100], ids=["batch-1", "batch-100"])
def test_a_prefetching_subscriber_reads_delta_links_with_its_batch(
    saver: StreamSaver, client: redis.Redis, prefix: str, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    """With ``prefetch=True`` the entries a batch's deltas link to are read with the batch (the
    base is often an earlier event of the same batch): a handler's `payload` reads nothing."""
    from streamsaver.feeds.event import FeedEvent
    from streamsaver.feeds.subscriber import Subscriber

    _grow(saver, "t", 12)
    assert sum(t.startswith("delta:") for t in _stored_types(client, saver, "t")) >= 8
    reads = _counting_fetches(monkeypatch)
    payloads: list[Any] = []

    def handle(event: FeedEvent) -> None:
        if event.type == "CheckpointSaved":
            payload = event.payload()
            assert payload is not None
            payloads.append(payload["checkpoint"]["channel_values"]["messages"])

    stats = Subscriber(client, "audit", handle, prefix=prefix, prefetch=True, batch=batch).run_burst()
    assert stats.failed == 0 and stats.dead == 0
    assert payloads == [_messages(n) for n in range(1, 13)]
    assert reads == []
    # the same handler without prefetch reads each entry and each link on demand
    Subscriber(client, "on-demand", handle, prefix=prefix, batch=batch).run_burst()
    assert payloads[12:] == payloads[:12] and len(reads) > 12


def test_a_rewrite_by_a_compressing_writer_compresses_a_large_joined_value_whose_base_was_small(
    client: redis.Redis, prefix: str
) -> None:
    # The base of steps 4-7 (step 0: two messages) is below compression.MIN_BYTES, so the
    # writer stored it uncompressed; the values re-joined when it is dropped are large: the
    # writer would have compressed them, and a rewrite stores them as the writer would.
    saver = StreamSaver(client, prefix=prefix, compression="zstd")
    saver.setup()
    _grow(saver, "t", 12)
    entries = _channel_entries(client, saver, "t")
    held = {entry_id: fields[channel_field("messages")] for entry_id, fields, _ in entries}
    assert not entries[0][2][2].startswith(b"zstd:"), "a small base, stored as it is"
    rejoined = {
        entry_id: compression.joined(Blob(type_.decode(), data), held.get)
        for entry_id, _, (_, _, type_, data) in entries[4:8]
    }
    expected = {entry_id: compression.shrink(whole).type for entry_id, whole in rejoined.items()}
    assert all(t.startswith("zstd:") for t in expected.values()), "what the writer stores for these values"
    saver.delete_for_runs(["r0"])  # drops the base of the deltas of steps 4-7: they are stored whole
    after = {entry_id: type_.decode() for entry_id, _, (_, _, type_, _) in _channel_entries(client, saver, "t")}
    assert {entry_id: after[entry_id] for entry_id in rejoined} == expected
    assert _whole_history(saver, "t") == _expected(12)[:8]


@pytest.mark.parametrize("prefetch", [True, False], ids=["prefetch", "on-demand"])
def test_a_base_whose_stored_type_is_not_text_fails_the_payloads_of_its_deltas_not_the_batch(
    saver: StreamSaver, client: redis.Redis, prefix: str, prefetch: bool
) -> None:
    """A damaged base (its stored type not UTF-8): each handler's `payload` reports it as a
    `PayloadDecodeError` naming its entry; the prefetching subscriber's link scan does not fail
    the batch (the handler is where a damaged entry is reported)."""
    from streamsaver.errors import EventDecodeError, PayloadDecodeError
    from streamsaver.feeds.event import FeedEvent
    from streamsaver.feeds.subscriber import Subscriber

    _grow(saver, "t", 3)
    log = saver.core.keys.thread("t").log
    field = channel_field("messages")
    entries = _channel_entries(client, saver, "t")
    base_id, _, (channel, version, _, data) = entries[0]
    assert all(deltas.split(t.decode(), d).link == base_id for _, _, (_, _, t, d) in entries[1:])
    all_entries = client.xrange(log)
    client.delete(log)
    for entry_id, fields in all_entries:
        if entry_id.decode() == base_id:
            client.xadd(log, {**fields, field: pack([channel, version, b"\xff\xfe", data])}, id=entry_id)
        else:
            client.xadd(log, fields, id=entry_id)
    outcomes: dict[str, str] = {}

    def handle(event: FeedEvent) -> None:
        if event.type == "CheckpointSaved":
            try:
                event.payload()
            except EventDecodeError as exc:
                outcomes[event.log_id] = type(exc).__name__ if exc.event_id == event.log_id else "wrong event id"
            else:
                outcomes[event.log_id] = "ok"

    stats = Subscriber(client, "audit", handle, prefix=prefix, prefetch=prefetch).run_burst()
    assert stats.failed == 0 and stats.dead == 0
    assert outcomes[base_id] in ("EventDecodeError", "PayloadDecodeError")
    assert {outcomes[entry_id] for entry_id, _, _ in entries[1:]} == {PayloadDecodeError.__name__}


def _counting_fetches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from streamsaver.feeds.subscriber import Subscriber

    reads: list[str] = []
    on_demand = Subscriber.fetch_entry

    def counted(self: Subscriber, log_key: str, log_id: str) -> Any:
        reads.append(log_id)
        return on_demand(self, log_key, log_id)

    monkeypatch.setattr(Subscriber, "fetch_entry", counted)
    return reads


@pytest.mark.parametrize("batch", [1, 3, 100], ids=["batch-1", "batch-3", "batch-100"])
def test_a_prefetching_subscriber_reads_old_chains_and_threads_sharing_ids_with_its_batch(
    saver: StreamSaver, client: redis.Redis, prefix: str, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    """Chains of several links (old writers) are read level by level with the batch; threads
    whose log entries share ids (a copy, an import) each read their own log's links."""
    from streamsaver.feeds.event import FeedEvent
    from streamsaver.feeds.subscriber import Subscriber

    _grow(saver, "old", 10)
    _rechain(client, saver, "old")
    # "twin": whole values, its log entries renumbered to the ids of "old"'s (its pointers too)
    whole = StreamSaver(client, prefix=prefix, deltas=False)
    _grow(whole, "twin", 10, start=100)
    keys = saver.core.keys.thread("twin")
    old_ids = [e for e, _ in client.xrange(saver.core.keys.thread("old").log)]
    twin_entries = client.xrange(keys.log)
    assert len(old_ids) == len(twin_entries) == 10
    renumbered = {e.decode(): new.decode() for (e, _), new in zip(twin_entries, old_ids, strict=True)}
    client.delete(keys.log)
    for (_, fields), new in zip(twin_entries, old_ids, strict=True):
        client.xadd(keys.log, fields, id=new)
    for pointer_id, fields in client.xrange(keys.feed):
        if fields[b"thread"] == b"twin":
            client.xdel(keys.feed, pointer_id)
            client.xadd(keys.feed, {**fields, b"id": renumbered[fields[b"id"].decode()].encode()})
    reads = _counting_fetches(monkeypatch)
    payloads: dict[str, list[Any]] = {"old": [], "twin": []}

    def handle(event: FeedEvent) -> None:
        if event.type == "CheckpointSaved":
            payload = event.payload()
            assert payload is not None
            payloads[event.thread_id].append(payload["checkpoint"]["channel_values"]["messages"])

    stats = Subscriber(client, "audit", handle, prefix=prefix, prefetch=True, batch=batch).run_burst()
    assert stats.failed == 0 and stats.dead == 0
    assert payloads["old"] == [_messages(n) for n in range(1, 11)]
    assert payloads["twin"] == [_messages(n, 100) for n in range(1, 11)]
    assert reads == []
