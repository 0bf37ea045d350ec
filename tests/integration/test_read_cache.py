"""The read cache: `get_tuple` is shipped only the log entries the saver lacks, and never served an
entry of a thread deleted, rewritten, pruned, copied onto or expired since it was held (sync and
async savers, one server and a cluster, other processes writing).

Entry ids can repeat across a thread's lives (a prune adds entries back under their old ids; a
thread deleted and written again within a millisecond reuses its first ids). The tests make
that collision certain rather than lucky: after another process changed the thread, the reader's
cache is given, under the incarnation it knows, the thread's *new* entry ids holding its *old*
entries. A read that trusted ids alone would return the old values.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import async_client, config, new_checkpoint, sync_client
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from streamsaver import AsyncStreamSaver, StreamSaver
from streamsaver.checkpoints.entry_cache import Claim, EntryCache
from streamsaver.checkpoints.guesses import Guesses

OTHER = Path(__file__).with_name("other_process.py")


class Reader:
    """A sync or async saver behind one async interface, with what its reads were shipped."""

    def __init__(self, saver: StreamSaver | AsyncStreamSaver, url: str, cluster: bool) -> None:
        self.saver, self.url, self.cluster = saver, url, cluster
        self.shipped: list[list[bytes]] = []
        cache = saver.core.entries
        assert cache is not None
        self.cache: EntryCache = cache
        absorb = cache.absorb

        def spying(claim: Claim, incarnation: bytes, shipped: Any) -> Any:
            self.shipped.append([bytes(shipped[i]) for i in range(0, len(shipped), 2)])
            return absorb(claim, incarnation, shipped)

        cache.absorb = spying  # type: ignore[method-assign]

    async def get(self, cfg: Any) -> CheckpointTuple | None:
        if isinstance(self.saver, AsyncStreamSaver):
            return await self.saver.aget_tuple(cfg)
        return self.saver.get_tuple(cfg)

    async def put(self, cfg: Any, values: dict[str, Any], previous: Any = None) -> Any:
        checkpoint, versions = new_checkpoint(values, previous)
        if isinstance(self.saver, AsyncStreamSaver):
            saved = await self.saver.aput(cfg, checkpoint, {}, versions)
            await self.saver.aput_writes(saved, [("note", values["note"])], "task")
        else:
            saved = self.saver.put(cfg, checkpoint, {}, versions)
            self.saver.put_writes(saved, [("note", values["note"])], "task")
        return saved, checkpoint

    def log(self, thread: str) -> str:
        return self.saver.core.keys.thread(thread).log

    def other(self, thread: str, op: str, value: str = "", stdin: str = "") -> None:
        env = {**os.environ, "CLUSTER": "1" if self.cluster else "0", "VIEW": self.saver.core.view}
        args = [sys.executable, str(OTHER), self.url, self.saver.core.prefix, thread, op, value]
        subprocess.run(args, input=stdin, text=True, check=True, env=env, capture_output=True)


@pytest.fixture(params=["server", "cluster"])
def url(request: pytest.FixtureRequest, redis_url: str) -> tuple[str, bool]:
    if request.param == "cluster":
        return request.getfixturevalue("cluster_url"), True
    return redis_url, False


@pytest.fixture
def client(url: tuple[str, bool]) -> Iterator[Any]:
    c = sync_client(url[0])
    yield c
    c.close()


@pytest.fixture(params=["sync", "async"])
async def reader(request: pytest.FixtureRequest, url: tuple[str, bool], prefix: str) -> AsyncIterator[Reader]:
    if request.param == "sync":
        saver: Any = StreamSaver(sync_client(url[0]), prefix=prefix)
        saver.setup()
        yield Reader(saver, *url)
        saver.redis.close()
    else:
        saver = AsyncStreamSaver(async_client(url[0]), prefix=prefix)
        await saver.asetup()
        yield Reader(saver, *url)
        await saver.redis.aclose()


async def written(reader: Reader, thread: str, steps: int) -> list[Any]:
    """`steps` checkpoints of `thread` (a growing list, a note, writes), never read: the writer
    holds its entries from its first put (its appends' replies name the incarnation); the
    configs saved."""
    saved, previous, configs = config(thread), None, []
    for step in range(steps):
        saved, previous = await reader.put(saved, {"messages": ["m"] * (step + 1), "note": f"v{step}"}, previous)
        configs.append(saved)
    assert reader.cache.incarnation(reader.log(thread))
    return configs


def poison(reader: Reader, client: Any, thread: str, old: list[Any]) -> None:
    """Make the reader's cache hold, at each of the thread's current entry ids and under the
    incarnation it knows, an entry of `old` (one of the same shape when there is one) unlike
    the one the server holds there: what trusting ids alone would serve."""
    log = reader.log(thread)
    known = reader.cache.incarnation(log)
    assert known
    reader.cache.forget(log)
    reader.cache.absorb(Claim(log, b"", [], {}), known, [])
    for entry_id, fields in client.xrange(log):
        unlike = [f for _, f in old if f != fields]
        stale = next((f for f in unlike if f.keys() == fields.keys()), unlike[0])
        reader.cache.wrote(log, entry_id, [x for pair in stale.items() for x in pair], known)


async def fresh_read(url: str, prefix: str, cfg: Any) -> CheckpointTuple | None:
    saver = StreamSaver(sync_client(url), prefix=prefix, read_cache_bytes=0)
    try:
        return saver.get_tuple(cfg)
    finally:
        saver.redis.close()


async def assert_reads_as_the_server_holds(reader: Reader, thread: str, ids: list[str]) -> None:
    for cfg in [config(thread), *(config(thread, checkpoint_id=i) for i in ids)]:
        got, truth = await reader.get(cfg), await fresh_read(reader.url, reader.saver.core.prefix, cfg)
        assert (got and (got.checkpoint, got.metadata, got.pending_writes)) == (
            truth and (truth.checkpoint, truth.metadata, truth.pending_writes)
        )


async def test_a_writer_reads_what_it_wrote_shipped_nothing_from_its_first_read(reader: Reader) -> None:
    configs = await written(reader, "t", 5)
    assert reader.shipped == []
    latest = await reader.get(config("t"))
    by_id = await reader.get(configs[2])
    assert latest is not None and latest.checkpoint["channel_values"]["messages"] == ["m"] * 5
    assert latest.pending_writes == [("task", "note", "v4")]
    assert by_id is not None and by_id.checkpoint["channel_values"]["note"] == "v2"
    assert reader.shipped == [[], []]


async def test_a_read_by_id_of_an_older_checkpoint_it_wrote_is_shipped_nothing(reader: Reader) -> None:
    configs = await written(reader, "t", 12)  # 24 entries: more than a read names of the newest
    reader.shipped.clear()
    await assert_reads_as_the_server_holds(reader, "t", [configs[1]["configurable"]["checkpoint_id"]])
    assert reader.shipped == [[], []]


@pytest.mark.parametrize("read_before", [True, False], ids=["read", "only-written"])
async def test_a_thread_deleted_and_rewritten_elsewhere_under_the_same_ids_is_read_anew(
    reader: Reader, client: Any, read_before: bool
) -> None:
    configs = await written(reader, "t", 4)
    if read_before:
        await reader.get(config("t"))
    known = reader.cache.incarnation(reader.log("t"))
    old = client.xrange(reader.log("t"))
    ids = [c["configurable"]["checkpoint_id"] for c in configs]
    reader.other("t", "rewrite", "other", json.dumps(ids))
    poison(reader, client, "t", old)

    latest = await reader.get(config("t"))
    assert latest is not None and latest.checkpoint["channel_values"]["note"] == "other"
    assert latest.config["configurable"]["checkpoint_id"] == ids[-1]
    assert reader.cache.incarnation(reader.log("t")) not in (None, known)
    await assert_reads_as_the_server_holds(reader, "t", ids)


@pytest.mark.parametrize("read_before", [True, False], ids=["read", "only-written"])
async def test_a_prune_elsewhere_is_read_anew(reader: Reader, client: Any, read_before: bool) -> None:
    configs = await written(reader, "t", 4)
    if read_before:
        await reader.get(config("t"))
    old = client.xrange(reader.log("t"))
    reader.other("t", "prune")
    poison(reader, client, "t", old)
    await assert_reads_as_the_server_holds(reader, "t", [c["configurable"]["checkpoint_id"] for c in configs])


async def test_a_copy_onto_a_thread_read_before_is_read_as_the_copy(reader: Reader, client: Any) -> None:
    source = await written(reader, "src", 3)
    await written(reader, "t", 2)
    await reader.get(config("t"))
    old = client.xrange(reader.log("t"))
    reader.other("t", "copy", "src")
    poison(reader, client, "t", old)
    latest = await reader.get(config("t"))
    assert latest is not None and latest.checkpoint["channel_values"]["note"] == "v2"
    await assert_reads_as_the_server_holds(reader, "t", [c["configurable"]["checkpoint_id"] for c in source])


async def test_a_checkpoint_another_process_wrote_between_reads_is_shipped_alone(reader: Reader, client: Any) -> None:
    await written(reader, "t", 3)
    await reader.get(config("t"))
    before = {entry_id for entry_id, _ in client.xrange(reader.log("t"))}
    reader.shipped.clear()
    reader.other("t", "put", "elsewhere")

    latest = await reader.get(config("t"))
    assert latest is not None and latest.checkpoint["channel_values"]["note"] == "elsewhere"
    assert latest.pending_writes == [("task-99", "note", "elsewhere")]
    [shipped] = reader.shipped
    assert shipped and not set(shipped) & before
    await assert_reads_as_the_server_holds(reader, "t", [latest.config["configurable"]["checkpoint_id"]])


def spied_guesses(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each value decoded in flight was taken by its reply, in order (filled as reads run)."""
    taken: list[bool] = []
    take = Guesses.take

    def spying(self: Guesses, stored: bytes, links: Any) -> tuple[bool, Any]:
        found = take(self, stored, links)
        taken.append(found[0])
        return found

    monkeypatch.setattr(Guesses, "take", spying)
    return taken


async def test_values_decoded_in_flight_are_used_only_when_the_reply_names_the_same_bytes(
    reader: Reader, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = spied_guesses(monkeypatch)
    saved, previous, ids = config("t"), None, []
    for step in range(3):  # values large enough to be guessed whole, and deltas
        saved, previous = await reader.put(saved, {"messages": ["x" * 1500] * (step + 1), "note": f"v{step}"}, previous)
        ids.append(saved["configurable"]["checkpoint_id"])
        if step == 0:
            await reader.get(config("t"))
    await assert_reads_as_the_server_holds(reader, "t", ids)
    # a cluster client has no lane: its driver sends and reads in one call, nothing runs between
    assert any(taken) != reader.cluster

    old = client.xrange(reader.log("t"))
    reader.other("t", "rewrite", "y" * 1500, json.dumps(ids))
    poison(reader, client, "t", old)  # the guesses are decoded from the old values, same shape
    taken.clear()
    latest = await reader.get(config("t"))
    assert latest is not None and latest.checkpoint["channel_values"]["messages"] == ["y" * 1500] * 3
    assert not any(taken)
    await assert_reads_as_the_server_holds(reader, "t", ids)


async def listed(reader: Reader, cfg: Any, limit: int | None) -> list[CheckpointTuple]:
    if isinstance(reader.saver, AsyncStreamSaver):
        return [t async for t in reader.saver.alist(cfg, limit=limit)]
    return list(reader.saver.list(cfg, limit=limit))


def seen(t: CheckpointTuple) -> tuple[Any, ...]:
    return t.config, t.checkpoint, t.metadata, t.parent_config, t.pending_writes


async def assert_lists_as_the_server_holds(reader: Reader, thread: str) -> None:
    """`list` of the thread (a page of 2, and whole) reads as a saver without a cache does."""
    truth = StreamSaver(sync_client(reader.url), prefix=reader.saver.core.prefix, read_cache_bytes=0)
    try:
        for limit in (2, None):
            got = await listed(reader, config(thread), limit)
            assert [seen(t) for t in got] == [seen(t) for t in truth.list(config(thread), limit=limit)]
    finally:
        truth.redis.close()


async def test_a_writer_lists_what_it_wrote_shipped_nothing(reader: Reader) -> None:
    await written(reader, "t", 6)
    page = await listed(reader, config("t"), 5)
    assert [t.checkpoint["channel_values"]["note"] for t in page] == ["v5", "v4", "v3", "v2", "v1"]
    assert page[0].pending_writes == [("task", "note", "v5")]
    assert reader.shipped == [[]]
    await assert_lists_as_the_server_holds(reader, "t")


async def changed_elsewhere(reader: Reader, client: Any, op: str) -> None:
    """Thread "t" (4 checkpoints, held) changed by another process (`op`: rewrite, prune, or a
    copy of "src" over it), and its old entries planted back into the reader's cache."""
    configs = await written(reader, "t", 4)
    await written(reader, "src", 3)
    old = client.xrange(reader.log("t"))
    ids = json.dumps([c["configurable"]["checkpoint_id"] for c in configs])
    reader.other("t", op, {"rewrite": "other", "prune": "", "copy": "src"}[op], ids if op == "rewrite" else "")
    poison(reader, client, "t", old)


@pytest.mark.parametrize("op", ["rewrite", "prune", "copy"])
async def test_a_list_after_a_change_elsewhere_reads_as_the_server_holds(reader: Reader, client: Any, op: str) -> None:
    await changed_elsewhere(reader, client, op)
    reader.shipped.clear()
    await assert_lists_as_the_server_holds(reader, "t")
    assert reader.shipped[0]  # the claim was of the old incarnation: shipped what the page needs


async def test_a_list_after_a_rewrite_elsewhere_uses_no_value_decoded_from_the_old_entries(
    reader: Reader, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = spied_guesses(monkeypatch)
    saved, previous, ids = config("t"), None, []
    for step in range(4):
        saved, previous = await reader.put(saved, {"messages": ["x" * 1500] * (step + 1), "note": f"v{step}"}, previous)
        ids.append(saved["configurable"]["checkpoint_id"])
        if step == 0:
            await reader.get(config("t"))
    page = await listed(reader, config("t"), 3)
    assert [t.checkpoint["channel_values"]["messages"] for t in page] == [["x" * 1500] * n for n in (4, 3, 2)]
    assert any(taken) != reader.cluster  # guessed while the page was read (a lane's client only)

    old = client.xrange(reader.log("t"))
    reader.other("t", "rewrite", "y" * 1500, json.dumps(ids))
    poison(reader, client, "t", old)  # the guesses are decoded from the old values, same shape
    taken.clear()
    page = await listed(reader, config("t"), 3)
    assert [t.checkpoint["channel_values"]["messages"] for t in page] == [["y" * 1500] * n for n in (4, 3, 2)]
    assert not any(taken)


def test_an_expired_thread_written_again_under_the_same_ids_is_read_anew(client: Any, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix, default_ttl=0.005)  # 300 ms
    saver.setup()
    checkpoint, versions = new_checkpoint({"note": "first"})
    saved = saver.put(config("t"), checkpoint, {}, versions)  # held from the put: never read
    cache = saver.core.entries
    assert cache is not None
    log = saver.core.keys.thread("t").log
    known, old = cache.incarnation(log), client.xrange(log)
    assert known
    deadline = time.monotonic() + 30
    while client.exists(log) and time.monotonic() < deadline:
        time.sleep(0.05)  # polls the condition: the server expires the thread on its own clock
    assert not client.exists(log)

    again, versions = new_checkpoint({"note": "second"})
    again["id"] = saved["configurable"]["checkpoint_id"]
    StreamSaver(client, prefix=prefix, default_ttl=5).put(config("t"), again, {}, versions)
    for (new_id, _), (_, fields) in zip(client.xrange(log), old, strict=False):
        cache.wrote(log, new_id, [x for pair in fields.items() for x in pair], known)  # same shape, older values
    [listed_] = saver.list(config("t"))  # a list's claim first, of the incarnation gone
    assert listed_.checkpoint["channel_values"] == {"note": "second"}
    for (new_id, _), (_, fields) in zip(client.xrange(log), old, strict=False):
        cache.wrote(log, new_id, [x for pair in fields.items() for x in pair], known)  # and again for the get
    latest = saver.get_tuple(config("t"))
    assert latest is not None and latest.checkpoint["channel_values"] == {"note": "second"}
    assert cache.incarnation(log) not in (None, known)


@pytest.mark.parametrize("url", ["server"], indirect=True)
async def test_the_shallow_saver_reads_through_the_cache_too(url: tuple[str, bool], prefix: str, client: Any) -> None:
    from streamsaver import ShallowStreamSaver

    saver = ShallowStreamSaver(client, prefix=prefix)
    saver.setup()
    reader = Reader(saver, *url)
    await written(reader, "t", 3)
    reader.shipped.clear()
    latest = await reader.get(config("t"))
    assert latest is not None and latest.checkpoint["channel_values"]["note"] == "v2"
    assert latest.pending_writes == [("task", "note", "v2")]
    assert reader.shipped == [[]]
    old = client.xrange(reader.log("t"))
    reader.other("t", "rewrite", "other", json.dumps([latest.config["configurable"]["checkpoint_id"]]))
    poison(reader, client, "t", old)
    latest = await reader.get(config("t"))
    assert latest is not None and latest.checkpoint["channel_values"]["note"] == "other"


@pytest.mark.parametrize("url", ["server"], indirect=True)
def test_an_encrypted_saver_holds_ciphertext_and_reads_plaintext(client: Any, prefix: str) -> None:
    serde = EncryptedSerializer.from_pycryptodome_aes(key=b"0123456789abcdef")
    saver = StreamSaver(client, prefix=prefix, serde=serde)
    saver.setup()
    checkpoint, versions = new_checkpoint({"note": "a secret note"})
    saver.put(config("t"), checkpoint, {}, versions)
    saver.get_tuple(config("t"))
    checkpoint, versions = new_checkpoint({"note": "another secret"}, checkpoint)
    saver.put(config("t"), checkpoint, {}, versions)
    latest = saver.get_tuple(config("t"))
    assert latest is not None and latest.checkpoint["channel_values"]["note"] == "another secret"
    cache = saver.core.entries
    assert cache is not None and cache.size > 0
    held = cache.claim(saver.core.keys.thread("t").log).entries.values()
    assert held and not any(b"secret" in value for entry in held for value in entry.values())


@pytest.mark.parametrize("url", ["server"], indirect=True)
def test_read_cache_bytes_0_reads_without_a_cache(client: Any, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix, read_cache_bytes=0)
    saver.setup()
    checkpoint, versions = new_checkpoint({"note": "x"})
    saver.put(config("t"), checkpoint, {}, versions)
    assert saver.core.entries is None
    latest = saver.get_tuple(config("t"))
    assert latest is not None and latest.checkpoint["channel_values"] == {"note": "x"}


class RefusingSerde(JsonPlusSerializer):
    """A custom serde that raises an error of its own (not one a bad payload raises) on a value."""

    refusals = 0

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        if b"refused" in data[1]:
            self.refusals += 1
            raise LookupError("this serde refuses the value")
        return super().loads_typed(data)


@pytest.mark.parametrize("url", ["server"], indirect=True)
@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_guess_the_serde_refuses_fails_no_read_that_does_not_need_it(
    url: tuple[str, bool], prefix: str, kind: str
) -> None:
    big, serde = "x" * 1500, RefusingSerde()
    if kind == "sync":
        saver: Any = StreamSaver(sync_client(url[0]), prefix=prefix, serde=serde, compression=None)
        saver.setup()
    else:
        saver = AsyncStreamSaver(async_client(url[0]), prefix=prefix, serde=serde, compression=None)
        await saver.asetup()
    reader = Reader(saver, *url)
    first, checkpoint = await reader.put(config("t"), {"messages": ["refused" + big], "note": "a"})
    other = StreamSaver(sync_client(url[0]), prefix=prefix)  # another writer replaces the value
    again, versions = new_checkpoint({"messages": ["fine" + big]}, checkpoint)
    other.put(first, again, {}, versions)
    latest = await reader.get(config("t"))  # guessed from the refused value this saver holds
    assert latest is not None and latest.checkpoint["channel_values"]["messages"] == ["fine" + big]
    assert serde.refusals == 1  # the guess tried it
    with pytest.raises(LookupError, match="refuses the value"):
        await reader.get(first)  # a read that needs it fails as it always did


async def history(reader: Reader, cfg: Any, channels: list[str]) -> Any:
    if isinstance(reader.saver, AsyncStreamSaver):
        return await reader.saver.aget_delta_channel_history(config=cfg, channels=channels)
    return reader.saver.get_delta_channel_history(config=cfg, channels=channels)


async def assert_histories_as_the_server_holds(reader: Reader, configs: list[Any], channels: list[str]) -> None:
    """`get_delta_channel_history` from each of `configs` reads as a saver without a cache does."""
    truth = StreamSaver(sync_client(reader.url), prefix=reader.saver.core.prefix, read_cache_bytes=0)
    try:
        for cfg in configs:
            expected = truth.get_delta_channel_history(config=cfg, channels=channels)
            assert await history(reader, cfg, channels) == expected
    finally:
        truth.redis.close()


async def test_a_writer_walks_the_history_it_wrote_shipped_nothing(reader: Reader) -> None:
    configs = await written(reader, "t", 5)
    walked = await history(reader, configs[-1], ["messages", "note"])
    assert walked["note"] == {"seed": "v3", "writes": [("task", "note", "v3")]}
    assert reader.shipped == [[]]
    await assert_histories_as_the_server_holds(reader, [configs[-1], config("t")], ["messages", "note"])


async def test_a_history_walks_past_a_held_value_that_is_empty(reader: Reader) -> None:
    first, checkpoint = await reader.put(config("t"), {"messages": ["a"], "note": "one"})
    emptied, versions = new_checkpoint({"note": None}, checkpoint)
    del emptied["channel_values"]["note"]  # a new version, no value: stored of serde type "empty"
    if isinstance(reader.saver, AsyncStreamSaver):
        second = await reader.saver.aput(first, emptied, {}, versions)
    else:
        second = reader.saver.put(first, emptied, {}, versions)
    third, _ = await reader.put(second, {"messages": ["a", "b"], "note": "three"}, emptied)
    walked = await history(reader, third, ["note"])
    assert walked["note"]["seed"] == "one"
    assert reader.shipped == [[]]
    await assert_histories_as_the_server_holds(reader, [third], ["note", "messages"])


@pytest.mark.parametrize("op", ["rewrite", "prune", "copy"])
async def test_a_history_after_a_change_elsewhere_reads_as_the_server_holds(
    reader: Reader, client: Any, op: str
) -> None:
    await changed_elsewhere(reader, client, op)
    await assert_histories_as_the_server_holds(reader, [config("t")], ["messages", "note"])
