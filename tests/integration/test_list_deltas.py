"""A list channel that only grows is stored as deltas; every reader sees the whole value.

The log keeps, for most versions of an append-only msgpack list (LangGraph's ``messages``), only
the elements added since the version before, linked to the entry holding it, with a full value
every 8 versions (`streamsaver.deltas`). What a reader gets back must be what was put, byte for
byte through the serde; and a delta must never point at something the log does not hold: a
saver whose memory is stale (another writer, a deleted, pruned, copied or restored thread) gets
``SSBASE`` from the append and sends the full value instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from helpers import config, new_checkpoint
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import Checkpoint

from streamsaver import StreamSaver
from streamsaver.codec import unpack
from streamsaver.events import channel_field

TEXT = " ".join(["agent", "tool", "call", "result", "graph", "node", "message", "redis"] * 12)


def _messages(turns: int, start: int = 0) -> list[Any]:
    out: list[Any] = []
    for turn in range(start, start + turns):
        out += [HumanMessage(f"{turn}: {TEXT}", id=f"h{turn}"), AIMessage(f"{turn}: {TEXT}", id=f"a{turn}")]
    return out


@pytest.fixture
def saver(client: redis.Redis, prefix: str) -> Iterator[StreamSaver]:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    yield saver


def _grow(saver: StreamSaver, thread: str, steps: int, previous: Checkpoint | None = None, start: int = 0) -> tuple[list[Any], Checkpoint | None, list[str]]:
    """`steps` puts, each adding two messages; returns the last list, checkpoint and the ids."""
    messages = list(previous["channel_values"]["messages"]) if previous else []
    ids: list[str] = []
    parent_id = previous["id"] if previous else None
    for step in range(start, start + steps):
        messages = messages + _messages(1, step)
        checkpoint, versions = new_checkpoint({"messages": messages, "step": step}, previous)
        saved = saver.put(config(thread, "", parent_id), checkpoint, {"step": step}, versions)
        parent_id = saved["configurable"]["checkpoint_id"]
        ids.append(parent_id)
        previous = checkpoint
    return messages, previous, ids


def _stored_types(client: redis.Redis, saver: StreamSaver, thread: str) -> list[str]:
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
