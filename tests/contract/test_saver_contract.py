"""The saver contract, one suite over four variants: sync/async x full/shallow view.

Each test states one behaviour LangGraph relies on. Where the shallow view keeps only the latest
checkpoint of a namespace, the test states what the shallow view promises instead.
"""

from __future__ import annotations

import asyncio
import datetime
import decimal
import re
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis
import redis.asyncio
from helpers import (
    VARIANT_IDS,
    VARIANTS,
    VIEWS,
    SaverAdapter,
    async_client,
    config,
    keys_of,
    new_checkpoint,
    open_adapter,
)
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.base import ERROR, INTERRUPT, RESUME, CheckpointTuple, writes_sort_key
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from streamsaver import AsyncStreamSaver, StreamSaver


@pytest.fixture(params=VARIANTS, ids=VARIANT_IDS)
async def saver(
    request: pytest.FixtureRequest, redis_url: str, prefix: str
) -> AsyncIterator[SaverAdapter]:
    kind, view = request.param
    async with open_adapter(kind, view, redis_url, prefix) as adapter:
        yield adapter


def ids(tuples: list[CheckpointTuple]) -> list[str]:
    return [t.config["configurable"]["checkpoint_id"] for t in tuples]


def cid(saved: dict[str, Any]) -> str:
    return str(saved["configurable"]["checkpoint_id"])


def latest_only(saver: SaverAdapter, newest_first: list[str]) -> list[str]:
    """What a listing of one namespace holds: all of it (full view) or the newest (shallow)."""
    return newest_first if saver.view == "full" else newest_first[:1]


MANY_TYPES: dict[str, Any] = {
    "text": "hello",
    "unicode": "grüße, 日本語, 🦜🔗",
    "empty_text": "",
    "bytes": b"\x00\x01binary\xff",
    "int": -42,
    "float": 3.25,
    "true": True,
    "false": False,
    "none": None,
    "list": [1, "two", 3.0, None],
    "nested": {"a": {"b": [1, {"c": "d"}], "e": None}, "f": []},
    "set": {1, 2, 3},
    "datetime": datetime.datetime(2024, 5, 17, 12, 30, tzinfo=datetime.timezone.utc),
    "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "decimal": decimal.Decimal("1.10"),
    "messages": [
        SystemMessage("be brief", id="m0"),
        HumanMessage("what is 2+2?", id="m1"),
        AIMessage(
            "", id="m2", tool_calls=[{"name": "add", "args": {"a": 2, "b": 2}, "id": "call1"}]
        ),
        ToolMessage("4", tool_call_id="call1", id="m3"),
        AIMessage("4", id="m4"),
    ],
}


# -- put and get_tuple -----------------------------------------------------------------------


async def test_get_tuple_returns_channel_values_of_many_types_as_put(saver: SaverAdapter) -> None:
    saved, checkpoint = await saver.save("t1", MANY_TYPES)

    got = await saver.get_tuple(saved)

    assert got is not None
    assert got.checkpoint["channel_values"] == MANY_TYPES
    assert got.checkpoint["id"] == checkpoint["id"]
    assert got.checkpoint["channel_versions"] == checkpoint["channel_versions"]


async def test_put_returns_the_config_of_the_saved_checkpoint(saver: SaverAdapter) -> None:
    checkpoint, versions = new_checkpoint({"a": 1})

    saved = await saver.put(config("t1", "ns1"), checkpoint, {}, versions)

    assert saved == {
        "configurable": {
            "thread_id": "t1",
            "checkpoint_ns": "ns1",
            "checkpoint_id": checkpoint["id"],
        }
    }


async def test_get_tuple_returns_metadata_as_put(saver: SaverAdapter) -> None:
    metadata = {
        "source": "loop",
        "step": 3,
        "custom": {"nested": [1, 2]},
        "flag": False,
        "nothing": None,
    }

    saved, _ = await saver.save("t1", {"a": 1}, metadata=metadata)

    got = await saver.get_tuple(saved)
    assert got is not None and got.metadata == metadata


async def test_get_tuple_without_checkpoint_id_returns_the_latest(saver: SaverAdapter) -> None:
    first, cp1 = await saver.save("t1", {"a": 1})
    second, _ = await saver.save("t1", {"a": 2}, parent=first, previous=cp1)

    got = await saver.get_tuple(config("t1"))

    assert got is not None
    assert got.config == second
    assert got.checkpoint["channel_values"] == {"a": 2}


async def test_get_tuple_by_id_returns_that_checkpoint_or_none_on_the_shallow_view(
    saver: SaverAdapter,
) -> None:
    first, cp1 = await saver.save("t1", {"a": 1})
    second, _ = await saver.save("t1", {"a": 2}, parent=first, previous=cp1)

    older = await saver.get_tuple(first)
    latest = await saver.get_tuple(second)

    assert latest is not None and latest.checkpoint["channel_values"] == {"a": 2}
    if saver.view == "full":
        assert older is not None and older.config == first
        assert older.checkpoint["channel_values"] == {"a": 1}
    else:
        assert older is None


async def test_get_tuple_of_an_unknown_thread_or_checkpoint_is_none(saver: SaverAdapter) -> None:
    await saver.save("t1", {"a": 1})

    assert await saver.get_tuple(config("nobody")) is None
    assert await saver.get_tuple(config("t1", "", str(uuid.uuid4()))) is None
    assert await saver.get_tuple(config("t1", "other-ns")) is None


async def test_parent_config_names_the_checkpoint_a_put_was_based_on(saver: SaverAdapter) -> None:
    first, cp1 = await saver.save("t1", {"a": 1})
    second, _ = await saver.save("t1", {"a": 2}, parent=first, previous=cp1)

    got_first = await saver.get_tuple(first) if saver.view == "full" else None
    got_second = await saver.get_tuple(second)

    assert got_second is not None and got_second.parent_config == first
    if saver.view == "full":
        assert got_first is not None and got_first.parent_config is None


async def test_a_channel_not_in_new_versions_keeps_its_earlier_value(saver: SaverAdapter) -> None:
    first, cp1 = await saver.save("t1", {"kept": "old", "changed": 1})
    second, _ = await saver.save("t1", {"changed": 2}, parent=first, previous=cp1)

    got = await saver.get_tuple(second)

    assert got is not None
    assert got.checkpoint["channel_values"] == {"kept": "old", "changed": 2}


async def test_a_channel_with_a_new_version_but_no_value_has_no_value(saver: SaverAdapter) -> None:
    checkpoint, versions = new_checkpoint({"a": 1})
    versions["gone"] = saver.get_next_version(None)
    checkpoint["channel_versions"]["gone"] = versions["gone"]

    saved = await saver.put(config("t1"), checkpoint, {}, versions)

    got = await saver.get_tuple(saved)
    assert got is not None
    assert got.checkpoint["channel_values"] == {"a": 1}
    assert got.checkpoint["channel_versions"] == checkpoint["channel_versions"]


async def test_namespaces_of_one_thread_are_isolated(saver: SaverAdapter) -> None:
    root, _ = await saver.save("t1", {"who": "root"})
    child, _ = await saver.save("t1", {"who": "child"}, checkpoint_ns="child:1")

    got_root = await saver.get_tuple(config("t1", ""))
    got_child = await saver.get_tuple(config("t1", "child:1"))

    assert got_root is not None and got_root.config == root
    assert got_root.checkpoint["channel_values"] == {"who": "root"}
    assert got_child is not None and got_child.config == child
    assert got_child.checkpoint["channel_values"] == {"who": "child"}
    assert ids(await saver.list(config("t1", "child:1"))) == [cid(child)]
    assert ids(await saver.list(config("t1", ""))) == [cid(root)]


async def test_list_without_a_namespace_lists_every_namespace_of_the_thread(
    saver: SaverAdapter,
) -> None:
    root1, cp = await saver.save("t1", {"a": 1})
    child, _ = await saver.save("t1", {"a": 2}, checkpoint_ns="child:1")
    root2, _ = await saver.save("t1", {"a": 3}, parent=root1, previous=cp)

    listed = ids(await saver.list(config("t1", None)))

    expected = (
        [cid(root2), cid(child), cid(root1)] if saver.view == "full" else [cid(root2), cid(child)]
    )
    assert listed == expected


# -- list within one thread --------------------------------------------------------------------


async def _history(saver: SaverAdapter, thread_id: str, n: int, **kw: Any) -> list[str]:
    """Put `n` checkpoints in a chain; returns their ids newest first."""
    parent, previous, out = None, None, []
    for step in range(n):
        parent, previous = await saver.save(
            thread_id,
            {"step": step},
            metadata={"step": step, "even": step % 2 == 0},
            parent=parent,
            previous=previous,
            **kw,
        )
        out.append(cid(parent))
    return out[::-1]


async def test_list_returns_a_thread_newest_first(saver: SaverAdapter) -> None:
    history = await _history(saver, "t1", 5)

    listed = await saver.list(config("t1"))

    assert ids(listed) == latest_only(saver, history)
    assert [t.checkpoint["channel_values"]["step"] for t in listed] == latest_only(
        saver, [4, 3, 2, 1, 0]
    )


async def test_list_stops_at_limit(saver: SaverAdapter) -> None:
    history = await _history(saver, "t1", 5)

    assert ids(await saver.list(config("t1"), limit=2)) == latest_only(saver, history[:2])
    assert await saver.list(config("t1"), limit=0) == []


async def test_list_before_returns_only_older_checkpoints(saver: SaverAdapter) -> None:
    history = await _history(saver, "t1", 5)

    listed = ids(await saver.list(config("t1"), before=config("t1", "", history[1])))

    assert listed == (history[2:] if saver.view == "full" else [])


async def test_list_before_and_limit_combine(saver: SaverAdapter) -> None:
    history = await _history(saver, "t1", 5)

    listed = ids(await saver.list(config("t1"), before=config("t1", "", history[0]), limit=2))

    assert listed == (history[1:3] if saver.view == "full" else [])


async def test_list_filter_within_a_thread_keeps_matching_checkpoints(saver: SaverAdapter) -> None:
    history = await _history(saver, "t1", 5)  # steps 4..0, newest first

    listed = ids(await saver.list(config("t1"), filter={"even": True}))

    assert listed == latest_only(saver, [history[0], history[2], history[4]])


async def test_list_returns_pending_writes_with_each_checkpoint(saver: SaverAdapter) -> None:
    saved, _ = await saver.save("t1", {"a": 1})
    await saver.put_writes(saved, [("a", 2)], "task1")

    listed = await saver.list(config("t1"))

    assert [t.pending_writes for t in listed] == [[("task1", "a", 2)]]


async def test_a_checkpoint_with_an_older_id_put_late_does_not_become_the_latest(
    saver: SaverAdapter,
) -> None:
    old, _ = new_checkpoint({"a": "old"})
    new, new_versions = new_checkpoint({"a": "new"})
    saved_new = await saver.put(config("t1"), new, {}, new_versions)

    await saver.put(config("t1"), old, {}, dict(old["channel_versions"]))

    got = await saver.get_tuple(config("t1"))
    assert got is not None
    assert got.config == saved_new
    assert got.checkpoint["channel_values"] == {"a": "new"}


async def test_writes_for_a_replaced_checkpoint_do_not_reach_the_latest(
    saver: SaverAdapter,
) -> None:
    first, cp1 = await saver.save("t1", {"a": 1})
    second, _ = await saver.save("t1", {"a": 2}, parent=first, previous=cp1)

    await saver.put_writes(first, [("a", "late")], "task1")

    latest = await saver.get_tuple(config("t1"))
    assert latest is not None and latest.config == second and latest.pending_writes == []
    older = await saver.get_tuple(first)
    if saver.view == "full":
        assert older is not None and older.pending_writes == [("task1", "a", "late")]
    else:
        assert older is None


async def test_list_pages_through_more_than_a_hundred_checkpoints(saver: SaverAdapter) -> None:
    history = await _history(saver, "t1", 230)

    assert ids(await saver.list(config("t1"))) == latest_only(saver, history)
    assert ids(await saver.list(config("t1"), limit=150)) == latest_only(saver, history[:150])


async def test_a_filtered_list_pages_through_more_than_a_hundred_threads(
    saver: SaverAdapter,
) -> None:
    made = [
        cid((await saver.save(f"t{i}", {"i": i}, metadata={"batch": "b"}))[0]) for i in range(230)
    ]

    assert ids(await saver.list(None, filter={"batch": "b"})) == made[::-1]
    assert ids(await saver.list(None, filter={"batch": "b"}, limit=150)) == made[::-1][:150]
    assert (
        ids(await saver.list(None, filter={"batch": "b"}, before=config("t0", "", made[200])))
        == made[:200][::-1]
    )


# -- list across threads, metadata filters -------------------------------------------------------

FILTER_VALUES: list[Any] = [
    7,
    -1,
    2.5,
    True,
    False,
    None,
    "plain",
    "with spaces & @th:{x} * -not",
    {"nested": {"deep": [1, "two", None]}},
    [1, 2, 3],
    [],
    {},
]


async def test_list_across_threads_filters_on_custom_keys_of_any_json_type(
    saver: SaverAdapter,
) -> None:
    by_value: dict[int, str] = {}
    for i, value in enumerate(FILTER_VALUES):
        saved, _ = await saver.save(f"thread-{i}", {"i": i}, metadata={"custom": value, "index": i})
        by_value[i] = cid(saved)

    for i, value in enumerate(FILTER_VALUES):
        listed = await saver.list(None, filter={"custom": value})
        assert ids(listed) == [by_value[i]], f"filter custom={value!r}"
        assert listed[0].metadata["custom"] == value


async def test_filter_needs_every_key_to_match(saver: SaverAdapter) -> None:
    both, _ = await saver.save("t1", {"a": 1}, metadata={"user": "ann", "tier": 2})
    await saver.save("t2", {"a": 1}, metadata={"user": "ann", "tier": 3})
    await saver.save("t3", {"a": 1}, metadata={"user": "bob", "tier": 2})

    assert ids(await saver.list(None, filter={"user": "ann", "tier": 2})) == [cid(both)]


async def test_filter_on_none_does_not_match_a_missing_key(saver: SaverAdapter) -> None:
    with_none, _ = await saver.save("t1", {"a": 1}, metadata={"maybe": None})
    await saver.save("t2", {"a": 1}, metadata={"other": 1})

    assert ids(await saver.list(None, filter={"maybe": None})) == [cid(with_none)]


async def test_filter_treats_an_integral_float_as_the_equal_int(saver: SaverAdapter) -> None:
    saved, _ = await saver.save("t1", {"a": 1}, metadata={"n": 2.0})

    assert ids(await saver.list(None, filter={"n": 2})) == [cid(saved)]


async def test_filter_on_source_and_step_matches_standard_metadata(saver: SaverAdapter) -> None:
    await saver.save("t1", {"a": 1}, metadata={"source": "input", "step": -1})
    loop, _ = await saver.save("t2", {"a": 1}, metadata={"source": "loop", "step": 0})

    assert ids(await saver.list(None, filter={"source": "loop", "step": 0})) == [cid(loop)]
    assert await saver.list(None, filter={"source": "update"}) == []


async def test_list_across_threads_is_newest_first_and_limited(saver: SaverAdapter) -> None:
    made = [
        cid((await saver.save(f"t{i}", {"i": i}, metadata={"batch": "b"}))[0]) for i in range(5)
    ]

    assert ids(await saver.list(None, filter={"batch": "b"})) == made[::-1]
    assert ids(await saver.list(None, filter={"batch": "b"}, limit=3)) == made[::-1][:3]
    assert ids(await saver.list(None, limit=2)) == made[::-1][:2]


# -- pending writes ----------------------------------------------------------------------------


async def test_pending_writes_come_back_in_writes_sort_key_order(saver: SaverAdapter) -> None:
    saved, _ = await saver.save("t1", {"a": 1})
    calls = [
        ("task-b", "~2", [("x", "b0"), ("y", "b1")]),
        ("task-a", "~2", [("x", "a0")]),
        ("task-c", "~1", [("z", "c0"), ("z", "c1"), ("z", "c2")]),
        ("task-d", "", [("x", "d0")]),
    ]
    for task_id, path, writes in calls:
        await saver.put_writes(saved, writes, task_id, path)

    got = await saver.get_tuple(saved)

    keyed = [
        (writes_sort_key(path, task_id, idx), (task_id, channel, value))
        for task_id, path, writes in calls
        for idx, (channel, value) in enumerate(writes)
    ]
    assert got is not None
    assert got.pending_writes == [w for _, w in sorted(keyed, key=lambda kw: kw[0])]


async def test_ordinary_writes_keep_the_first_write_per_task_and_index(saver: SaverAdapter) -> None:
    saved, _ = await saver.save("t1", {"a": 1})

    await saver.put_writes(saved, [("a", "first-0"), ("b", "first-1")], "task1")
    await saver.put_writes(saved, [("c", "second-0")], "task1")
    await saver.put_writes(saved, [("c", "other-task-0")], "task2")

    got = await saver.get_tuple(saved)
    assert got is not None
    assert got.pending_writes == [
        ("task1", "a", "first-0"),
        ("task1", "b", "first-1"),
        ("task2", "c", "other-task-0"),
    ]


@pytest.mark.parametrize("special", [ERROR, INTERRUPT, RESUME])
async def test_special_writes_overwrite_the_earlier_one_of_the_task(
    saver: SaverAdapter, special: str
) -> None:
    saved, _ = await saver.save("t1", {"a": 1})

    await saver.put_writes(saved, [(special, "first")], "task1")
    await saver.put_writes(saved, [(special, "second")], "task1")
    await saver.put_writes(saved, [("a", "ordinary")], "task1")

    got = await saver.get_tuple(saved)
    assert got is not None
    assert sorted(got.pending_writes) == sorted(
        [("task1", special, "second"), ("task1", "a", "ordinary")]
    )


async def test_writes_stay_with_their_namespace(saver: SaverAdapter) -> None:
    root, _ = await saver.save("t1", {"a": 1})
    child, _ = await saver.save("t1", {"a": 1}, checkpoint_ns="child:1")

    await saver.put_writes(child, [("a", "child-write")], "task1")

    got_root, got_child = await saver.get_tuple(root), await saver.get_tuple(child)
    assert got_root is not None and got_root.pending_writes == []
    assert got_child is not None and got_child.pending_writes == [("task1", "a", "child-write")]


# -- delete_thread -----------------------------------------------------------------------------


def thread_key_pattern(saver: SaverAdapter, prefix: str, thread_id: str) -> re.Pattern[bytes]:
    keys = saver.saver.core.keys.thread(thread_id)
    return re.compile(
        rb"^%s:[a-z]+(:[a-z]+)?:%s:%s(:|$)"
        % (
            re.escape(prefix.encode()),
            re.escape(keys.slot_tag.encode()),
            re.escape(keys.escaped_thread.encode()),
        )
    )


async def _populate(saver: SaverAdapter, thread_id: str) -> None:
    first, cp = await saver.save(thread_id, {"a": 1, "b": "x"}, metadata={"owner": thread_id})
    await saver.put_writes(first, [("a", 2), (ERROR, "boom")], "task1")
    second, _ = await saver.save(
        thread_id, {"a": 3}, parent=first, previous=cp, metadata={"owner": thread_id}
    )
    await saver.put_writes(second, [("b", "y")], "task2", "~1")
    child, _ = await saver.save(
        thread_id, {"c": 1}, checkpoint_ns="child:1", metadata={"owner": thread_id}
    )
    await saver.put_writes(child, [("c", 2)], "task3")


async def test_delete_thread_removes_every_key_of_the_thread_but_the_feed_and_meta(
    saver: SaverAdapter, client: redis.Redis, prefix: str
) -> None:
    await _populate(saver, "doomed")
    await _populate(saver, "kept")
    kept, doomed = (
        thread_key_pattern(saver, prefix, "kept"),
        thread_key_pattern(saver, prefix, "doomed"),
    )
    kept_before = {k: client.type(k) for k in keys_of(client, prefix) if kept.match(k)}
    doomed_before = {k for k in keys_of(client, prefix) if doomed.match(k)}
    assert len(kept_before) == len(doomed_before) > 5
    feeds = {
        saver.saver.core.keys.feed(p).encode() for p in range(saver.saver.core.keys.partitions)
    }
    meta = saver.saver.core.keys.meta.encode()

    await saver.delete_thread("doomed")

    remaining = keys_of(client, prefix)
    assert remaining - feeds - {meta} == set(kept_before)
    assert {k: client.type(k) for k in kept_before} == kept_before


async def test_delete_thread_leaves_other_threads_readable(saver: SaverAdapter) -> None:
    await _populate(saver, "doomed")
    await _populate(saver, "kept")
    kept_latest = await saver.get_tuple(config("kept"))
    kept_listed = await saver.list(config("kept", None))

    await saver.delete_thread("doomed")

    assert await saver.get_tuple(config("doomed")) is None
    assert await saver.get_tuple(config("doomed", "child:1")) is None
    assert await saver.list(config("doomed", None)) == []
    assert await saver.list(None, filter={"owner": "doomed"}) == []
    assert await saver.get_tuple(config("kept")) == kept_latest
    assert await saver.list(config("kept", None)) == kept_listed


async def test_a_deleted_thread_can_start_again(saver: SaverAdapter) -> None:
    await _populate(saver, "t1")
    await saver.delete_thread("t1")

    saved, _ = await saver.save("t1", {"fresh": True})

    got = await saver.get_tuple(config("t1"))
    assert got is not None and got.config == saved
    assert got.checkpoint["channel_values"] == {"fresh": True}
    assert got.parent_config is None and got.pending_writes == []
    assert ids(await saver.list(config("t1", None))) == [cid(saved)]


async def test_deleting_an_unknown_thread_changes_nothing_readable(saver: SaverAdapter) -> None:
    saved, _ = await saver.save("t1", {"a": 1})

    await saver.delete_thread("never-seen")

    assert ids(await saver.list(None)) == [cid(saved)]


# -- versions and setup -------------------------------------------------------------------------


async def test_get_next_version_grows_as_a_string(saver: SaverAdapter) -> None:
    current: str | None = None
    for _ in range(120):
        following = saver.get_next_version(current)
        assert isinstance(following, str)
        assert current is None or following > current
        current = following


async def test_get_next_version_grows_from_int_versions(saver: SaverAdapter) -> None:
    assert saver.get_next_version(9) > saver.get_next_version(8)  # type: ignore[arg-type]
    assert saver.get_next_version(saver.get_next_version(9)) > saver.get_next_version(9)  # type: ignore[arg-type]


async def test_setup_twice_is_harmless(saver: SaverAdapter) -> None:
    saved, _ = await saver.save("t1", {"a": 1})

    await saver.setup()
    await saver.setup()

    got = await saver.get_tuple(saved)
    assert got is not None and got.checkpoint["channel_values"] == {"a": 1}


async def test_setup_from_two_savers_at_once_on_a_new_deployment(
    saver: SaverAdapter, redis_url: str
) -> None:
    fresh = f"c{uuid.uuid4().hex[:12]}"
    async with (
        open_adapter(saver.kind, saver.view, redis_url, fresh, setup=False) as one,
        open_adapter(saver.kind, saver.view, redis_url, fresh, setup=False) as two,
    ):
        if saver.kind == "sync":
            with ThreadPoolExecutor(2) as pool:
                for future in [pool.submit(one.saver.setup), pool.submit(two.saver.setup)]:  # type: ignore[arg-type]
                    future.result()
        else:
            await asyncio.gather(one.setup(), two.setup())

        saved, _ = await one.save("t1", {"a": 1}, metadata={"k": "v"})
        got = await two.get_tuple(saved)
        assert got is not None and got.checkpoint["channel_values"] == {"a": 1}
        assert ids(await two.list(None, filter={"k": "v"})) == [cid(saved)]


# -- read your writes, from any client ----------------------------------------------------------


async def test_the_other_kind_of_saver_on_a_new_client_reads_what_was_put(
    saver: SaverAdapter, redis_url: str, prefix: str
) -> None:
    saved, _ = await saver.save("t1", {"a": MANY_TYPES["messages"]}, metadata={"who": "writer"})
    await saver.put_writes(saved, [("a", "pending")], "task1")
    other_kind = "async" if saver.kind == "sync" else "sync"

    async with open_adapter(other_kind, saver.view, redis_url, prefix) as reader:
        got = await reader.get_tuple(config("t1"))
        listed = await reader.list(None, filter={"who": "writer"})

    assert got is not None and got.config == saved
    assert got.checkpoint["channel_values"] == {"a": MANY_TYPES["messages"]}
    assert got.pending_writes == [("task1", "a", "pending")]
    assert ids(listed) == [cid(saved)]


async def test_what_the_other_kind_of_saver_puts_is_read_here(
    saver: SaverAdapter, redis_url: str, prefix: str
) -> None:
    other_kind = "async" if saver.kind == "sync" else "sync"
    async with open_adapter(other_kind, saver.view, redis_url, prefix) as writer:
        first, cp = await writer.save("t1", {"a": 1})
        second, _ = await writer.save("t1", {"a": 2}, parent=first, previous=cp)
        await writer.put_writes(second, [("a", 3)], "task1")

    got = await saver.get_tuple(config("t1"))

    assert got is not None and got.config == second and got.parent_config == first
    assert got.pending_writes == [("task1", "a", 3)]
    assert ids(await saver.list(config("t1"))) == latest_only(saver, [cid(second), cid(first)])


# -- the async saver's sync methods --------------------------------------------------------------


@pytest.fixture(params=VIEWS)
async def async_only(
    request: pytest.FixtureRequest, redis_url: str, prefix: str
) -> AsyncIterator[AsyncStreamSaver]:
    aclient = async_client(redis_url)
    saver = AsyncStreamSaver(aclient, view=request.param, prefix=prefix)
    await saver.setup()
    yield saver
    await aclient.aclose()


async def test_async_saver_sync_methods_work_from_another_thread(
    async_only: AsyncStreamSaver,
) -> None:
    checkpoint, versions = new_checkpoint({"a": "from a thread"})

    saved = await asyncio.to_thread(async_only.put, config("t1"), checkpoint, {"k": 1}, versions)
    await asyncio.to_thread(async_only.put_writes, saved, [("a", "w")], "task1")
    loop = asyncio.get_running_loop()
    with ThreadPoolExecutor(1) as pool:
        got = await loop.run_in_executor(pool, async_only.get_tuple, config("t1"))
        listed = await loop.run_in_executor(pool, lambda: list(async_only.list(config("t1"))))
    await asyncio.to_thread(async_only.delete_thread, "t1")

    assert got is not None and got.config == saved
    assert got.checkpoint["channel_values"] == {"a": "from a thread"}
    assert got.pending_writes == [("task1", "a", "w")]
    assert ids(listed) == [cid(saved)]
    assert await async_only.aget_tuple(config("t1")) is None


async def test_async_saver_sync_methods_refuse_the_event_loop_thread(
    async_only: AsyncStreamSaver,
) -> None:
    checkpoint, versions = new_checkpoint({"a": 1})

    with pytest.raises(asyncio.InvalidStateError):
        async_only.get_tuple(config("t1"))
    with pytest.raises(asyncio.InvalidStateError):
        async_only.put(config("t1"), checkpoint, {}, versions)
    with pytest.raises(asyncio.InvalidStateError):
        list(async_only.list(config("t1")))
    assert await async_only.aget_tuple(config("t1")) is None


async def test_sync_saver_async_methods_match_its_sync_methods(
    client: redis.Redis, prefix: str
) -> None:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    checkpoint, versions = new_checkpoint({"a": 1})

    saved = await saver.aput(config("t1"), checkpoint, {}, versions)
    await saver.aput_writes(saved, [("a", 2)], "task1")

    assert await saver.aget_tuple(saved) == saver.get_tuple(saved)
    assert [t async for t in saver.alist(config("t1"))] == list(saver.list(config("t1")))


def test_serde_sanity_many_types_round_trip_through_the_default_serializer() -> None:
    """Guards the premise of the many-types test: the serde itself returns these values equal."""
    serde = JsonPlusSerializer()
    assert serde.loads_typed(serde.dumps_typed(MANY_TYPES)) == MANY_TYPES


async def test_list_of_a_config_with_a_checkpoint_id_lists_only_that_checkpoint(
    saver: SaverAdapter,
) -> None:
    history = await _history(saver, "t1", 3)  # newest first
    await saver.save("t1", {"x": 1}, checkpoint_ns="inner")

    for wanted in history:
        listed = ids(await saver.list(config("t1", "", wanted)))
        # The shallow view holds only the latest checkpoint: another id lists nothing.
        assert listed == ([wanted] if saver.view == "full" or wanted == history[0] else [])
    assert ids(await saver.list(config("t1", None, history[1]))) == latest_only(saver, [history[1]])[
        : 1 if saver.view == "full" else 0
    ]
    assert await saver.list(config("t1", "", "not-an-id")) == []
