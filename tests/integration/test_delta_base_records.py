"""A delta is checked against the positions' record of its channel's last full value, never a stale one.

``append.lua`` accepts a delta only when its link (entry id, version, field size) is the record it
keeps, in the thread's positions hash, of the last full value of that namespace and channel: written
in the same atomic call as that value's entry, and dropped by every write that removes or rewrites
log entries. Each operation below leaves a writer remembering a base the log no longer holds as it
was (deleted, written anew, compacted, copied or restored onto, imported, expired): its next put's
delta must be refused (``SSBASE``) and the full value stored instead, so that a read gives exactly
what was put. A check that wrongly accepted would leave a delta linking to nothing (or to another
value), and these tests fail on the stored type or the read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from helpers import config, new_checkpoint, sync_client
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import Checkpoint

from streamsaver import StreamSaver
from streamsaver.log.codec import unpack
from streamsaver.log.stored import channel_field
from streamsaver.ops.restore import restore_thread
from streamsaver.ops.transfer import export_logs, import_logs

TEXT = " ".join(["agent", "tool", "call", "result", "graph", "node", "message", "redis"] * 12)


class Writer:
    """One saver writing a growing ``messages`` list into one thread and namespace."""

    def __init__(self, saver: StreamSaver, thread: str, ns: str = "", tag: str = "w") -> None:
        self.saver, self.thread, self.ns, self.tag = saver, thread, ns, tag
        self.messages: list[Any] = []
        self.previous: Checkpoint | None = None
        self.parent: str | None = None

    def step(self, count: int = 1) -> str:
        """`count` puts, each adding two messages; returns the last checkpoint id."""
        for _ in range(count):
            turn = len(self.messages) // 2
            self.messages = [
                *self.messages,
                HumanMessage(f"{self.tag}{turn}: {TEXT}", id=f"{self.tag}h{turn}"),
                AIMessage(f"{self.tag}{turn}: {TEXT}", id=f"{self.tag}a{turn}"),
            ]
            checkpoint, versions = new_checkpoint({"messages": self.messages}, self.previous)
            saved = self.saver.put(config(self.thread, self.ns, self.parent), checkpoint, {"step": turn}, versions)
            self.parent, self.previous = saved["configurable"]["checkpoint_id"], checkpoint
        assert self.parent is not None
        return self.parent

    def reads_back(self, checkpoint_id: str) -> bool:
        got = self.saver.get_tuple(config(self.thread, self.ns, checkpoint_id))
        return got is not None and got.checkpoint["channel_values"]["messages"] == self.messages


def _last_type(client: Any, saver: StreamSaver, thread: str) -> str:
    [(_, fields)] = client.xrevrange(saver.core.keys.thread(thread).log, count=1)
    return str(unpack(fields[channel_field("messages")])[2].decode())


def _stored_types(client: Any, saver: StreamSaver, thread: str) -> list[str]:
    field = channel_field("messages")
    return [
        unpack(fields[field])[2].decode() for _, fields in client.xrange(saver.core.keys.thread(thread).log)
        if field in fields
    ]


def _wipe(client: redis.Redis, prefix: str) -> None:
    for key in list(client.scan_iter(match=f"{prefix}:*", count=1000)):
        client.delete(key)


def _delete(writer: Writer, other: StreamSaver, client: Any, prefix: str, tmp: Path) -> None:
    other.delete_thread(writer.thread)


def _delete_and_write_anew(writer: Writer, other: StreamSaver, client: Any, prefix: str, tmp: Path) -> None:
    other.delete_thread(writer.thread)
    Writer(other, writer.thread, tag="o").step(3)  # the same thread, other lists, maybe under the same ids


def _prune(writer: Writer, other: StreamSaver, client: Any, prefix: str, tmp: Path) -> None:
    other.prune([writer.thread])


def _retain(writer: Writer, other: StreamSaver, client: Any, prefix: str, tmp: Path) -> None:
    other.retain([writer.thread], keep_last=2)


def _copy_onto(writer: Writer, other: StreamSaver, client: Any, prefix: str, tmp: Path) -> None:
    Writer(other, "source", tag="s").step(3)
    other.delete_thread(writer.thread)
    other.copy_thread("source", writer.thread)


def _restore_onto(writer: Writer, other: StreamSaver, client: Any, prefix: str, tmp: Path) -> None:
    at = Writer(other, "source", tag="s").step(3)
    other.delete_thread(writer.thread)
    restore_thread(other, "source", at=at, into=writer.thread)


def _import(writer: Writer, other: StreamSaver, client: Any, prefix: str, tmp: Path) -> None:
    # The export holds the thread as it was before the writer's last base; the import brings
    # back the entries under their ids, but not what the writer last wrote.
    _wipe(client, prefix)
    import_logs(client, tmp / "export.jsonl", prefix=prefix)


OPERATIONS: dict[str, Callable[[Writer, StreamSaver, Any, str, Path], None]] = {
    "delete": _delete,
    "delete and write anew": _delete_and_write_anew,
    "prune": _prune,
    "retain": _retain,
    "copy onto": _copy_onto,
    "restore onto": _restore_onto,
    "import": _import,
}


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_a_base_an_operation_removed_or_rewrote_is_refused_and_the_full_value_stored(
    client: redis.Redis, prefix: str, tmp_path: Path, operation: str
) -> None:
    writer, other = Writer(StreamSaver(client, prefix=prefix), "t"), StreamSaver(client, prefix=prefix)
    writer.saver.setup()
    writer.step(2)
    export_logs(client, prefix, tmp_path / "export.jsonl")
    writer.step(8)  # a new base at the 9th version, and a delta: the writer now links there
    assert _last_type(client, writer.saver, "t").startswith("delta:")
    OPERATIONS[operation](writer, other, client, prefix, tmp_path)
    last = writer.step()
    assert not _last_type(client, writer.saver, "t").startswith("delta:")
    assert writer.reads_back(last)
    nxt = writer.step()  # and the full value just stored is the base of the next delta
    assert _last_type(client, writer.saver, "t").startswith("delta:") and writer.reads_back(nxt)


def test_a_base_whose_thread_expired_is_refused_and_the_full_value_stored(client: redis.Redis, prefix: str) -> None:
    writer = Writer(StreamSaver(client, prefix=prefix, default_ttl=0.005), "t")  # 300 ms
    writer.saver.setup()
    writer.step(2)
    log = writer.saver.core.keys.thread("t").log
    deadline = time.monotonic() + 30
    while client.exists(log) and time.monotonic() < deadline:
        time.sleep(0.05)  # polls the condition: the server expires the thread on its own clock
    assert not client.exists(log)
    last = writer.step()
    assert not _last_type(client, writer.saver, "t").startswith("delta:")
    assert writer.reads_back(last)


def test_rebuilding_the_views_keeps_the_records_and_deltas_go_on(client: redis.Redis, prefix: str) -> None:
    from streamsaver.ops.replay import Replayer

    writer = Writer(StreamSaver(client, prefix=prefix), "t")
    writer.saver.setup()
    writer.step(2)
    Replayer(client, writer.saver.core.keys).rebuild()  # the log is untouched: what the writer remembers still holds
    last = writer.step()
    assert _last_type(client, writer.saver, "t").startswith("delta:") and writer.reads_back(last)


def test_each_namespace_keeps_the_record_of_its_own_base(client: redis.Redis, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    root, child = Writer(saver, "t", "", "r"), Writer(saver, "t", "child:1", "c")
    for _ in range(6):  # turn by turn in one log: each namespace's deltas link to its own base
        root.step()
        child.step()
    types = _stored_types(client, saver, "t")
    assert sum(t.startswith("delta:") for t in types) == 10  # all but each namespace's first
    assert root.reads_back(root.parent or "") and child.reads_back(child.parent or "")


def test_on_a_cluster_a_base_of_a_deleted_thread_is_refused(cluster_url: str, prefix: str) -> None:
    client = sync_client(cluster_url)
    writer, other = Writer(StreamSaver(client, prefix=prefix), "t"), StreamSaver(client, prefix=prefix)
    writer.saver.setup()
    writer.step(2)
    assert _last_type(client, writer.saver, "t").startswith("delta:")
    other.delete_thread("t")
    last = writer.step()
    assert not _last_type(client, writer.saver, "t").startswith("delta:") and writer.reads_back(last)
