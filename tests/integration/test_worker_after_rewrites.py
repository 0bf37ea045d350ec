"""A view kept by the projector worker follows log rewrites: on a `RunsDeleted` or
`ThreadPruned` pointer the worker refolds the thread's view from the rewritten log, so it equals
what a replay gives and reads agree with the view projected inline."""

from __future__ import annotations

import redis
from delta_graphs import Journal, diary
from helpers import snapshot

from streamsaver import StreamSaver
from streamsaver.feeds.worker import ProjectorWorker
from streamsaver.ops.replay import Replayer

START = {"entries": ["start"], "notes": [], "steps": 0}


def shallow_keys(client: redis.Redis, prefix: str) -> dict[bytes, object]:
    return {k: v for k, v in snapshot(client, prefix).items() if b":shallow:" in k or b":pos:" in k}


def test_the_worker_refolds_a_rewritten_thread(client: redis.Redis, prefix: str) -> None:
    writer = StreamSaver(client, prefix=prefix, projections=("full",))
    graph = diary(4, Journal).compile(checkpointer=writer)
    graph.invoke(START, {"configurable": {"thread_id": "a"}, "metadata": {"run_id": "r1"}})
    graph.invoke({"entries": ["b"]}, {"configurable": {"thread_id": "a"}, "metadata": {"run_id": "r2"}})
    graph.invoke(START, {"configurable": {"thread_id": "b"}})
    worker = ProjectorWorker(client, prefix, ["shallow"], lease_ms=5000)
    worker.run_burst()
    reader = StreamSaver(client, prefix=prefix, view="shallow", projections=("shallow",))
    before = reader.get_tuple({"configurable": {"thread_id": "a", "checkpoint_ns": ""}})
    assert before is not None and before.metadata["run_id"] == "r2"

    writer.delete_for_runs(["r2"])
    writer.prune(["b"])
    stats = worker.run_burst()

    assert stats.dead == 0 and stats.applied >= 2
    for thread_id in ("a", "b"):
        config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        assert reader.get_tuple(config) == writer.get_tuple(config)
    after = reader.get_tuple({"configurable": {"thread_id": "a", "checkpoint_ns": ""}})
    assert after is not None and after.metadata["run_id"] == "r1"
    built = shallow_keys(client, prefix)
    Replayer.open(client, prefix).rebuild(["shallow"])
    assert shallow_keys(client, prefix) == built


def test_checkpoints_pruned_before_the_worker_reads_them_are_gone_not_dead_letters(
    client: redis.Redis, prefix: str
) -> None:
    writer = StreamSaver(client, prefix=prefix, projections=("full",))
    graph = diary(4, Journal).compile(checkpointer=writer)
    graph.invoke(START, {"configurable": {"thread_id": "b"}})
    writer.prune(["b"])  # removed checkpoints' entries become ValuesRetained under the same ids
    log = writer.core.keys.thread("b").log
    assert any(fields[b"type"] == b"ValuesRetained" for _, fields in client.xrange(log))
    writer.copy_thread("b", "copy")  # a copied ValuesRetained has a pointer of its own
    worker = ProjectorWorker(client, prefix, ["shallow"], lease_ms=5000)

    stats = worker.run_burst()

    assert stats.dead == 0 and stats.gone > 0
    reader = StreamSaver(client, prefix=prefix, view="shallow", projections=("shallow",))
    for thread_id in ("b", "copy"):
        config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        assert reader.get_tuple(config) == writer.get_tuple(config)
    built = shallow_keys(client, prefix)
    Replayer.open(client, prefix).rebuild(["shallow"])
    assert shallow_keys(client, prefix) == built
