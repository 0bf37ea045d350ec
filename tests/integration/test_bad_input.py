"""Bad input is rejected before anything is written (invariant 7), and no input of one thread can
reach another (invariant 6); a server or client that cannot work is refused at setup, saying why.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import redis
import redis.asyncio
from helpers import (
    VARIANT_IDS,
    VARIANTS,
    SaverAdapter,
    config,
    new_checkpoint,
    open_adapter,
    snapshot,
)
from langchain_core.runnables import RunnableConfig
from redis.exceptions import NoPermissionError

from streamsaver import AsyncStreamSaver, StreamSaver
from streamsaver.errors import ConfigurationError, InvalidInputError, MissingModuleError, WrongKeyTypeError
from streamsaver.log.keys import Keyspace
from streamsaver.server.embedded import EmbeddedRedis


@pytest.fixture(params=VARIANTS, ids=VARIANT_IDS)
async def saver(
    request: pytest.FixtureRequest, redis_url: str, prefix: str
) -> AsyncIterator[SaverAdapter]:
    kind, view = request.param
    async with open_adapter(kind, view, redis_url, prefix, partitions=1) as adapter:
        yield adapter


def cid(saved: RunnableConfig) -> str:
    return str(saved["configurable"]["checkpoint_id"])


# -- no thread id ------------------------------------------------------------------------------

NO_THREAD: list[RunnableConfig] = [
    {"configurable": {}},
    {"configurable": {"thread_id": None}},
    {"configurable": {"checkpoint_ns": "", "checkpoint_id": "1"}},
    {},
]


@pytest.mark.parametrize("cfg", NO_THREAD, ids=["empty-configurable", "none", "ns-only", "empty"])
async def test_put_without_a_thread_id_raises_value_error_and_writes_nothing(
    saver: SaverAdapter, client: redis.Redis, prefix: str, cfg: RunnableConfig
) -> None:
    await saver.save("t1", {"a": 1})
    before = snapshot(client, prefix)
    checkpoint, versions = new_checkpoint({"a": 2})

    with pytest.raises(InvalidInputError) as caught:
        await saver.put(cfg, checkpoint, {}, versions)

    assert isinstance(caught.value, ValueError)
    assert snapshot(client, prefix) == before


@pytest.mark.parametrize("cfg", NO_THREAD, ids=["empty-configurable", "none", "ns-only", "empty"])
async def test_put_writes_without_a_thread_id_raises_value_error_and_writes_nothing(
    saver: SaverAdapter, client: redis.Redis, prefix: str, cfg: RunnableConfig
) -> None:
    await saver.save("t1", {"a": 1})
    before = snapshot(client, prefix)

    with pytest.raises(ValueError, match=r"configurable\.thread_id"):
        await saver.put_writes(cfg, [("a", 1)], "task1")

    assert snapshot(client, prefix) == before


async def test_put_writes_without_a_checkpoint_id_raises_and_writes_nothing(
    saver: SaverAdapter, client: redis.Redis, prefix: str
) -> None:
    await saver.save("t1", {"a": 1})
    before = snapshot(client, prefix)

    with pytest.raises(InvalidInputError):
        await saver.put_writes(config("t1"), [("a", 1)], "task1")

    assert snapshot(client, prefix) == before


async def test_reads_without_a_thread_id_raise_value_error(saver: SaverAdapter) -> None:
    with pytest.raises(InvalidInputError):
        await saver.get_tuple({"configurable": {}})
    with pytest.raises(InvalidInputError):
        await saver.list({"configurable": {"checkpoint_ns": ""}})


# -- ids and namespaces that would break naive keys or queries ---------------------------------

TRICKY = [
    "a",
    "a:b",
    "a%3Ab",
    "A",
    "x",
    "x*",
    "*",
    "-foo",
    "foo",
    "@th:{x}",
    "{p0}",
    "{",
    "}",
    "}{",
    "a|b",
    "a b",
    " ",
    "  ",
    "",
    '"q"',
    "'q'",
    "back\\slash",
    "a\\:b",
    "tab\there",
    "new\nline",
    "ümlaut",
    "日本語",
    "🦜🔗",
    "a,b",
    "a.b",
    "a-b",
    "a_b",
    "%",
    "%%",
    "(x)",
    "[x]",
    "~x",
    "$x",
    "a;b",
]
"""Thread ids: key separators, hash-tag braces, RediSearch syntax, escapes, blanks, unicode."""

NAMESPACES = ["", "c", "b:c", "a:b|c:d", "child:1", "*", "@nh:{x}", "{p0}", " ", "🦜", "x*", "-foo"]

COLLIDING = [
    ("a:b", "c"),
    ("a", "b:c"),
    ("a", "b|c"),
    ("a|b", "c"),
    ("x", "*"),
    ("x*", ""),
    ("", "a"),
    ("a", ""),
]
"""Pairs of (thread, namespace) that a key or query built by naive joining would mix up."""


def all_pairs() -> list[tuple[str, str]]:
    pairs = [(t, "") for t in TRICKY] + [("ns-host", n) for n in NAMESPACES] + COLLIDING
    return list(dict.fromkeys(pairs))


def label(thread_id: str, ns: str) -> str:
    return f"{thread_id!r}/{ns!r}"


async def _save_every_pair(saver: SaverAdapter) -> dict[tuple[str, str], str]:
    saved = {}
    for thread_id, ns in all_pairs():
        cfg, _ = await saver.save(
            thread_id,
            {"who": label(thread_id, ns)},
            checkpoint_ns=ns,
            metadata={"owner": [thread_id, ns], "thread": thread_id},
        )
        await saver.put_writes(cfg, [("who", "write " + label(thread_id, ns))], "task")
        saved[(thread_id, ns)] = cid(cfg)
    return saved


async def test_tricky_ids_round_trip_through_get_tuple(saver: SaverAdapter) -> None:
    saved = await _save_every_pair(saver)

    for (thread_id, ns), checkpoint_id in saved.items():
        got = await saver.get_tuple(config(thread_id, ns))
        assert got is not None, label(thread_id, ns)
        assert got.config["configurable"] == {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
        assert got.checkpoint["channel_values"] == {"who": label(thread_id, ns)}
        assert got.pending_writes == [("task", "who", "write " + label(thread_id, ns))]


async def test_tricky_ids_stay_isolated_in_list(saver: SaverAdapter) -> None:
    saved = await _save_every_pair(saver)

    for (thread_id, ns), checkpoint_id in saved.items():
        of_ns = await saver.list(config(thread_id, ns))
        assert [t.config["configurable"]["checkpoint_id"] for t in of_ns] == [checkpoint_id], label(
            thread_id, ns
        )
        of_thread = await saver.list(config(thread_id, None))
        expected = {cid_ for (t, _), cid_ in saved.items() if t == thread_id}
        assert {t.config["configurable"]["checkpoint_id"] for t in of_thread} == expected, label(
            thread_id, ns
        )


async def test_tricky_ids_stay_isolated_in_metadata_filters(saver: SaverAdapter) -> None:
    saved = await _save_every_pair(saver)

    for (thread_id, ns), checkpoint_id in saved.items():
        exact = await saver.list(None, filter={"owner": [thread_id, ns]})
        assert [t.config["configurable"]["checkpoint_id"] for t in exact] == [checkpoint_id], label(
            thread_id, ns
        )
        in_thread = await saver.list(config(thread_id, ns), filter={"thread": thread_id})
        assert [t.config["configurable"]["checkpoint_id"] for t in in_thread] == [checkpoint_id]


async def test_query_syntax_in_a_filter_value_matches_only_that_literal_value(
    saver: SaverAdapter,
) -> None:
    literal, _ = await saver.save("t1", {"a": 1}, metadata={"q": "* | @th:{x} -foo"})
    await saver.save("t2", {"a": 1}, metadata={"q": "foo"})
    await saver.save("t3", {"a": 1}, metadata={"q": "x"})

    assert [cid(t.config) for t in await saver.list(None, filter={"q": "* | @th:{x} -foo"})] == [
        cid(literal)
    ]
    assert await saver.list(None, filter={"q": "*"}) == []


@pytest.mark.parametrize(
    ("doomed", "survivors"), [("x", ["x*", "*"]), ("a", ["a:b", "a%3Ab", "A", "a|b"]), ("", ["a", " "])]
)
async def test_deleting_a_tricky_thread_leaves_look_alikes_intact(
    saver: SaverAdapter, doomed: str, survivors: list[str]
) -> None:
    for thread_id in [doomed, *survivors]:
        await saver.save(thread_id, {"who": thread_id})
        await saver.save(thread_id, {"who": thread_id}, checkpoint_ns="b:c")

    await saver.delete_thread(doomed)

    assert await saver.list(config(doomed, None)) == []
    for thread_id in survivors:
        got = await saver.get_tuple(config(thread_id))
        assert got is not None and got.checkpoint["channel_values"] == {"who": thread_id}, thread_id
        assert len(await saver.list(config(thread_id, None))) == 2


NOT_UNICODE = "lone \ud800 surrogate"
"""A Python string that has no UTF-8 spelling, so no Redis key, stream field or JSON can hold it."""


@pytest.mark.parametrize(
    "cfg", [config(NOT_UNICODE), config("t1", NOT_UNICODE)], ids=["thread_id", "checkpoint_ns"]
)
async def test_an_id_that_is_not_unicode_is_rejected_as_invalid_input_and_writes_nothing(
    saver: SaverAdapter, client: redis.Redis, prefix: str, cfg: RunnableConfig
) -> None:
    await saver.save("t1", {"a": 1})
    before = snapshot(client, prefix)
    checkpoint, versions = new_checkpoint({"a": 2})

    with pytest.raises(InvalidInputError):
        await saver.put(cfg, checkpoint, {}, versions)
    with pytest.raises(InvalidInputError):
        await saver.put_writes(
            {"configurable": {**cfg["configurable"], "checkpoint_id": "1"}}, [("a", 1)], "task"
        )
    with pytest.raises(InvalidInputError):
        await saver.get_tuple(cfg)

    assert snapshot(client, prefix) == before


async def test_a_checkpoint_channel_name_or_task_id_that_is_not_unicode_is_rejected(
    saver: SaverAdapter, client: redis.Redis, prefix: str
) -> None:
    saved, _ = await saver.save("t1", {"a": 1})
    before = snapshot(client, prefix)
    checkpoint, versions = new_checkpoint({NOT_UNICODE: 1})

    with pytest.raises(InvalidInputError):
        await saver.put(config("t1"), checkpoint, {}, versions)
    with pytest.raises(InvalidInputError):
        await saver.put_writes(saved, [("a", 1)], NOT_UNICODE)

    assert snapshot(client, prefix) == before


@pytest.mark.parametrize(
    "bad_filter",
    [{"k": object()}, {"k": NOT_UNICODE}, {NOT_UNICODE: 1}, {"k": b"raw"}],
    ids=["object", "not-unicode-value", "not-unicode-key", "bytes"],
)
async def test_a_filter_that_is_not_json_is_rejected_as_invalid_input(
    saver: SaverAdapter, bad_filter: dict[str, Any]
) -> None:
    await saver.save("t1", {"a": 1}, metadata={"k": "v"})

    with pytest.raises(InvalidInputError):
        await saver.list(None, filter=bad_filter)
    with pytest.raises(InvalidInputError):
        await saver.list(config("t1"), filter=bad_filter)


# -- values and metadata the saver cannot store ------------------------------------------------


UNSERIALIZABLE: dict[str, Any] = {"object": object(), "lambda": lambda x: x, "huge-int": 2**70}
NOT_JSON_METADATA: dict[str, Any] = {
    "object": {"x": object()},
    "bytes": {"x": b"raw"},
    "set": {"x": {1, 2}},
    "non-str-key": {1: "one"},
    "nested-object": {"x": {"y": [object()]}},
    "datetime": {"x": datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)},
    "nan-step": {"step": float("nan")},
    "infinity": {"x": [1.5, float("inf")]},
    "nested-minus-infinity": {"x": {"y": -float("inf")}},
}


@pytest.mark.parametrize("value", UNSERIALIZABLE.values(), ids=UNSERIALIZABLE.keys())
async def test_an_unserializable_channel_value_is_rejected_on_a_new_thread_leaving_no_keys(
    saver: SaverAdapter, client: redis.Redis, prefix: str, value: Any
) -> None:
    before = snapshot(client, prefix)
    checkpoint, versions = new_checkpoint({"ok": 1, "bad": value})

    with pytest.raises(InvalidInputError):
        await saver.put(config("t1"), checkpoint, {}, versions)

    assert snapshot(client, prefix) == before
    assert await saver.get_tuple(config("t1")) is None


@pytest.mark.parametrize("value", UNSERIALIZABLE.values(), ids=UNSERIALIZABLE.keys())
async def test_an_unserializable_channel_value_appends_nothing_to_an_existing_thread(
    saver: SaverAdapter, client: redis.Redis, prefix: str, value: Any
) -> None:
    saved, previous = await saver.save("t1", {"ok": 1})
    log = saver.saver.core.keys.thread("t1").log
    length, before = client.xlen(log), snapshot(client, prefix)
    checkpoint, versions = new_checkpoint({"bad": value}, previous)

    with pytest.raises(InvalidInputError):
        await saver.put(saved, checkpoint, {}, versions)

    assert client.xlen(log) == length
    assert snapshot(client, prefix) == before


@pytest.mark.parametrize("value", UNSERIALIZABLE.values(), ids=UNSERIALIZABLE.keys())
async def test_an_unserializable_write_is_rejected_and_appends_nothing(
    saver: SaverAdapter, client: redis.Redis, prefix: str, value: Any
) -> None:
    saved, _ = await saver.save("t1", {"ok": 1})
    before = snapshot(client, prefix)

    with pytest.raises(InvalidInputError):
        await saver.put_writes(saved, [("ok", 2), ("bad", value)], "task1")

    assert snapshot(client, prefix) == before
    got = await saver.get_tuple(saved)
    assert got is not None and got.pending_writes == []


@pytest.mark.parametrize("metadata", NOT_JSON_METADATA.values(), ids=NOT_JSON_METADATA.keys())
async def test_metadata_that_is_not_json_is_rejected_and_appends_nothing(
    saver: SaverAdapter, client: redis.Redis, prefix: str, metadata: dict[str, Any]
) -> None:
    await saver.save("t1", {"ok": 1})
    before = snapshot(client, prefix)
    checkpoint, versions = new_checkpoint({"ok": 2})

    with pytest.raises(InvalidInputError):
        await saver.put(config("t1"), checkpoint, metadata, versions)

    assert snapshot(client, prefix) == before


# -- servers and clients that cannot work ------------------------------------------------------


@pytest.fixture(scope="module")
def bare_redis_url() -> Iterator[str]:
    with EmbeddedRedis(modules=False) as server:
        yield server.url


def test_setup_on_redis_without_modules_says_what_to_install(bare_redis_url: str) -> None:
    client = redis.Redis.from_url(bare_redis_url)
    try:
        with pytest.raises(MissingModuleError) as caught:
            StreamSaver(client, prefix="bare").setup()
    finally:
        client.close()

    assert isinstance(caught.value, ConfigurationError)
    message = str(caught.value)
    assert "Redis 8" in message and "pip install 'streamsaver[embedded]'" in message


async def test_async_setup_on_redis_without_modules_raises_missing_module(
    bare_redis_url: str,
) -> None:
    aclient = redis.asyncio.Redis.from_url(bare_redis_url)
    try:
        with pytest.raises(MissingModuleError):
            await AsyncStreamSaver(aclient, prefix="bare").setup()
    finally:
        await aclient.aclose()


def test_a_first_put_without_setup_on_redis_without_modules_raises_missing_module(
    bare_redis_url: str,
) -> None:
    client = redis.Redis.from_url(bare_redis_url)
    checkpoint, versions = new_checkpoint({"a": 1})
    try:
        with pytest.raises(MissingModuleError):
            StreamSaver(client, prefix="bare2").put(config("t1"), checkpoint, {}, versions)
        assert client.exists("bare2:log:{p0}:t1") == 0
    finally:
        client.close()


def test_a_client_that_decodes_responses_is_refused(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    aclient = redis.asyncio.Redis.from_url(redis_url, decode_responses=True)

    with pytest.raises(ConfigurationError):
        StreamSaver(client)
    with pytest.raises(ConfigurationError):
        AsyncStreamSaver(aclient)
    client.close()


def test_a_deployment_keeps_the_partition_count_it_was_set_up_with(
    client: redis.Redis, prefix: str
) -> None:
    StreamSaver(client, prefix=prefix, partitions=8).setup()

    with pytest.raises(ConfigurationError, match="8 partitions"):
        StreamSaver(client, prefix=prefix, partitions=4).setup()
    reopened = StreamSaver(client, prefix=prefix)
    reopened.setup()
    StreamSaver(client, prefix=prefix, partitions=8).setup()

    assert reopened.core.keys.partitions == 8


@pytest.fixture
def acl_user(client: redis.Redis) -> Iterator[tuple[str, str]]:
    """A user that may run every command but MODULE, on every key; deleted afterwards."""
    name, password = f"streamsaver-test-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    client.execute_command(
        "ACL", "SETUSER", name, "reset", "on", f">{password}", "~*", "&*", "+@all", "-module"
    )
    yield name, password
    client.execute_command("ACL", "DELUSER", name)


def test_setup_works_for_a_user_who_cannot_run_module_list(
    redis_url: str, prefix: str, acl_user: tuple[str, str]
) -> None:
    name, password = acl_user
    limited = redis.Redis.from_url(redis_url, username=name, password=password)
    try:
        with pytest.raises(NoPermissionError):
            limited.execute_command("MODULE", "LIST")
        saver = StreamSaver(limited, prefix=prefix)
        saver.setup()
        checkpoint, versions = new_checkpoint({"a": 1})
        saved = saver.put(config("t1"), checkpoint, {"k": "v"}, versions)
        got = saver.get_tuple(saved)
        assert got is not None and got.checkpoint["channel_values"] == {"a": 1}
        assert [t.config for t in saver.list(None, filter={"k": "v"})] == [saved]
    finally:
        limited.close()


def test_a_user_limited_to_the_deployments_keys_can_set_up_and_use_it(
    client: redis.Redis, redis_url: str, prefix: str
) -> None:
    name, password = f"streamsaver-test-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    client.execute_command(
        "ACL", "SETUSER", name, "reset", "on", f">{password}", f"~{prefix}:*", "&*", "+@all"
    )
    limited = redis.Redis.from_url(redis_url, username=name, password=password)
    try:
        saver = StreamSaver(limited, prefix=prefix)
        saver.setup()
        checkpoint, versions = new_checkpoint({"a": 1})
        saved = saver.put(config("t1"), checkpoint, {"k": "v"}, versions)
        assert [t.config for t in saver.list(None, filter={"k": "v"})] == [saved]
        saver.delete_thread("t1")
        assert saver.get_tuple(saved) is None
    finally:
        limited.close()
        client.execute_command("ACL", "DELUSER", name)


# -- a key of another type in the way ------------------------------------------------------------


@pytest.mark.parametrize(("key", "kind"), [("log", "stream"), ("feed", "stream"), ("positions", "hash")])
def test_a_thread_key_of_another_type_refuses_the_append_before_any_write(
    sync_saver: StreamSaver, client: redis.Redis, prefix: str, key: str, kind: str
) -> None:
    keys = Keyspace(prefix).thread("clash")
    in_the_way = getattr(keys, key)
    client.set(in_the_way, "not mine")
    before = snapshot(client, prefix)
    checkpoint, versions = new_checkpoint({"messages": ["a"]})
    with pytest.raises(WrongKeyTypeError, match=f"WRONGTYPE streamsaver key .* holds a string, not a {kind}"):
        sync_saver.put(config("clash"), checkpoint, {"source": "input", "step": -1}, versions)
    assert snapshot(client, prefix) == before
