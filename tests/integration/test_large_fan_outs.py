"""Any fan-out size that fits in Redis is one atomic append (docs/reliability.md, "Any size").

Lua's ``unpack`` refuses more than ~8,000 results, which once failed a ``put_writes`` of
~4,000 writes or a ``put`` of ~4,000 changed channels with "too many results to unpack"; the
scripts pass long argument lists with `spread` (scripts/_spread.lua). Shown here: 100,000
writes in one ``put_writes``, a ``put`` that changes 10,000 channels (on both views), and a
LangGraph graph that fans out to 10,000 ``Send`` tasks, each read back exactly.

The `client` fixture has no ``socket_timeout`` (redis-py's default): on a slow or loaded
machine these appends take longer, never fail for it (docs/reliability.md, "Any size").
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import redis
from helpers import config, new_checkpoint
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from streamsaver import StreamSaver


def test_one_put_writes_of_100000_writes_reads_back_exactly(client: redis.Redis, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix)
    checkpoint, versions = new_checkpoint({"a": 1})
    saved = saver.put(config("wide"), checkpoint, {"source": "loop", "step": 0}, versions)
    writes = [(f"ch{k % 7}", {"k": k, "text": f"value {k}"}) for k in range(100_000)]

    saver.put_writes(saved, writes, "task-wide")

    found = saver.get_tuple(saved)
    assert found is not None
    assert found.pending_writes == [("task-wide", channel, value) for channel, value in writes]


def test_a_put_of_10000_changed_channels_reads_back_on_both_views(client: redis.Redis, prefix: str) -> None:
    values = {f"channel-{k}": [k, f"v{k}"] for k in range(10_000)}
    checkpoint, versions = new_checkpoint(values)
    writer = StreamSaver(client, prefix=prefix, projections=("full", "shallow"))
    saved = writer.put(config("many"), checkpoint, {"source": "loop", "step": 0}, versions)

    for view in ("full", "shallow"):
        found = StreamSaver(client, prefix=prefix, view=view).get_tuple(saved)
        assert found is not None
        assert found.checkpoint["channel_values"] == values
        assert found.checkpoint["channel_versions"] == versions
    listed = list(StreamSaver(client, prefix=prefix).list(config("many")))
    assert [t.checkpoint["channel_values"] for t in listed] == [values]


class FanOut(TypedDict):
    count: int
    results: Annotated[list[int], operator.add]


def _fan_out_graph() -> StateGraph:
    def spread(state: FanOut) -> list[Send]:
        return [Send("square", {"count": k, "results": []}) for k in range(state["count"])]

    def square(state: FanOut) -> dict[str, Any]:
        return {"results": [state["count"] ** 2]}

    graph = StateGraph(FanOut)
    graph.add_node("square", square)
    graph.add_conditional_edges(START, spread, ["square"])
    graph.add_edge("square", END)
    return graph


def test_a_graph_fans_out_to_10000_sends(client: redis.Redis, prefix: str) -> None:
    graph = _fan_out_graph().compile(checkpointer=StreamSaver(client, prefix=prefix))

    out = graph.invoke({"count": 10_000, "results": []}, config("fan"))

    expected = sorted(k * k for k in range(10_000))
    assert sorted(out["results"]) == expected
    again = _fan_out_graph().compile(checkpointer=StreamSaver(client, prefix=prefix))
    assert sorted(again.get_state(config("fan")).values["results"]) == expected
