"""Durability levels: with ``durability="aof"`` on a server with ``appendfsync always`` (and also
``everysec``, where the saver's wait is what makes an acknowledged append durable), a Redis
server killed with SIGKILL and restarted loses no acknowledged checkpoint or write.

Each cycle a writer thread puts checkpoints (each followed by its writes) and records a call as
acknowledged only once it returned; the test SIGKILLs the server at a random moment, restarts it
on the same data directory, and checks that every acknowledged checkpoint and write reads back
and that the views still match the logs (`verify`). Writers resume their threads from the latest
checkpoint the restarted server holds.

The wait (``WAITAOF``) is pipelined with the append: one round trip still (checked here too).
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from helpers import config, new_checkpoint
from langgraph.checkpoint.base import Checkpoint

from streamsaver import StreamSaver
from streamsaver.errors import DurabilityError, InvalidInputError, ServerUnavailableError
from streamsaver.ops.verify import verify
from streamsaver.server.embedded import EmbeddedRedis, free_port

pytestmark = pytest.mark.slow

RESTARTS = int(os.environ.get("STREAMSAVER_DURABILITY_RESTARTS", "5"))
THREADS = ("alpha", "beta", "gamma")
PREFIX = "durable"


class Writer(threading.Thread):
    """Writes to THREADS round-robin until the server dies; records what was acknowledged."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.acked: list[tuple[str, str, int]] = []
        self.acked_writes: list[tuple[str, str, int]] = []
        self.error: BaseException | None = None
        self.writing = threading.Event()
        """Set once a put is acknowledged (or the writer ended): the kill's random moment counts from it."""

    def run(self) -> None:
        client = redis.Redis.from_url(self.url)
        saver = StreamSaver(client, prefix=PREFIX, durability="aof")
        latest: dict[str, Checkpoint | None] = {}
        try:
            for thread in THREADS:
                got = saver.get_tuple(config(thread))
                latest[thread] = got.checkpoint if got else None
            while True:
                for thread in THREADS:
                    previous = latest[thread]
                    step = previous["channel_values"]["step"] + 1 if previous else 0
                    checkpoint, versions = new_checkpoint({"step": step, "text": f"{thread}:{step}" * 50}, previous)
                    parent = config(thread, "", previous["id"] if previous else None)
                    saved = saver.put(parent, checkpoint, {"step": step}, versions)
                    self.acked.append((thread, checkpoint["id"], step))
                    self.writing.set()
                    saver.put_writes(saved, [("step", step)], f"task-{step}")
                    self.acked_writes.append((thread, checkpoint["id"], step))
                    latest[thread] = checkpoint
        except ServerUnavailableError:  # the server was killed: a saver names the error
            return
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            self.error = exc
        finally:
            self.writing.set()
            client.close()


@pytest.fixture(params=["always", "everysec"])
def aof_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EmbeddedRedis]:
    """A server with ``appendfsync always`` (Redis fsyncs before it replies) or ``everysec``
    (only the saver's WAITAOF makes an acknowledged append durable)."""
    server = EmbeddedRedis(tmp_path / "data", port=free_port(), extra_args=["--appendfsync", request.param])
    server.start()
    yield server
    server.stop()


def _kill_and_restart(server: EmbeddedRedis) -> EmbeddedRedis:
    assert server.process is not None
    server.process.kill()
    server.process.wait()
    server.stop()
    return EmbeddedRedis(server.data_dir, port=server.port, extra_args=server.extra_args).start()


def test_acknowledged_checkpoints_survive_sigkill_of_the_server(aof_server: EmbeddedRedis) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    StreamSaver(redis.Redis.from_url(aof_server.url), prefix=PREFIX).setup()
    server = aof_server
    everysec = "everysec" in aof_server.extra_args
    restarts, window = (2, (1.5, 3.0)) if everysec else (RESTARTS, (0.2, 0.6))
    acked: list[tuple[str, str, int]] = []
    acked_writes: list[tuple[str, str, int]] = []
    try:
        for cycle in range(restarts):
            writer = Writer(server.url)
            writer.start()
            # Under load the writer's first calls can take longer than the window: the kill would
            # land before anything is acknowledged, and the cycle would test nothing.
            assert writer.writing.wait(60), f"seed {seed}: cycle {cycle}: no put acknowledged in 60 s"
            time.sleep(rng.uniform(*window))  # the random moment of the kill, not a wait
            server = _kill_and_restart(server)
            writer.join(timeout=30)
            assert not writer.is_alive() and writer.error is None, (seed, cycle, writer.error)
            acked += writer.acked
            acked_writes += writer.acked_writes
            assert writer.acked, f"seed {seed}: cycle {cycle} acknowledged nothing"

            client = redis.Redis.from_url(server.url)
            saver = StreamSaver(client, prefix=PREFIX)
            for thread, cid, step in acked:
                got = saver.get_tuple(config(thread, "", cid))
                assert got is not None, f"seed {seed}, restart {cycle}: acknowledged {cid} of {thread} lost"
                assert got.checkpoint["channel_values"]["step"] == step
            for thread, cid, step in acked_writes:
                got = saver.get_tuple(config(thread, "", cid))
                assert got is not None and (f"task-{step}", "step", step) in got.pending_writes
            report = verify(client, PREFIX)
            assert report.matches, (seed, cycle, report)
            client.close()
    finally:
        if server is not aof_server:
            server.stop()
    print(f"restarts survived: {restarts}, acknowledged: {len(acked)} puts, {len(acked_writes)} put_writes")


def test_an_unknown_durability_is_refused(client: redis.Redis) -> None:
    with pytest.raises(InvalidInputError, match="durability must be one of"):
        StreamSaver(client, durability="disk")
    with pytest.raises(InvalidInputError, match="durability_timeout_ms"):
        StreamSaver(client, durability="aof", durability_timeout_ms=0)


def test_replica_durability_without_a_replica_raises_after_the_append(client: redis.Redis, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix, durability="replica", durability_timeout_ms=50)
    checkpoint, versions = new_checkpoint({"a": 1})
    with pytest.raises(DurabilityError, match="no replica acknowledged"):
        saver.put(config("t1"), checkpoint, {}, versions)
    got = saver.get_tuple(config("t1"))
    assert got is not None and got.checkpoint["id"] == checkpoint["id"]
    with pytest.raises(DurabilityError):
        saver.put(config("t1"), checkpoint, {}, versions)
    assert client.xlen(saver.core.keys.thread("t1").log) == 1


def _stop_now(server: EmbeddedRedis) -> None:
    """SIGKILL a throw-away server (a replica's SHUTDOWN takes ~10 s), then clean up."""
    if server.process is not None:
        server.process.kill()
        server.process.wait()
    server.stop()


def test_replica_durability_returns_once_the_replica_holds_the_append(tmp_path: Path) -> None:
    # no diskless-sync delay: the replica's first sync starts at once instead of after 5 s
    primary = EmbeddedRedis(tmp_path / "primary", extra_args=["--repl-diskless-sync-delay", "0"]).start()
    replica = EmbeddedRedis(tmp_path / "replica", extra_args=["--replicaof", "127.0.0.1", str(primary.port)])
    client, replica_client = redis.Redis.from_url(primary.url), redis.Redis.from_url(replica.url)
    try:
        replica.start()
        deadline = time.monotonic() + 20
        while client.info("replication")["connected_slaves"] < 1:
            assert time.monotonic() < deadline, "the replica did not connect"
            time.sleep(0.05)
        saver = StreamSaver(client, prefix=PREFIX, durability="replica")
        reader = StreamSaver(replica_client, prefix=PREFIX)
        previous = None
        parent = config("t1")
        for step in range(20):
            checkpoint, versions = new_checkpoint({"step": step}, previous)
            parent = saver.put(parent, checkpoint, {}, versions)
            saver.put_writes(parent, [("step", step)], "task")
            reader.core.keyspace = saver.core.keyspace  # the replica is read-only: no setup there
            got = reader.get_tuple(config("t1"))
            assert got is not None and got.checkpoint["id"] == checkpoint["id"], f"step {step} not on the replica"
            assert got.pending_writes == [("task", "step", step)]
            previous = checkpoint
    finally:
        client.close()
        replica_client.close()
        _stop_now(replica)
        _stop_now(primary)
