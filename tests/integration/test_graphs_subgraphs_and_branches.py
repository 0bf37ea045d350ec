"""Subgraphs checkpoint under their own namespace; parallel branches fan in and retry alone.

Each test runs over sync/async x full/shallow (see `graph_harness`); final values are compared
with the same graph and inputs on ``InMemorySaver``.
"""

from __future__ import annotations

import operator
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest
import redis
from graph_harness import Harness, harness_fixture, kind_fixture, thread, view_fixture  # noqa: F401
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from streamsaver.log.events import WritesSaved
from streamsaver.log.keys import Keyspace
from streamsaver.log.stored import from_fields


class Parent(TypedDict):
    messages: Annotated[list[str], operator.add]
    notes: Annotated[list[str], operator.add]


class Child(TypedDict):
    notes: Annotated[list[str], operator.add]


def appends(key: str, text: str) -> Any:
    def node(state: Any) -> dict[str, Any]:
        return {key: [text]}

    return node


def nested() -> StateGraph:
    """``before -> sub -> after``; ``sub`` is a compiled graph that takes notes, then asks."""

    def ask(state: Child) -> dict[str, Any]:
        return {"notes": [f"child:{interrupt('child question')}"]}

    child = StateGraph(Child)
    child.add_node("child_work", appends("notes", "child:work"))
    child.add_node("child_ask", ask)
    child.add_edge(START, "child_work")
    child.add_edge("child_work", "child_ask")
    child.add_edge("child_ask", END)

    parent = StateGraph(Parent)
    parent.add_node("before", appends("messages", "before"))
    parent.add_node("sub", child.compile())
    parent.add_node("after", appends("messages", "after"))
    parent.add_edge(START, "before")
    parent.add_edge("before", "sub")
    parent.add_edge("sub", "after")
    parent.add_edge("after", END)
    return parent


async def test_a_subgraph_checkpoints_under_its_namespace_and_shows_in_the_parent_state(h: Harness) -> None:
    driver = await h.driver(nested)
    config = thread()

    stopped = await driver.invoke({"messages": ["go"]}, config)

    assert [i.value for i in stopped["__interrupt__"]] == ["child question"]
    state = await driver.state(config, subgraphs=True)
    assert state.next == ("sub",)
    (task,) = state.tasks
    assert task.name == "sub" and [i.value for i in task.interrupts] == ["child question"]
    sub = task.state
    assert sub is not None and not isinstance(sub, dict)
    sub_ns = sub.config["configurable"]["checkpoint_ns"]
    assert sub_ns.startswith("sub:")
    assert sub.next == ("child_ask",)
    assert sub.values == {"notes": ["child:work"]}

    stored = await driver.checkpoints(thread(config["configurable"]["thread_id"]))
    by_ns = Counter(t.config["configurable"]["checkpoint_ns"] for t in stored)
    assert set(by_ns) == {"", sub_ns}
    if h.view == "shallow":
        assert by_ns == {"": 1, sub_ns: 1}
    else:
        assert by_ns[sub_ns] > 1
    in_sub = await driver.tuple(sub.config)
    assert in_sub is not None and in_sub.checkpoint["id"] == sub.config["configurable"]["checkpoint_id"]


async def test_an_interrupt_inside_a_subgraph_resumes_it_and_the_parent_completes(h: Harness) -> None:
    config = thread()
    await (await h.driver(nested)).invoke({"messages": ["go"]}, config)
    reference = h.reference(nested)
    await reference.invoke({"messages": ["go"]}, config)

    later = await h.driver(nested, await h.new_saver())
    done = await later.invoke(Command(resume="fine"), config)

    assert done == {"messages": ["go", "before", "after"], "notes": ["child:work", "child:fine"]}
    assert done == await reference.invoke(Command(resume="fine"), config)
    state = await later.state(config, subgraphs=True)
    assert (state.next, state.tasks, state.values) == ((), (), done)


class Fan(TypedDict):
    results: Annotated[list[str], operator.add]


class BranchFailed(Exception):
    """What a flaky branch raises."""


def fan(runs: Counter[str], failures: Counter[str]) -> StateGraph:
    """``split`` fans out to ``left``, ``middle``, ``right`` in one superstep; ``join`` fans in.

    Every node counts its runs in `runs`; a node named in `failures` raises that many times first.
    """

    def branch(name: str) -> Any:
        def node(state: Fan) -> dict[str, Any]:
            runs[name] += 1
            if failures[name]:
                failures[name] -= 1
                raise BranchFailed(name)
            return {"results": [name]}

        return node

    def join(state: Fan) -> dict[str, Any]:
        runs["join"] += 1
        return {"results": [f"join:{'+'.join(sorted(state['results']))}"]}

    graph = StateGraph(Fan)
    for name in ("split", "left", "middle", "right"):
        graph.add_node(name, branch(name))
    graph.add_node("join", join)
    graph.add_edge(START, "split")
    for name in ("left", "middle", "right"):
        graph.add_edge("split", name)
    graph.add_edge(["left", "middle", "right"], "join")
    graph.add_edge("join", END)
    return graph


async def test_parallel_branches_in_one_superstep_all_reach_the_fan_in(h: Harness) -> None:
    runs: Counter[str] = Counter()
    driver = await h.driver(lambda: fan(runs, Counter()))
    reference = h.reference(lambda: fan(Counter(), Counter()))
    config = thread()

    done = await driver.invoke({"results": ["in"]}, config)

    assert done["results"][:2] == ["in", "split"]
    assert sorted(done["results"][2:5]) == ["left", "middle", "right"]
    assert done["results"][-1] == "join:in+left+middle+right+split"
    assert done == await reference.invoke({"results": ["in"]}, config)
    assert runs == {"split": 1, "left": 1, "middle": 1, "right": 1, "join": 1}


def _logged_result_tasks(h: Harness, saved: CheckpointTuple) -> set[str]:
    """Tasks whose `results` writes for `saved`'s checkpoint are in the thread log."""
    configurable = saved.config["configurable"]
    with redis.Redis.from_url(h.redis_url) as client:
        keys = Keyspace(h.prefix, int(client.hget(Keyspace(h.prefix).meta, "partitions")))
        events = [from_fields(fields) for _, fields in client.xrange(keys.thread(configurable["thread_id"]).log)]
    return {
        e.task_id
        for e in events
        if isinstance(e, WritesSaved)
        and e.checkpoint_id == configurable["checkpoint_id"]
        and e.checkpoint_ns == configurable["checkpoint_ns"]
        and any(w.channel == "results" for w in e.writes)
    }


async def test_a_failed_branch_is_retried_alone_from_the_pending_writes_of_its_siblings(h: Harness) -> None:
    """A sibling whose writes were saved is not run again on retry.

    LangGraph raises a task's error at once and cancels siblings still in flight, so a sibling
    running at that moment may save its writes after `invoke` raised, or never. The saver's
    promise is about what was saved: those writes are pending, and their tasks do not rerun.
    """
    runs: Counter[str] = Counter()
    failures = Counter({"middle": 1})
    driver = await h.driver(lambda: fan(runs, failures))
    config = thread()

    with pytest.raises(BranchFailed):
        await driver.invoke({"results": ["in"]}, config)

    retry = await h.driver(lambda: fan(runs, failures), await h.new_saver())
    saved = await retry.tuple(config)
    assert saved is not None
    saved_siblings = {v[0] for _, ch, v in saved.pending_writes if ch == "results"}
    assert saved_siblings <= {"left", "right"}
    assert {task for task, ch, _ in saved.pending_writes if ch == "results"} == _logged_result_tasks(h, saved)
    stopped = await retry.state(config)
    assert "middle" in stopped.next and not set(stopped.next) & saved_siblings
    assert next(t for t in stopped.tasks if t.name == "middle").error is not None

    before = Counter(runs)
    done = await retry.invoke(None, config)

    assert runs["middle"] == 2 and runs["join"] == 1
    assert all(runs[name] == before[name] for name in saved_siblings), "a saved sibling ran again"
    assert done["results"][-1] == "join:in+left+middle+right+split"
    reference = h.reference(lambda: fan(Counter(), Counter({"middle": 1})))
    with pytest.raises(BranchFailed):
        await reference.invoke({"results": ["in"]}, config)
    assert sorted(done["results"]) == sorted((await reference.invoke(None, config))["results"])
