"""Who wrote which fact, when: every store put and delete logs the store's writer name and, made
inside a LangGraph run, that run's thread, task namespace and run id; outside a run, none. The
async store reads the run where each call is made, not where its batch runs. Logs written
before writers were replay as they did; inspect, subscribers and export show and keep them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, TypedDict

import pytest
import redis
import redis.asyncio
from cli_harness import items, run
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.store.base import BaseStore
from redis.cluster import RedisCluster

from projectors.store_domain import STORE
from streamsaver import AsyncStreamStore, StreamStore
from streamsaver.errors import ConfigurationError
from streamsaver.log.events import ItemDeleted, ItemPut
from streamsaver.log.items import item_from_fields
from streamsaver.ops.replay import Replayer


class State(TypedDict):
    said: str


def _events(client: Any, prefix: str) -> list[ItemPut | ItemDeleted]:
    """Every put and delete of the store's partition logs (any order across partitions)."""
    nodes = {"target_nodes": RedisCluster.ALL_NODES} if isinstance(client, RedisCluster) else {}
    logs = sorted(set(client.scan_iter(match=f"{prefix}:slog:*", _type="stream", **nodes)))
    found = [item_from_fields(fields) for log in logs for _, fields in client.xrange(log)]
    return [e for e in found if isinstance(e, (ItemPut, ItemDeleted))]


def _by_key(client: Any, prefix: str) -> dict[str, ItemPut | ItemDeleted]:
    return {event.key: event for event in _events(client, prefix)}


def _graph(node: Callable[..., Any], store: BaseStore) -> Any:
    graph = StateGraph(State)
    graph.add_node("remember", node)
    graph.add_edge(START, "remember")
    return graph.compile(checkpointer=InMemorySaver(), store=store)


def sync_node(state: State, *, store: BaseStore) -> State:
    store.put(("users", "ada"), "fact", {"text": state["said"]})
    store.delete(("users", "ada"), "stale")
    return state


async def async_node(state: State, *, store: BaseStore) -> State:
    await store.aput(("users", "ada"), "fact", {"text": state["said"]})
    await store.adelete(("users", "ada"), "stale")
    return state


def _check_run(events: dict[str, Any], thread: str, writer: str, run_id: str = "") -> None:
    for key in ("fact", "stale"):
        event = events[key]
        assert event.writer == writer and event.run is not None
        assert event.run.thread_id == thread and event.run.run_id == run_id
        assert event.run.checkpoint_ns.startswith("remember:")  # the node's task namespace
    assert events["outside"].writer == writer and events["outside"].run is None


@pytest.mark.parametrize("node", [sync_node, async_node])
async def test_a_sync_store_written_in_a_graph_run_logs_the_run(
        node: Callable[..., Any], client: Any, redis_url: str, prefix: str) -> None:
    store = StreamStore(redis.Redis.from_url(redis_url), prefix=prefix, writer="memory-agent")
    store.setup()
    app = _graph(node, store)
    config = {"configurable": {"thread_id": "conversation-7", "run_id": "run-1"}}
    if node is sync_node:
        app.invoke({"said": "likes tea"}, config)
    else:
        await app.ainvoke({"said": "likes tea"}, config)
    store.put(("users", "ada"), "outside", {"text": "set by a script"})
    _check_run(_by_key(client, prefix), "conversation-7", "memory-agent", "run-1")


@pytest.mark.parametrize("node", [sync_node, async_node])
async def test_an_async_store_written_in_a_graph_run_logs_the_run(
        node: Callable[..., Any], client: Any, redis_url: str, prefix: str) -> None:
    """A sync node runs in a worker thread: its calls reach the store's loop from there."""
    aclient = redis.asyncio.Redis.from_url(redis_url)
    store = AsyncStreamStore(aclient, prefix=prefix, writer="memory-agent")
    await store.setup()
    await _graph(node, store).ainvoke({"said": "likes tea"}, {"configurable": {"thread_id": "conversation-8"}})
    await store.aput(("users", "ada"), "outside", {"text": "set by a script"})
    _check_run(_by_key(client, prefix), "conversation-8", "memory-agent")
    await aclient.aclose()


async def test_concurrent_calls_batched_together_keep_their_own_runs(client: Any, redis_url: str, prefix: str) -> None:
    """The async store's batch runs in a task of its own, made here inside a run ('decoy'): each
    op still logs the run its call was made in, and a call made outside any run logs none."""
    aclient = redis.asyncio.Redis.from_url(redis_url)
    token = var_child_runnable_config.set({"configurable": {"thread_id": "decoy"}})
    try:
        store = AsyncStreamStore(aclient, prefix=prefix)
    finally:
        var_child_runnable_config.reset(token)
    await store.setup()

    async def put_in(thread: str | None) -> None:
        if thread is not None:
            var_child_runnable_config.set({"configurable": {"thread_id": thread, "checkpoint_ns": f"n:{thread}"}})
        await store.aput(("users", f"u{thread}"), "k", {"v": 1})

    await asyncio.gather(*(put_in(thread) for thread in ["a", "b", None, "c", "d"]))
    await store.abatch([])  # the batch task made inside 'decoy' still runs
    found = {e.namespace[1]: e.run for e in _events(client, prefix)}
    assert {ns: None if r is None else (r.thread_id, r.checkpoint_ns) for ns, r in found.items()} == {
        "ua": ("a", "n:a"), "ub": ("b", "n:b"), "uNone": None, "uc": ("c", "n:c"), "ud": ("d", "n:d")}
    await aclient.aclose()


@pytest.mark.parametrize("writer", ["", "two\nlines", "x" * 129, 5])
async def test_a_bad_writer_is_refused_by_both_stores(writer: Any, redis_url: str, prefix: str) -> None:
    with pytest.raises(ConfigurationError, match="writer"):
        StreamStore(redis.Redis.from_url(redis_url), prefix=prefix, writer=writer)
    aclient = redis.asyncio.Redis.from_url(redis_url)
    with pytest.raises(ConfigurationError, match="writer"):
        AsyncStreamStore(aclient, prefix=prefix, writer=writer)
    await aclient.aclose()


def test_the_default_writer_names_the_process(client: Any, prefix: str) -> None:
    import os

    store = StreamStore(client, prefix=prefix)
    store.setup()
    store.put(("users",), "k", {"v": 1})
    [event] = _events(client, prefix)
    assert event.writer == store.writer and store.writer.endswith(f"-{os.getpid()}")


def _as_logged_before_writers(fields: dict[bytes, bytes]) -> dict[bytes, bytes]:
    """An entry as the previous versions wrote it: ItemPut v2, ItemDeleted v1, no writer or run."""
    old = {name: value for name, value in fields.items() if name not in (b"writer", b"run")}
    old[b"v"] = b"2" if fields[b"type"] == b"ItemPut" else b"1"
    return old


def test_logs_written_before_writers_replay_as_they_did(
        client: Any, prefix: str, capsys: pytest.CaptureFixture[str]) -> None:
    store = StreamStore(client, prefix=prefix, writer="svc")
    store.setup()
    for n in range(8):
        store.put((f"user{n % 3}", "facts"), f"k{n % 5}", {"n": n}, ttl=None)
    store.delete(("user1", "facts"), "k1")
    live = items(client, prefix)
    for log in client.scan_iter(match=f"{prefix}:slog:*", _type="stream"):
        entries = client.xrange(log)
        client.delete(log)
        for entry_id, fields in entries:
            client.xadd(log, _as_logged_before_writers(fields), id=entry_id)
    assert {(e.writer, e.run) for e in _events(client, prefix)} == {("", None)}
    Replayer.open(client, prefix, domain=STORE).rebuild(["items"])
    assert items(client, prefix) == live  # byte-identical: the documents never held the writer
    code, out, _ = run(capsys, "inspect", "--url", _url(client), "--prefix", prefix, "--store", "--json")
    assert code == 0 and {(r["writer"], r["thread_id"]) for r in json.loads(out)} == {("", "")}


def _url(client: Any) -> str:
    kwargs = client.connection_pool.connection_kwargs
    return f"redis://{kwargs['host']}:{kwargs['port']}"


def _write_in_a_run(store: StreamStore) -> None:
    store.setup()
    app = _graph(sync_node, store)
    app.invoke({"said": "likes tea"}, {"configurable": {"thread_id": "conversation-9", "run_id": "run-9"}})
    store.put(("users", "ada"), "outside", {"text": "set by a script"})


def test_inspect_shows_who_wrote_each_fact(client: Any, prefix: str, capsys: pytest.CaptureFixture[str]) -> None:
    _write_in_a_run(StreamStore(client, prefix=prefix, writer="memory-agent"))
    base = ["--url", _url(client), "--prefix", prefix]
    code, out, _ = run(capsys, "inspect", *base, "--namespace", "users.ada", "--json")
    rows = {r["key"]: r for r in json.loads(out)}
    assert code == 0 and {r["writer"] for r in rows.values()} == {"memory-agent"}
    assert (rows["fact"]["thread_id"], rows["fact"]["run_id"]) == ("conversation-9", "run-9")
    assert rows["fact"]["checkpoint_ns"].startswith("remember:")
    assert (rows["outside"]["thread_id"], rows["outside"]["checkpoint_ns"]) == ("", "")
    code, out, _ = run(capsys, "inspect", *base, "--store")
    header, _, *lines = out.splitlines()
    assert code == 0 and "writer" in header.split() and "thread" in header.split()
    fact = next(line for line in lines if " fact " in line)
    assert "memory-agent" in fact and "conversation-9" in fact


def test_subscribers_see_who_wrote_each_fact(client: Any, prefix: str) -> None:
    from streamsaver import Subscriber

    _write_in_a_run(StreamStore(client, prefix=prefix, writer="memory-agent"))
    seen: dict[str, Any] = {}
    Subscriber(client, "audit", lambda e: seen.update({e.key: e.payload()}), prefix=prefix, domain="store").run_burst()
    assert seen["fact"]["writer"] == seen["stale"]["writer"] == seen["outside"]["writer"] == "memory-agent"
    assert seen["fact"]["run"]["thread_id"] == "conversation-9" and seen["fact"]["run"]["run_id"] == "run-9"
    assert seen["stale"]["value"] is None and seen["stale"]["run"] == seen["fact"]["run"]
    assert seen["outside"]["run"] is None


def test_export_and_import_keep_who_wrote_each_fact(client: Any, prefix: str, tmp_path: Any) -> None:
    from streamsaver.ops.transfer import export_logs, import_logs

    _write_in_a_run(StreamStore(client, prefix=prefix, writer="memory-agent"))
    export_logs(client, prefix, tmp_path / "logs.jsonl.gz")
    import_logs(client, tmp_path / "logs.jsonl.gz", prefix=f"{prefix}-copy")
    assert _by_key(client, f"{prefix}-copy") == _by_key(client, prefix)
    assert _by_key(client, prefix)["fact"].run is not None


def test_on_a_cluster_a_graph_run_s_writes_log_the_run(
        cluster_url: str, prefix: str, capsys: pytest.CaptureFixture[str]) -> None:
    client: Any = RedisCluster.from_url(cluster_url)
    store = StreamStore(client, prefix=prefix, writer="memory-agent")
    _write_in_a_run(store)
    _check_run(_by_key(client, prefix), "conversation-9", "memory-agent", "run-9")
    code, out, _ = run(capsys, "inspect", "--url", cluster_url, "--prefix", prefix, "--store", "--json")
    assert code == 0 and {r["key"]: r["thread_id"] for r in json.loads(out)} == {
        "fact": "conversation-9", "stale": "conversation-9", "outside": ""}


async def test_on_a_cluster_the_async_store_logs_the_run(cluster_url: str, prefix: str) -> None:
    aclient = redis.asyncio.RedisCluster.from_url(cluster_url)
    store = AsyncStreamStore(aclient, prefix=prefix, writer="memory-agent")
    await store.setup()
    await _graph(async_node, store).ainvoke({"said": "x"}, {"configurable": {"thread_id": "conversation-10"}})
    await store.aput(("users", "ada"), "outside", {"text": "set by a script"})
    _check_run(_by_key(RedisCluster.from_url(cluster_url), prefix), "conversation-10", "memory-agent")
    await aclient.aclose()
