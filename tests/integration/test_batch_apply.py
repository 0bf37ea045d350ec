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
from streamsaver.checkpoints.append import (
    apply_batch_call,
    apply_call,
    checkpoint_saved,
    thread_deleted,
    writes_saved,
)
from streamsaver.drivers.sync import round_trip
from streamsaver.log.events import Event
from streamsaver.log.keys import Keyspace
from streamsaver.ops.replay import Replayer
from streamsaver.scripts import APPLY

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
    round_trip(client, [apply_call(e, i, singles[0], ["full", "shallow"]) for e, i in zip(events, ids, strict=True)])
    logged = list(zip(events, ids, strict=True))
    pages = [logged] if split_at is None else [logged[:split_at], logged[split_at:]]
    round_trip(client, [apply_batch_call(page, singles[1], ["full", "shallow"]) for page in pages])

    expected, got = _renamed(snapshot(client, one), one), _renamed(snapshot(client, batch), batch)
    assert any(b":shallow:cp:" in k for k in got)
    assert got == expected


def test_applying_a_batch_again_changes_nothing(client: redis.Redis, prefix: str) -> None:
    StreamSaver(client, prefix=prefix).setup()
    events = _events()
    logged = list(zip(events, [f"1700000000000-{n}" for n in range(len(events))], strict=True))
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
    saver = StreamSaver(client, prefix=prefix, projections=("full", "shallow"))
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


def _held_ops(p: str, ids: list[str]) -> list[list[tuple[str, ...]]]:
    """Ops on hashes, sets, a sorted set and a document that a batch holds, with every case the
    deferral must get right: "if new" on a stored field and on a missing one, a guard reading a
    held field, a DEL then new fields, an op it does not hold naming a held key, a non-root
    JSON.SET."""
    h, s, z, d, e, f, j = (f"{p}:{name}" for name in ("h", "s", "z", "d", "e", "f", "j"))
    return [
        [("SS.PTRNX", h, "old", "a"), ("SADD", s, "m1"), ("ZADD", z, "0", "b")],
        [
            ("SS.IFNEWER", h, "a", ids[8]),
            ("HSET", h, "g", "v", "g2", "v2"),
            ("SADD", s, "m1", "m2"),
            ("ZADD", z, "0", "a"),
        ],
        [("SS.PTR", h, "a"), ("SS.PTRNX", h, "old2"), ("DEL", d), ("SS.PTRNX", d, "k"), ("HSET", d, "j", "1")],
        [("SS.IFEQ", d, "k", ids[2]), ("SADD", s, "m3"), ("SS.IFNEWER", h, "keep", "zzz"), ("HSET", h, "g", "v3")],
        [("SS.IFEQ", d, "k", "no"), ("HSET", d, "gated", "off"), ("SS.IFNEWER", h, "a", ids[0]), ("HSET", h, "x", "y")],
        [("SS.PTRNX", h, "kept"), ("SS.IFNEWER", h, "kept", "zzz"), ("SS.PTRNX", h, "b"), ("ZADD", z, "1", "b")],
        [("DEL", e), ("HSET", e, "n", "1"), ("SS.IFNEWER", e, "n", "2"), ("HSET", e, "m", "1")],
        [("SS.FOLLOW", d, "k", "0"), ("SS.FOLLOW", e, "n", "2"), ("HSET", e, "o", "1"), ("SS.FOLLOW", f, "c", "1")],
        [("JSON.SET", j, "$", '{"a":1}'), ("JSON.SET", j, "$.a", "2"), ("JSON.SET", j, "$", '{"b":1}')],
        [("JSON.SET", j, "$", '{"c":1}'), ("SS.PTRNX", h, "c"), ("SREM", s, "m2"), ("SADD", s, "m2", "m4")],
    ]


def _state(client: redis.Redis, p: str) -> dict[str, Any]:
    """Each key's content, hash fields in stored order (HGETALL as the server lists them)."""
    flat = "return redis.call('HGETALL', KEYS[1])"
    return {
        "h": client.eval(flat, 1, f"{p}:h"),
        "d": client.eval(flat, 1, f"{p}:d"),
        "e": client.eval(flat, 1, f"{p}:e"),
        "f": client.eval(flat, 1, f"{p}:f"),
        "s": sorted(client.smembers(f"{p}:s")),
        "z": client.zrange(f"{p}:z", 0, -1, withscores=True),
        "j": client.execute_command("JSON.GET", f"{p}:j"),
    }


def test_held_writes_end_as_one_call_per_event_would(client: redis.Redis, prefix: str) -> None:
    ids = [f"1700000000000-{n}" for n in range(1, 12)]
    for p in (f"{prefix}one", f"{prefix}batch"):
        client.hset(f"{p}:h", mapping={"old": "x", "keep": "k", "kept": "k2"})
        client.hset(f"{p}:d", mapping={"gone": "1"})
        client.hset(f"{p}:e", mapping={"gone": "1", "n": "0"})
    one, batch = f"{prefix}one", f"{prefix}batch"

    def block(event_id: str, ops: list[tuple[str, ...]]) -> list[str]:
        return [event_id, "1", "v", str(len(ops)), *(x for op in ops for x in (str(len(op)), *op))]

    # `ids` holds one id more than there are events: the last is never used
    singles = [
        APPLY.evalsha_args([f"{one}:pos"], ["1", *block(i, ops), "0"])
        for i, ops in zip(ids, _held_ops(one, ids), strict=False)
    ]
    events = [x for i, ops in zip(ids, _held_ops(batch, ids), strict=False) for x in block(i, ops)]
    round_trip(client, [*singles, APPLY.evalsha_args([f"{batch}:pos"], [str(len(ids) - 1), *events, "0"])])

    state = _state(client, one)
    assert state["h"][:6] == [b"old", b"x", b"keep", b"k", b"kept", b"k2"] and b"gated" not in state["d"]
    assert state["e"] == [b"n", b"2", b"o", b"1"] and state["f"] == [b"c", b"1"] and b"j" in state["d"]
    assert _state(client, batch) == state
    assert client.hgetall(f"{batch}:pos") == client.hgetall(f"{one}:pos")
