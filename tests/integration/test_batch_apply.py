"""A batch of one thread's events applied in one script equals applying them one at a time.

Replay applies a page of a log as one ``apply.lua`` call that holds back root JSON.SETs and
writes each document once; these tests pin that the result is the same as one call per event,
also where a held document must be written early (a purge in the middle of the batch) or must
survive (an older checkpoint arriving after a newer one changes nothing in the shallow view).
"""

from __future__ import annotations

from typing import Any

import pytest
import redis
from helpers import config, new_checkpoint, snapshot
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from streamsaver import StreamSaver
from streamsaver.events import Event
from streamsaver.keys import Keyspace
from streamsaver.replay import Replayer
from streamsaver.saver.append import apply_batch_call, apply_call, checkpoint_saved, thread_deleted, writes_saved
from streamsaver.saver.sync import round_trip

SERDE = JsonPlusSerializer()
THREAD = "batch {thread}: one"


def _checkpoint(ns: str, values: dict[str, Any], previous: Any = None) -> tuple[Event, Any]:
    checkpoint, versions = new_checkpoint(values, previous)
    parent = previous["id"] if previous else None
    event = checkpoint_saved(
        SERDE, config(THREAD, ns, parent), checkpoint, {"source": "loop", "step": len(values)}, versions
    )
    return event, checkpoint


def _writes(ns: str, checkpoint_id: str, task: str) -> Event:
    return writes_saved(SERDE, config(THREAD, ns, checkpoint_id), [("messages", task), ("__error__", "x")], task, "")


def _events() -> list[Event]:
    """Checkpoints in two namespaces, writes before and after their checkpoint, an older
    checkpoint arriving last in one namespace, a purge in the middle, and a thread after it."""
    stale, _ = _checkpoint("child:1", {"inner": 0})  # the oldest id, logged last of its namespace
    root1, c1 = _checkpoint("", {"messages": ["a"]})
    root2, c2 = _checkpoint("", {"messages": ["a", "b"]}, c1)
    early = _writes("", c2["id"], "task-early")  # LangGraph may log a step's writes first
    sub1, s1 = _checkpoint("child:1", {"inner": 1})
    sub2, _ = _checkpoint("child:1", {"inner": 2}, s1)
    root3, c3 = _checkpoint("", {"messages": ["a", "b", "c"], "other": 1}, c2)
    late = _writes("", c3["id"], "task-late")
    before_purge = [root1, early, root2, sub1, sub2, root3, late, stale]
    again, c4 = _checkpoint("", {"messages": ["z"]})
    return [*before_purge, thread_deleted(THREAD), again, _writes("", c4["id"], "task-after")]


def _renamed(state: dict[bytes, Any], prefix: str) -> dict[bytes, Any]:
    return {k.replace(prefix.encode(), b"P", 1): v for k, v in state.items()}


@pytest.mark.parametrize("split_at", [None, 3, 9])
def test_a_batch_apply_equals_one_apply_per_event(client: redis.Redis, prefix: str, split_at: int | None) -> None:
    one, batch = f"{prefix}one", f"{prefix}batch"
    for p in (one, batch):
        StreamSaver(client, prefix=p).setup()
    events = _events()
    ids = [f"1700000000000-{n}" for n in range(len(events))]
    singles = Keyspace(one), Keyspace(batch)
    round_trip(client, [apply_call(e, i, singles[0], ["full", "shallow"]) for e, i in zip(events, ids)])
    logged = list(zip(events, ids))
    pages = [logged] if split_at is None else [logged[:split_at], logged[split_at:]]
    round_trip(client, [apply_batch_call(page, singles[1], ["full", "shallow"]) for page in pages])

    expected, got = _renamed(snapshot(client, one), one), _renamed(snapshot(client, batch), batch)
    assert any(b":shallow:cp:" in k for k in got)
    assert got == expected


def test_applying_a_batch_again_changes_nothing(client: redis.Redis, prefix: str) -> None:
    StreamSaver(client, prefix=prefix).setup()
    events = _events()
    logged = list(zip(events, [f"1700000000000-{n}" for n in range(len(events))]))
    call = apply_batch_call(logged, Keyspace(prefix), ["full", "shallow"])
    first = round_trip(client, [call])
    state = snapshot(client, prefix)
    assert round_trip(client, [call]) == [0] and first[0] > 0
    assert snapshot(client, prefix) == state


def test_a_batch_names_one_thread(prefix: str) -> None:
    events = [thread_deleted("a"), thread_deleted("b")]
    with pytest.raises(ValueError, match="one thread"):
        apply_batch_call([(e, f"1-{n}") for n, e in enumerate(events)], Keyspace(prefix), ["full"])


def test_a_failed_batch_leaves_its_thread_to_be_folded_again(client: redis.Redis, prefix: str) -> None:
    """A batch that fails midway (here: a foreign key where the view needs a hash) erases the
    thread from the view instead of leaving pointers ahead of documents; once the cause is
    gone, resuming with the views kept folds it to exactly the live view."""
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    parent: Any = None
    for ns, values in (("", {"messages": ["a"]}), ("", {"messages": ["a", "b"]}), ("child", {"x": 1})):
        checkpoint, versions = new_checkpoint(values, parent if ns == "" else None)
        saved = saver.put(config(THREAD, ns, parent["id"] if parent and ns == "" else None), checkpoint, {}, versions)
        parent = checkpoint if ns == "" else parent
        saver.put_writes(saved, [("messages", "w")], "task", "")
    live = snapshot(client, prefix)
    replayer = Replayer.open(client, prefix)
    replayer.drop(["shallow"])
    stray = saver.core.keys.thread(THREAD).in_ns("shallow", "writes", "child")
    client.set(stray, "not a hash")

    with pytest.raises(redis.ResponseError):
        replayer.replay(["shallow"])
    left = [k for k in snapshot(client, prefix) if b":shallow:" in k]
    assert left == [stray.encode()]  # the thread erased from the view, not torn

    client.delete(stray)
    replayer.replay(["shallow"])
    assert snapshot(client, prefix) == live
