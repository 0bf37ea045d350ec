"""Logs rewritten by copy_thread, prune and delete_for_runs travel like any other: `verify`
finds the live views equal to their fold, and exported and imported under a new prefix they
give the same views, byte for byte, and the same reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import redis
from delta_graphs import Journal, diary
from helpers import sans_incarnation, snapshot

from streamsaver import StreamSaver
from streamsaver.ops.transfer import export_logs, import_logs
from streamsaver.ops.verify import verify

START = {"entries": ["start"], "notes": [], "steps": 0}


def _views(client: redis.Redis, prefix: str) -> dict[bytes, Any]:
    return {k[len(prefix) :]: sans_incarnation(v) for k, v in snapshot(client, prefix).items() if b":feed:" not in k}


def _reads(saver: StreamSaver) -> list[Any]:
    return [
        [
            (t.config, t.checkpoint, t.metadata, t.pending_writes)
            for t in saver.list({"configurable": {"thread_id": name}})
        ]
        for name in ("source", "copy", "fork", "pruned", "runs")
    ]


def test_rewritten_logs_export_and_import_to_the_same_views(client: redis.Redis, prefix: str, tmp_path: Path) -> None:
    saver = StreamSaver(client, prefix=prefix)
    graph = diary(7, Journal).compile(checkpointer=saver)
    for name in ("source", "pruned"):
        graph.invoke(START, {"configurable": {"thread_id": name}})
    graph.invoke(START, {"configurable": {"thread_id": "runs"}, "metadata": {"run_id": "r1"}})
    graph.invoke({"entries": ["b"]}, {"configurable": {"thread_id": "runs"}, "metadata": {"run_id": "r2"}})
    middle = list(saver.list({"configurable": {"thread_id": "source"}}))[4].config["configurable"]["checkpoint_id"]
    saver.copy_thread("source", "copy")
    saver.copy_thread("source", "fork", until=middle)
    saver.prune(["pruned"])
    saver.delete_for_runs(["r1"])
    assert verify(client, prefix).matches
    export_logs(client, prefix, tmp_path / "logs.jsonl.gz")

    imported = f"{prefix}-in"
    import_logs(client, tmp_path / "logs.jsonl.gz", prefix=imported)

    assert _views(client, imported) == _views(client, prefix)
    assert _reads(StreamSaver(client, prefix=imported)) == _reads(saver)
    assert all(_reads(saver))
