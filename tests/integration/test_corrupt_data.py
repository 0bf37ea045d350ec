"""Corrupt data in a log hurts only what reads it, and says which log entry is at fault.

* An unknown or malformed event appended to a log (by hand, or by a newer streamsaver) is not in
  any view: every thread, that one included, still reads as before; the projector worker
  dead-letters it naming the entry, and goes on; replay and verify stop on it with an
  `EventDecodeError` naming the entry.
* A payload a view points at that is corrupt or gone (a damaged entry, an entry deleted by hand)
  fails only the reads of that checkpoint, with a `PayloadDecodeError` naming the entry; other
  checkpoints of the thread and other threads read as before.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis
from helpers import KINDS, VARIANT_IDS, VARIANTS, SaverAdapter, config, open_adapter

from streamsaver.errors import EventDecodeError, PayloadDecodeError
from streamsaver.feeds.worker import ProjectorWorker
from streamsaver.log.codec import pack
from streamsaver.log.keys import Keyspace
from streamsaver.ops.verify import verify


@pytest.fixture(params=VARIANTS, ids=VARIANT_IDS)
async def saver(request: pytest.FixtureRequest, redis_url: str, prefix: str) -> AsyncIterator[SaverAdapter]:
    kind, view = request.param
    async with open_adapter(kind, view, redis_url, prefix) as adapter:
        yield adapter


async def _two_threads(saver: SaverAdapter) -> dict[str, list[str]]:
    """Threads "sick" and "well", two checkpoints each (the second with writes); their ids."""
    ids: dict[str, list[str]] = {}
    for thread in ("sick", "well"):
        first, cp = await saver.save(thread, {"n": 1, "text": f"{thread} one"})
        second, _ = await saver.save(thread, {"n": 2}, parent=first, previous=cp)
        await saver.put_writes(second, [("n", 3)], "task")
        ids[thread] = [first["configurable"]["checkpoint_id"], second["configurable"]["checkpoint_id"]]
    return ids


async def _reads(saver: SaverAdapter, thread: str) -> list[object]:
    latest = await saver.get_tuple(config(thread))
    listed = await saver.list(config(thread))
    return [latest and (latest.checkpoint["channel_values"], latest.pending_writes), [t.config for t in listed]]


def _rewrite_entry(client: redis.Redis, log: bytes | str, entry_id: bytes, field: bytes, value: bytes) -> None:
    """Replace one field of one log entry, keeping every id (a stream entry cannot be edited)."""
    entries = client.xrange(log)
    client.delete(log)
    for eid, fields in entries:
        if eid == entry_id:
            fields[field] = value
        client.xadd(log, fields, id=eid)


def _forget(saver: SaverAdapter, log: str) -> None:
    """Damage done behind the scripts' back is not seen by a saver holding the entry (its read
    cache: entries never change once written; the saver holds what it wrote from its first put),
    so the tests read as a saver that holds none of the thread."""
    if saver.saver.core.entries is not None:
        saver.saver.core.entries.forget(log)


def _body_entry(client: redis.Redis, log: str, checkpoint_id: str) -> bytes:
    return next(eid for eid, f in client.xrange(log) if f.get(b"cid") == checkpoint_id.encode() and b"body" in f)


async def test_foreign_events_in_a_log_leave_every_reader_working(
    saver: SaverAdapter, client: redis.Redis, prefix: str
) -> None:
    await _two_threads(saver)
    before = {t: await _reads(saver, t) for t in ("sick", "well")}
    log = saver.saver.core.keys.thread("sick").log
    client.xadd(log, {"type": "CheckpointMerged", "v": "1", "thread": "sick"})
    client.xadd(log, {"type": "CheckpointSaved", "v": "7", "thread": "sick"})
    client.xadd(log, {"type": "CheckpointSaved", "v": "1", "thread": "sick", "body": "x"})

    assert {t: await _reads(saver, t) for t in ("sick", "well")} == before
    assert len(await saver.list(None)) == (4 if saver.view == "full" else 2)


def test_the_worker_dead_letters_foreign_events_naming_them_and_replay_stops_on_them(
    client: redis.Redis, prefix: str
) -> None:
    from helpers import new_checkpoint

    from streamsaver import StreamSaver

    saver = StreamSaver(client, prefix=prefix, projections=["full"], view="full")
    saver.setup()
    cp, versions = new_checkpoint({"n": 1})
    saver.put(config("sick"), cp, {}, versions)
    keys = Keyspace(prefix, saver.core.keys.partitions).thread("sick")
    bad = [
        client.xadd(keys.log, {"type": "CheckpointMerged", "v": "1", "thread": "sick"}),
        client.xadd(keys.log, {"type": "CheckpointSaved", "v": "7", "thread": "sick"}),
    ]
    fed = [client.xadd(keys.feed, {"id": entry, "type": "CheckpointSaved", "thread": "sick"}) for entry in bad]

    stats = ProjectorWorker(client, prefix, ["shallow"], name="w").run_burst()

    assert stats.dead == 2 and stats.applied == 1
    dead = client.xrange(saver.core.keys.dead_letters("shallow"))
    # `id` is the log entry (from the feed pointer), `entry` the feed entry: equal only when
    # both streams happened to be written in the same millisecond.
    assert [(f[b"id"], f[b"entry"]) for _, f in dead] == list(zip(bad, fed, strict=True))
    assert b"unknown event type 'CheckpointMerged'" in dead[0][1][b"error"]
    assert b"newer than this streamsaver reads" in dead[1][1][b"error"]
    with pytest.raises(EventDecodeError) as caught:
        verify(client, prefix, ["full"])
    assert caught.value.event_id == bad[0].decode()


@pytest.mark.parametrize(
    "damage",
    [b"\x00\x00\x00\x09truncated", pack([b"msgpack", b"\xc1\xc1 not msgpack"]), pack([b"nosuchtype", b"{}"])],
    ids=["truncated", "garbage", "unknown-serde-type"],
)
async def test_a_corrupt_body_fails_only_its_checkpoint_naming_the_entry(
    saver: SaverAdapter, client: redis.Redis, damage: bytes
) -> None:
    ids = await _two_threads(saver)
    well = await _reads(saver, "well")
    log = saver.saver.core.keys.thread("sick").log
    entry = _body_entry(client, log, ids["sick"][1])
    _rewrite_entry(client, log, entry, b"body", damage)
    _forget(saver, log)

    with pytest.raises(PayloadDecodeError) as caught:
        await saver.get_tuple(config("sick"))
    assert caught.value.event_id == entry.decode()
    assert ids["sick"][1] in str(caught.value) and entry.decode() in str(caught.value)
    assert await _reads(saver, "well") == well
    if saver.view == "full":
        older = await saver.get_tuple(config("sick", "", ids["sick"][0]))
        assert older is not None and older.checkpoint["channel_values"] == {"n": 1, "text": "sick one"}


async def test_a_corrupt_write_or_a_deleted_entry_is_named(saver: SaverAdapter, client: redis.Redis) -> None:
    ids = await _two_threads(saver)
    log = saver.saver.core.keys.thread("sick").log
    writes_entry = next(eid for eid, f in client.xrange(log) if f[b"type"] == b"WritesSaved")
    _rewrite_entry(client, log, writes_entry, b"w:0", b"\xff")
    _forget(saver, log)

    with pytest.raises(PayloadDecodeError) as caught:
        await saver.get_tuple(config("sick"))
    assert caught.value.event_id == writes_entry.decode()

    body = _body_entry(client, log, ids["sick"][1])
    client.xdel(log, body)
    _forget(saver, log)
    with pytest.raises(PayloadDecodeError, match="holds no body") as gone:
        await saver.get_tuple(config("sick"))
    assert gone.value.event_id == body.decode()
    assert (await saver.get_tuple(config("well"))) is not None


@pytest.mark.parametrize("kind", KINDS)
async def test_a_corrupt_value_or_write_on_the_delta_history_walk_is_named(
    kind: str, redis_url: str, prefix: str, client: redis.Redis
) -> None:
    """`get_delta_channel_history` (read_history.lua, full view only) names the entry of a seed
    or write it cannot decode, as `get_tuple` does."""
    async with open_adapter(kind, "full", redis_url, prefix) as saver:
        await _walk_corrupt_history(saver, client)


async def _walk_corrupt_history(saver: SaverAdapter, client: redis.Redis) -> None:
    first, cp = await saver.save("sick", {"n": 1})
    second, cp = await saver.save("sick", {"n": 2}, parent=first, previous=cp)
    await saver.put_writes(second, [("n", 3)], "task")
    third, _ = await saver.save("sick", {"n": 4}, parent=second, previous=cp)
    log = saver.saver.core.keys.thread("sick").log

    async def history() -> object:
        if saver.is_async:
            return await saver.saver.aget_delta_channel_history(config=third, channels=["n"])
        return saver.saver.get_delta_channel_history(config=third, channels=["n"])

    assert await history() == {"n": {"seed": 2, "writes": [("task", "n", 3)]}}
    writes_entry = next(eid for eid, f in client.xrange(log) if f[b"type"] == b"WritesSaved")
    _rewrite_entry(client, log, writes_entry, b"w:0", b"\xff")
    _forget(saver, log)
    with pytest.raises(PayloadDecodeError) as bad_write:
        await history()
    assert bad_write.value.event_id == writes_entry.decode()

    client.xdel(log, writes_entry)
    seed_entry = _body_entry(client, log, second["configurable"]["checkpoint_id"])
    for damage in (b"\x00\x00\x00\x09truncated", pack([b"n", b'"v"', b"nosuchtype", b"{}"])):
        _rewrite_entry(client, log, seed_entry, b"c:n", damage)
        _forget(saver, log)
        with pytest.raises(PayloadDecodeError) as bad_seed:
            await history()
        assert bad_seed.value.event_id == seed_entry.decode()


@pytest.mark.parametrize(
    ("field", "damage"),
    [
        (b"body", b"\x00\x00\x00\x09short"),  # a part past the end
        (b"body", pack([b"msgpack", b"{}"]) + b"\x00"),  # a byte after the last part
        (b"c:n", pack([b"n", b"1", b"msgpack"])),  # 3 parts where a value has 4
        (b"c:n", pack([b"n", b"1", b"msgpack", b"x"])[:-2]),  # the payload cut short
        (b"w:0", pack([b"n", b"msgpack", b"x", b"y"])),  # 4 parts where a write has 3
        (b"w:0", b"\x00\x00"),  # a truncated length prefix
    ],
    ids=["body-past-end", "body-extra-byte", "value-3-parts", "value-cut", "write-4-parts", "write-prefix"],
)
def test_verify_reading_without_payloads_still_refuses_a_corrupt_packing_naming_its_entry(
    client: redis.Redis, prefix: str, field: bytes, damage: bytes
) -> None:
    from helpers import new_checkpoint

    from streamsaver import StreamSaver

    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    cp, versions = new_checkpoint({"n": 1})
    saved = saver.put(config("sick"), cp, {}, versions)
    saver.put_writes(saved, [("n", 2)], "task")
    log = saver.core.keys.thread("sick").log
    entry = next(eid for eid, f in client.xrange(log) if field in f)
    _rewrite_entry(client, log, entry, field, damage)

    with pytest.raises(EventDecodeError, match="malformed") as caught:
        verify(client, prefix)
    assert caught.value.event_id == entry.decode()
