"""The savers on a Redis Cluster of three primaries, beyond the contract suite (which runs there
whole, tests/contract/conftest.py): a deployment's threads spread over every primary while each
thread stays on one; a listing across threads asks every primary's index and merges the pages
newest first, with `before`, `limit` and filters, as one server would list them; a URL of a
cluster node opens a cluster client by itself; and the operator tools (verify, replay, export
and import, stats, and the command line) work node by node, and the projector worker builds a
view there as an inline projection would; subscribers deliver there, sync and async, running or
in bursts; and a listing goes on when the slot of an index moves to another node."""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio
from helpers import cluster_of_three, config, new_checkpoint, node_clients, sans_incarnation, snapshot, sync_client
from langgraph.checkpoint.base import CheckpointTuple
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.cluster import RedisCluster
from redis.crc import key_slot
from test_subscribers import check_story, one_thread_story
from test_worker import history, play, reads, shallow_reader, view_state, writer

from streamsaver import AsyncStreamSaver, StreamSaver
from streamsaver.cli.main import main
from streamsaver.drivers.cluster import node_name
from streamsaver.errors import InvalidInputError
from streamsaver.feeds.event import FeedEvent
from streamsaver.feeds.subscriber import Subscriber
from streamsaver.feeds.worker import ProjectorWorker
from streamsaver.log.codec import unpack
from streamsaver.log.stored import channel_field
from streamsaver.ops.inspection import deployment_stats
from streamsaver.ops.replay import Replayer
from streamsaver.ops.replay_jobs import replay_in_jobs
from streamsaver.ops.restore import restore_thread
from streamsaver.ops.shadow import ShadowRebuild
from streamsaver.ops.transfer import export_logs, import_logs
from streamsaver.ops.verify import verify
from streamsaver.server.cluster import EmbeddedCluster

pytestmark = pytest.mark.slow

THREADS = 130
"""More than a page (100) of checkpoints across threads, so the merge crosses pages."""


@pytest.fixture
def cluster_client(cluster_url: str) -> RedisCluster:
    client: RedisCluster = sync_client(cluster_url)
    yield client  # type: ignore[misc]
    client.close()


@pytest.fixture
def filled(cluster_client: RedisCluster, prefix: str) -> tuple[StreamSaver, list[str]]:
    """A saver with THREADS threads of one checkpoint each (metadata ``even``); the ids, newest
    first. The deployment keeps both views inline: the operator tools here rebuild and move both."""
    saver = StreamSaver(cluster_client, prefix=prefix, projections=("full", "shallow"))
    saver.setup()
    ids = []
    for i in range(THREADS):
        checkpoint, versions = new_checkpoint({"i": i})
        saved = saver.put(config(f"thread-{i}"), checkpoint, {"even": i % 2 == 0, "i": i}, versions)
        ids.append(saved["configurable"]["checkpoint_id"])
    return saver, ids[::-1]


def _owners(client: RedisCluster, prefix: str, kind: str) -> dict[int, set[bytes]]:
    """Per primary (by port), the keys of `kind` (``log``, ``feed``) of the deployment."""
    return {
        int(node.get_connection_kwargs()["port"]): set(node.scan_iter(match=f"{prefix}:{kind}:*"))
        for node in node_clients(client)
    }


def test_threads_spread_over_every_primary_and_each_stays_on_one(
    filled: tuple[StreamSaver, list[str]], cluster_client: RedisCluster, prefix: str
) -> None:
    logs = _owners(cluster_client, prefix, "log")
    feeds = _owners(cluster_client, prefix, "feed")

    assert len(logs) == 3 and all(logs.values()), {port: len(keys) for port, keys in logs.items()}
    assert sum(len(keys) for keys in logs.values()) == THREADS
    for port, keys in logs.items():
        tags = {key.split(b":")[2] for key in keys}
        assert tags == {key.split(b":")[2] for key in feeds[port]}, "a log away from its partition's feed"


def test_a_listing_across_threads_merges_every_primary_newest_first(filled: tuple[StreamSaver, list[str]]) -> None:
    saver, newest_first = filled

    def listed(**options: object) -> list[str]:
        return [t.config["configurable"]["checkpoint_id"] for t in saver.list(None, **options)]  # type: ignore[arg-type]

    assert listed() == newest_first
    assert listed(limit=7) == newest_first[:7]
    assert listed(before=config("x", None, newest_first[20]), limit=110) == newest_first[21:131]
    assert listed(filter={"even": True}) == [cid for n, cid in enumerate(newest_first) if (THREADS - 1 - n) % 2 == 0]


async def test_the_async_saver_merges_the_same_way(cluster_url: str, prefix: str) -> None:
    client = AsyncRedisCluster.from_url(cluster_url)
    saver = AsyncStreamSaver(client, prefix=prefix)
    await saver.setup()
    ids = []
    for i in range(30):
        checkpoint, versions = new_checkpoint({"i": i})
        ids.append((await saver.aput(config(f"a{i}"), checkpoint, {"i": i}, versions))["configurable"]["checkpoint_id"])

    listed = [t.config["configurable"]["checkpoint_id"] async for t in saver.alist(None, limit=25)]

    assert listed == ids[::-1][:25]
    await client.aclose()


async def test_a_cluster_url_opens_a_cluster_client_by_itself(cluster_url: str, redis_url: str, prefix: str) -> None:
    with StreamSaver.from_conn_string(cluster_url, prefix=prefix) as on_cluster:
        assert isinstance(on_cluster.redis, RedisCluster)
        saved = on_cluster.put(config("t"), *_checkpoint())
        assert on_cluster.get_tuple(config("t")).config == saved  # type: ignore[union-attr]
    with StreamSaver.from_conn_string(redis_url, prefix=prefix) as single:
        assert isinstance(single.redis, redis.Redis)
    async with AsyncStreamSaver.from_conn_string(cluster_url, prefix=prefix) as aon_cluster:
        assert isinstance(aon_cluster.redis, AsyncRedisCluster)
        assert (await aon_cluster.aget_tuple(config("t"))).config == saved  # type: ignore[union-attr]
    async with AsyncStreamSaver.from_conn_string(redis_url, prefix=prefix, cluster=False) as asingle:
        assert isinstance(asingle.redis, redis.asyncio.Redis)


def _checkpoint() -> tuple:  # type: ignore[type-arg]
    checkpoint, versions = new_checkpoint({"a": 1})
    return checkpoint, {"step": 1}, versions


def test_operator_tools_work_node_by_node(
    filled: tuple[StreamSaver, list[str]], cluster_client: RedisCluster, prefix: str, tmp_path: Path
) -> None:
    before = snapshot(cluster_client, prefix)

    report = verify(cluster_client, prefix)
    assert report.matches and report.threads == THREADS
    assert deployment_stats(cluster_client, prefix).threads == THREADS

    Replayer.open(cluster_client, prefix).rebuild(["full", "shallow"])
    assert snapshot(cluster_client, prefix) == before

    export_logs(cluster_client, prefix, tmp_path / "logs.jsonl.gz")
    copy = f"c{uuid.uuid4().hex[:10]}"
    import_logs(cluster_client, tmp_path / "logs.jsonl.gz", prefix=copy)
    renamed = {key.replace(prefix.encode(), copy.encode(), 1): sans_incarnation(v) for key, v in before.items()}
    imported = snapshot(cluster_client, copy)
    assert {k: v for k, v in imported.items() if b":feed:" not in k} == {
        k: v for k, v in renamed.items() if b":feed:" not in k
    }
    listed = [t.config["configurable"]["checkpoint_id"] for t in StreamSaver(cluster_client, prefix=copy).list(None)]
    assert listed == filled[1]


def test_the_command_line_opens_a_cluster_client_for_a_cluster_url(
    filled: tuple[StreamSaver, list[str]], cluster_url: str, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["stats", "--url", cluster_url, "--prefix", prefix, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["threads"] == THREADS
    assert main(["verify", "--url", cluster_url, "--prefix", prefix]) == 0
    capsys.readouterr()
    assert main(["tail", "--url", cluster_url, "--prefix", prefix, "--from-start", "--count", "3", "--json"]) == 0
    pointers = [json.loads(line) for line in capsys.readouterr().out.splitlines()]  # an XREAD per slot
    assert len(pointers) == 3 and all(p["type"] for p in pointers)


def _tuples(saver: StreamSaver, thread_id: str) -> list[tuple[Any, ...]]:
    """A thread's history as comparable facts, its thread id left out (a copy carries another)."""
    return [
        (t.config["configurable"]["checkpoint_id"], t.checkpoint, t.metadata, t.pending_writes)
        for t in saver.list(config(thread_id))
    ]


def test_a_thread_restored_on_a_cluster_lands_on_its_own_primary_as_it_was_then(
    cluster_client: RedisCluster, cluster_url: str, prefix: str
) -> None:
    saver = StreamSaver(cluster_client, prefix=prefix)
    saver.setup()
    checkpoint, versions, then, state = None, {}, "", []
    for step in range(3):
        checkpoint, versions = new_checkpoint({"step": step}, checkpoint)
        saved = saver.put(config("source"), checkpoint, {"step": step}, versions)
        saver.put_writes(saved, [("step", step + 10)], f"task-{step}")
        if step == 1:
            [(entry, _)] = cluster_client.xrevrange(saver.core.keys.thread("source").log, count=1)
            then, state = entry.decode(), _tuples(saver, "source")
    source_node = node_name(cluster_client, saver.core.keys.thread("source").log)
    elsewhere = [
        thread
        for thread in (f"copy-{i}" for i in range(200))
        if node_name(cluster_client, saver.core.keys.thread(thread).log) != source_node
    ]

    report = restore_thread(saver, "source", at=then, into=elsewhere[0])
    assert (
        main(["restore", "source", "--at", then, "--into", elsewhere[1], "--url", cluster_url, "--prefix", prefix]) == 0
    )

    assert report.checkpoints == 2 and report.last_source_entry == then
    assert _tuples(saver, elsewhere[0]) == state == _tuples(saver, elsewhere[1])
    assert len(_tuples(saver, "source")) == 3
    with pytest.raises(InvalidInputError, match="already exists"):
        restore_thread(cluster_client, "source", at=then, into=elsewhere[0], prefix=prefix)
    assert verify(cluster_client, prefix).matches


def test_the_projector_worker_builds_a_view_on_a_cluster_as_an_inline_projection_would(
    cluster_client: RedisCluster, prefix: str
) -> None:
    ops = history()
    play(writer(cluster_client, prefix), ops)

    stats = ProjectorWorker(cluster_client, prefix, ["shallow"], lease_ms=5000).run_burst()

    assert stats.read == len(ops) and stats.dead == 0
    inline = f"{prefix}i"
    play(StreamSaver(cluster_client, prefix=inline, projections=("full", "shallow")), ops)
    assert reads(shallow_reader(cluster_client, prefix)) == reads(
        StreamSaver(cluster_client, prefix=inline, view="shallow")
    )
    assert view_state(cluster_client, prefix) == view_state(cluster_client, inline)


async def test_the_async_projector_worker_drains_a_cluster_too(
    cluster_client: RedisCluster, cluster_url: str, prefix: str
) -> None:
    ops = history()
    play(writer(cluster_client, prefix), ops)
    aclient = AsyncRedisCluster.from_url(cluster_url)

    stats = await ProjectorWorker(aclient, prefix, ["shallow"], lease_ms=5000).async_run_burst()

    await aclient.aclose()
    assert stats.read == len(ops) and stats.dead == 0
    inline = f"{prefix}i"
    play(StreamSaver(cluster_client, prefix=inline, projections=("full", "shallow")), ops)
    assert view_state(cluster_client, prefix) == view_state(cluster_client, inline)


def test_subscribers_get_typed_events_on_a_cluster(cluster_client: RedisCluster, prefix: str) -> None:
    saver = StreamSaver(cluster_client, prefix=prefix)
    saver.setup()
    one_thread_story(saver)
    story: list[FeedEvent] = []

    stats = Subscriber(cluster_client, "audit", story.append, prefix=prefix).run_burst()

    assert stats.handled == 3
    check_story(story, [None, None, {}])


async def test_async_subscribers_with_payloads_on_a_cluster(
    cluster_client: RedisCluster, cluster_url: str, prefix: str
) -> None:
    saver = StreamSaver(cluster_client, prefix=prefix)
    saver.setup()
    checkpoint, versions = new_checkpoint({"n": 7})
    saver.put(config("a"), checkpoint, {"source": "loop"}, versions)
    aclient = AsyncRedisCluster.from_url(cluster_url)
    seen: list[Any] = []

    async def handle(event: FeedEvent) -> None:
        seen.append(await event.apayload())

    stats = await Subscriber(aclient, "audit", handle, prefix=prefix).async_run_burst()

    await aclient.aclose()
    assert stats.handled == 1 and seen[0]["checkpoint"]["channel_values"] == {"n": 7}


def test_a_running_subscriber_follows_new_events_on_every_primary(cluster_client: RedisCluster, prefix: str) -> None:
    saver = StreamSaver(cluster_client, prefix=prefix)
    saver.setup()
    handled: list[str] = []
    subscriber = Subscriber(cluster_client, "follow", lambda e: handled.append(e.thread_id), prefix=prefix, poll_ms=20)
    subscriber.prepare()
    runner = threading.Thread(target=subscriber.run)
    runner.start()
    try:
        for i in range(24):
            checkpoint, versions = new_checkpoint({"i": i})
            saver.put(config(f"f{i}"), checkpoint, {}, versions)
        deadline = time.monotonic() + 10
        while len(handled) < 24 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        subscriber.stop()
        runner.join()
    assert sorted(handled) == sorted(f"f{i}" for i in range(24))


@pytest.fixture(scope="module")
def moving_cluster() -> Iterator[EmbeddedCluster]:
    """A cluster of its own for the tests that move slots. After a move, setup waits for the new
    indexes to scan their node's keys; on the session's cluster those scans queue behind the
    scans of every index earlier tests created (RediSearch 2.10 seems to scan for one new index
    at a time, each over the whole keyspace), which outlasted setup's 30 s limit under load."""
    with cluster_of_three() as cluster:
        yield cluster


@pytest.fixture(scope="module")
def moving_url(moving_cluster: EmbeddedCluster) -> str:
    return moving_cluster.url


@pytest.fixture
def moving_client(moving_url: str) -> Iterator[RedisCluster]:
    client: RedisCluster = sync_client(moving_url)
    yield client
    client.close()


async def _reader(kind: str, writer: StreamSaver, aclient: AsyncRedisCluster) -> StreamSaver | AsyncStreamSaver:
    """`writer` itself ("sync"), or an async saver of its deployment on `aclient`, set up."""
    if kind == "sync":
        return writer
    saver = AsyncStreamSaver(aclient, prefix=writer.core.prefix)
    await saver.setup()
    return saver


def _a_move(saver: StreamSaver | AsyncStreamSaver) -> tuple[Any, Any]:
    """The primary whose index tag is lowest (its slot moves), and another to move it to."""
    assert saver.core.topology is not None
    shards = saver.core.topology.shards
    moved = min(shards, key=lambda shard: int(shard.tag[2:-1]))
    return moved, next(shard for shard in shards if shard != moved)


def _owner_of(node: redis.Redis, slot: int) -> int:
    """The port of the primary `node` says owns `slot` (0: none)."""
    ranges = node.execute_command("CLUSTER", "SLOTS")
    return next((int(primary[1]) for start, end, primary, *_ in ranges if start <= slot <= end), 0)


def _move_slot(cluster: EmbeddedCluster, slot: int, to: str) -> None:
    """Give an empty slot to the node at `to` (``host:port``), telling every node."""
    nodes = {f"127.0.0.1:{node.port}": redis.Redis(port=node.port) for node in cluster.nodes}
    try:
        target = nodes[to].execute_command("CLUSTER", "MYID")
        assert all(int(node.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot)) == 0 for node in nodes.values())
        for node in sorted(nodes.values(), key=lambda n: n is not nodes[to]):
            node.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target)
        nodes[to].execute_command("CLUSTER", "BUMPEPOCH")
        # A node may take in gossip sent before its SETSLOT (the old owner, then of a higher
        # epoch, claiming the slot) and give the slot back; the target's bumped epoch wins in
        # the end. Until every node agrees, clients bounce between MOVEDs ("TTL exhausted").
        deadline = time.monotonic() + 30
        while not all(_owner_of(node, slot) == nodes[to].connection_pool.connection_kwargs["port"]
                      for node in nodes.values()):
            assert time.monotonic() < deadline, f"the nodes never agreed on slot {slot}'s owner"
            time.sleep(0.01)  # polls the nodes' slot maps (no event to wait on)
    finally:
        for node in nodes.values():
            node.close()


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_listing_goes_on_when_the_slot_of_an_index_moves(
    moving_client: RedisCluster, moving_cluster: EmbeddedCluster, moving_url: str, prefix: str, kind: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every primary holds more than a page, so the listing queries each index again after the
    move; the index whose tag moved is gone from the tag's new node: the saver reads the slot
    map again, indexes anew, and goes on from the last checkpoint it returned."""
    writer = StreamSaver(moving_client, prefix=prefix)
    writer.setup()
    ids = []
    for step in range(3):
        for i in range(THREADS):
            checkpoint, versions = new_checkpoint({"i": i, "step": step})
            ids.append(
                writer.put(config(f"t{i}", f"s{step}"), checkpoint, {}, versions)["configurable"]["checkpoint_id"]
            )
    aclient = AsyncRedisCluster.from_url(moving_url)
    saver = await _reader(kind, writer, aclient)
    # The slot of the lowest tag moves: its new owner takes that tag, under which the old owner
    # still has an index; the old owner gets a new tag. Both nodes must index anew.
    moved, to = _a_move(saver)
    listing = saver.alist(None) if isinstance(saver, AsyncStreamSaver) else _as_async(saver.list(None))
    head = [(await anext(listing)).config["configurable"]["checkpoint_id"] for _ in range(5)]

    _move_slot(moving_cluster, key_slot(moved.tag.encode()), to.node)
    try:
        with caplog.at_level(logging.INFO, logger="streamsaver"):
            rest = [t.config["configurable"]["checkpoint_id"] async for t in listing]
        assert any("slots moved since setup" in r.getMessage() for r in caplog.records)
        tags = {shard.node: shard.tag for shard in saver.core.topology.shards}
        assert tags[to.node] == moved.tag and tags[moved.node] != moved.tag
    finally:
        _move_slot(moving_cluster, key_slot(moved.tag.encode()), moved.node)
        await aclient.aclose()

    assert head + rest == ids[::-1]


async def _as_async(items: Iterator[CheckpointTuple]) -> AsyncIterator[CheckpointTuple]:
    """The sync saver's listing, stepped from the test's loop (the sync code path runs)."""
    for item in items:
        yield item


def test_a_process_on_the_old_slot_map_lists_right_after_another_one_indexed_anew(
    moving_client: RedisCluster, moving_cluster: EmbeddedCluster, moving_url: str, prefix: str
) -> None:
    """After a move, the first process to list re-reads the map and makes the tag's new owner an
    index under that tag. A second process still on the old map must not read that index as
    the old owner's (it would list one node twice and miss the other): index names carry the
    node's id, so the stale name is unknown there and the second process recovers the same way."""
    first = StreamSaver(moving_client, prefix=prefix)
    first.setup()
    ids = []
    for i in range(60):
        checkpoint, versions = new_checkpoint({"i": i})
        ids.append(first.put(config(f"t{i}"), checkpoint, {}, versions)["configurable"]["checkpoint_id"])
    second_client = RedisCluster.from_url(moving_url)
    second = StreamSaver(second_client, prefix=prefix)
    second.setup()
    moved, to = _a_move(first)

    _move_slot(moving_cluster, key_slot(moved.tag.encode()), to.node)
    try:
        assert [t.config["configurable"]["checkpoint_id"] for t in first.list(None)] == ids[::-1]
        assert [t.config["configurable"]["checkpoint_id"] for t in second.list(None)] == ids[::-1]
    finally:
        _move_slot(moving_cluster, key_slot(moved.tag.encode()), moved.node)
        second_client.close()


def _calls(cluster: EmbeddedCluster, command: str) -> dict[str, int]:
    found = {}
    for node in cluster.nodes:
        with redis.Redis(port=node.port) as client:
            found[f"127.0.0.1:{node.port}"] = int(
                client.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0)
            )
    return found


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_the_durability_wait_follows_an_append_the_cluster_redirected(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """With a stale slot map the append goes to the slot's old owner, which redirects it; the
    wait, pipelined with it, went there too and returned at once (nothing to fsync there). The
    saver sends the wait again to the node the append ran on."""
    with EmbeddedCluster(3) as cluster:  # its own: the moved slot must hold no other test's keys
        for node in cluster.nodes:
            with redis.Redis(port=node.port) as client:
                client.config_set("appendonly", "yes")
        aclient = AsyncRedisCluster.from_url(cluster.url)
        client = RedisCluster.from_url(cluster.url)
        try:
            saver: StreamSaver | AsyncStreamSaver
            if kind == "sync":
                saver = StreamSaver(client, prefix="durable", durability="aof")
                saver.setup()
            else:
                saver = AsyncStreamSaver(aclient, prefix="durable", durability="aof")
                await saver.setup()
            log = saver.core.keys.thread("fresh").log
            owner = client.get_node_from_key(log).name if kind == "sync" else aclient.get_node_from_key(log).name
            to = next(f"127.0.0.1:{n.port}" for n in cluster.nodes if f"127.0.0.1:{n.port}" != owner)
            _move_slot(cluster, key_slot(log.encode()), to)
            waits, appends = _calls(cluster, "waitaof"), _calls(cluster, "evalsha")

            checkpoint, versions = new_checkpoint({"a": 1})
            with caplog.at_level(logging.INFO, logger="streamsaver"):
                if isinstance(saver, AsyncStreamSaver):
                    await saver.aput(config("fresh"), checkpoint, {}, versions)
                else:
                    saver.put(config("fresh"), checkpoint, {}, versions)
            assert any("durability wait re-sent" in r.getMessage() for r in caplog.records)

            ran = {n for n, c in _calls(cluster, "evalsha").items() if c > appends[n]}
            waited = {n for n, c in _calls(cluster, "waitaof").items() if c > waits[n]}
            assert to in ran and to in waited
        finally:
            client.close()
            await aclient.aclose()


def test_a_parallel_replay_and_a_shadow_rebuild_on_a_cluster_give_the_live_views_back(
    filled: tuple[StreamSaver, list[str]], cluster_client: RedisCluster, cluster_url: str, prefix: str
) -> None:
    before = snapshot(cluster_client, prefix)

    stats = replay_in_jobs(cluster_url, prefix, ["full", "shallow"], jobs=2)
    assert stats.threads == THREADS
    assert snapshot(cluster_client, prefix) == before

    ShadowRebuild.open(cluster_client, prefix).run(["full", "shallow"])
    assert snapshot(cluster_client, prefix) == before
    assert [t.config["configurable"]["checkpoint_id"] for t in filled[0].list(None)] == filled[1]


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_delete_for_runs_goes_on_when_the_slot_of_an_index_moved(
    moving_client: RedisCluster, moving_cluster: EmbeddedCluster, moving_url: str, prefix: str, kind: str
) -> None:
    writer = StreamSaver(moving_client, prefix=prefix)
    writer.setup()
    for i in range(30):
        checkpoint, versions = new_checkpoint({"i": i})
        writer.put(config(f"t{i}"), checkpoint, {"run_id": f"run-{i % 2}"}, versions)
    aclient = AsyncRedisCluster.from_url(moving_url)
    saver = await _reader(kind, writer, aclient)
    moved, to = _a_move(saver)

    _move_slot(moving_cluster, key_slot(moved.tag.encode()), to.node)
    try:
        if isinstance(saver, AsyncStreamSaver):
            await saver.adelete_for_runs(["run-0"])
        else:
            saver.delete_for_runs(["run-0"])
        left = [t.metadata["run_id"] for t in writer.list(None)]
    finally:
        _move_slot(moving_cluster, key_slot(moved.tag.encode()), moved.node)
        await aclient.aclose()

    assert left == ["run-1"] * 15


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_prefetching_subscriber_reads_the_links_of_deltas_on_every_primary(
    cluster_client: RedisCluster, cluster_url: str, prefix: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The XRANGEs of a batch's delta links go to each log's own primary: payloads are whole
    and no handler reads a link on its own."""
    saver = StreamSaver(cluster_client, prefix=prefix)
    saver.setup()
    threads = [f"grow-{i}" for i in range(6)]
    expected: dict[str, list[list[str]]] = {}
    for thread in threads:
        previous, parent, messages = None, None, []
        for step in range(10):
            messages = [*messages, f"{thread} {step} " + "message text " * 20]
            checkpoint, versions = new_checkpoint({"messages": messages}, previous)
            parent = saver.put(config(thread, "", parent), checkpoint, {}, versions)["configurable"]["checkpoint_id"]
            previous = checkpoint
            expected.setdefault(thread, []).append(messages)
    assert len({key_slot(saver.core.keys.thread(t).log.encode()) // 5462 for t in threads}) > 1, "several primaries"
    field = channel_field("messages")
    stored = [unpack(f[field])[2] for t in threads for _, f in cluster_client.xrange(saver.core.keys.thread(t).log)]
    assert sum(t.startswith(b"delta:") for t in stored) >= 30, stored
    fetched: list[str] = []
    seen: dict[str, list[Any]] = {t: [] for t in threads}
    monkeypatch.setattr(Subscriber, "fetch_entry", lambda self, key, entry: fetched.append(entry))
    monkeypatch.setattr(Subscriber, "afetch_entry", lambda self, key, entry: fetched.append(entry))
    if mode == "sync":
        def handle(event: FeedEvent) -> None:
            payload = event.payload()
            assert payload is not None
            seen[event.thread_id].append(payload["checkpoint"]["channel_values"]["messages"])

        stats = Subscriber(cluster_client, "audit", handle, prefix=prefix, prefetch=True).run_burst()
    else:
        aclient = AsyncRedisCluster.from_url(cluster_url)

        async def ahandle(event: FeedEvent) -> None:
            payload = await event.apayload()
            assert payload is not None
            seen[event.thread_id].append(payload["checkpoint"]["channel_values"]["messages"])

        stats = await Subscriber(aclient, "audit", ahandle, prefix=prefix, prefetch=True).async_run_burst()
        await aclient.aclose()
    assert stats.failed == 0 and stats.dead == 0
    assert seen == expected and fetched == []
