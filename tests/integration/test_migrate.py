"""``streamsaver migrate``: a LangGraph app's history on a SqliteSaver, the peer RedisSaver or a
PostgresSaver, copied into StreamSaver by the real command, reads back the same through
LangGraph (history, subgraph state, pending interrupts), resumes the same, and a migration cut
short continues where it stopped."""

from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, Any

import pytest
import redis
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt
from migration_sources import source_saver
from typing_extensions import TypedDict

from streamsaver import StreamSaver
from streamsaver.cli.main import main
from streamsaver.ops.migrate import migrate_threads
from streamsaver.ops.migrate_sources import open_source


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    steps: Annotated[list[str], operator.add]


def _agent(state: State) -> dict[str, Any]:
    return {"messages": [AIMessage(f"reply {len(state['messages'])}")], "steps": ["agent"]}


def _approve(state: State) -> dict[str, Any]:
    answer = interrupt({"question": "send it?", "draft": state["messages"][-1].content})
    return {"messages": [HumanMessage(str(answer))], "steps": ["approve"]}


def _graph(saver: BaseCheckpointSaver[Any]) -> Any:
    inner = StateGraph(State).add_node("inner", _agent).add_edge(START, "inner").add_edge("inner", END).compile()
    return (
        StateGraph(State)
        .add_node("agent", _agent).add_node("sub", inner).add_node("approve", _approve)
        .add_edge(START, "agent").add_edge("agent", "sub").add_edge("sub", "approve").add_edge("approve", END)
        .compile(checkpointer=saver)
    )


def _cfg(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def _write_history(saver: BaseCheckpointSaver[Any]) -> None:
    """Thread "done": interrupted, resumed, then forked from an earlier state; thread
    "waiting": left at its interrupt (a pending interrupt write); thread "two" run twice."""
    graph = _graph(saver)
    graph.invoke({"messages": [HumanMessage("hello")]}, _cfg("done"))
    graph.invoke(Command(resume="yes"), _cfg("done"))
    earlier = list(graph.get_state_history(_cfg("done")))[3]
    graph.update_state(earlier.config, {"messages": [HumanMessage("edited")]})
    graph.invoke({"messages": [HumanMessage("hi")]}, _cfg("waiting"))
    for text in ("one", "two"):
        graph.invoke({"messages": [HumanMessage(text)]}, _cfg("two"))
        graph.invoke(Command(resume=text), _cfg("two"))


def _snapshot(s: Any) -> Any:
    return (
        s.config["configurable"]["checkpoint_id"], s.config["configurable"]["checkpoint_ns"],
        (s.parent_config or {}).get("configurable", {}).get("checkpoint_id"), s.values, s.next, s.metadata,
        [(t.name, t.interrupts, t.error) for t in s.tasks], s.created_at,
    )


def _history(saver: BaseCheckpointSaver[Any], thread: str) -> list[Any]:
    """The thread's history as LangGraph shows it (``get_state_history``)."""
    return [_snapshot(s) for s in _graph(saver).get_state_history(_cfg(thread))]


def _reference_history(saver: BaseCheckpointSaver[Any], thread: str) -> list[Any]:
    """The same, read checkpoint by checkpoint (``get_state`` at each root checkpoint id): the
    peer RedisSaver's ``list`` gives messages as plain dicts and subgraph checkpoints too."""
    graph = _graph(saver)
    ids = {t.config["configurable"]["checkpoint_id"] for t in saver.list(_cfg(thread))
           if not t.config["configurable"].get("checkpoint_ns")}
    return [_snapshot(graph.get_state({"configurable": {"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": i}}))
            for i in sorted(ids, reverse=True)]


def _subgraph_state(saver: BaseCheckpointSaver[Any], thread: str) -> Any:
    state = _graph(saver).get_state(_cfg(thread), subgraphs=True)
    return state.values, state.next, [(t.name, t.interrupts, t.state) for t in state.tasks], state.interrupts


SOURCES = ["sqlite", "redis", "postgres"]


@pytest.mark.parametrize("kind", SOURCES)
def test_a_migrated_app_reads_and_resumes_as_on_its_old_saver(
    kind: str, client: redis.Redis, prefix: str, redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with source_saver(kind, redis_url, prefix, tmp_path) as (url, old, extra):
        _write_history(old)

        code = main(["migrate", "--from", kind, url, *extra, "--url", redis_url, "--prefix", prefix, "--json"])

        report = json.loads(capsys.readouterr().out)
        assert code == 0 and report["ok"] and report["threads"] == 3 and report["mismatches"] == []
        assert report["copied_checkpoints"] == report["checkpoints"] > 10 and report["copied_writes"] > 0
        new = StreamSaver(client, prefix=prefix)
        for thread in ("done", "waiting", "two"):
            assert _history(new, thread) == _reference_history(old, thread)
        assert _subgraph_state(new, "waiting") == _subgraph_state(old, "waiting")
        namespaces = {c.config["configurable"]["checkpoint_ns"] for c in new.list(_cfg("waiting"))}
        assert any(ns.startswith("sub:") for ns in namespaces)  # the subgraph's own checkpoints came along

        resumed_new = _graph(new).invoke(Command(resume="ship it"), _cfg("waiting"))
        resumed_old = _graph(old).invoke(Command(resume="ship it"), _cfg("waiting"))
        assert [m.content for m in resumed_new["messages"]] == [m.content for m in resumed_old["messages"]]
        assert resumed_new["steps"] == resumed_old["steps"]


class _CutShort(Exception):
    pass


class _FailingSaver(StreamSaver):
    """A StreamSaver whose puts fail after `budget` of them, like a migration killed mid-thread."""

    budget = 0

    def put(self, *args: Any, **kwargs: Any) -> Any:
        if self.budget == 0:
            raise _CutShort
        self.budget -= 1
        return super().put(*args, **kwargs)


def test_a_migration_cut_short_continues_where_it_stopped_and_a_rerun_copies_nothing(
    client: redis.Redis, prefix: str, redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with source_saver("sqlite", redis_url, prefix, tmp_path) as (url, old, _):
        _write_history(old)
        with open_source("sqlite", url) as source:
            failing = _FailingSaver(client, prefix=prefix)
            failing.budget = 7
            with pytest.raises(_CutShort):
                migrate_threads(source, failing)

        code = main(["migrate", "--from", "sqlite", url, "--url", redis_url, "--prefix", prefix, "--json"])
        resumed = json.loads(capsys.readouterr().out)
        code_again = main(["migrate", "--from", "sqlite", url, "--url", redis_url, "--prefix", prefix, "--json"])
        again = json.loads(capsys.readouterr().out)

        assert code == 0 and resumed["ok"]
        assert resumed["skipped_checkpoints"] == 7 and resumed["copied_checkpoints"] == resumed["checkpoints"] - 7
        assert code_again == 0 and again["ok"] and again["copied_checkpoints"] == 0 and again["copied_writes"] == 0
        assert again["skipped_checkpoints"] == again["checkpoints"] == resumed["checkpoints"]
        new = StreamSaver(client, prefix=prefix)
        for thread in ("done", "waiting", "two"):
            assert _history(new, thread) == _reference_history(old, thread)


def test_a_copy_that_differs_from_its_source_is_reported_and_exits_1(
    client: redis.Redis, prefix: str, redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with source_saver("sqlite", redis_url, prefix, tmp_path) as (url, old, _):
        _write_history(old)
        only_two = ["migrate", "--from", "sqlite", url, "--thread", "two", "--url", redis_url, "--prefix", prefix]
        assert main(only_two) == 0
        capsys.readouterr()
        latest = old.get_tuple(_cfg("two"))
        assert latest is not None
        old.put_writes(latest.config, [("steps", "added later")], "late-task")

        code = main(only_two)

        out, err = capsys.readouterr()
        # the late task's writes are copied (the target lacked that task), so the copy is equal again
        assert code == 0 and "the copy equals the source" in out and err == ""
        checkpoint_id = latest.config["configurable"]["checkpoint_id"]
        copy = StreamSaver(client, prefix=prefix)
        copy.setup()
        copy.put_writes(latest.config, [("steps", "only in the copy")], "stray-task")
        code = main(only_two)
        out, err = capsys.readouterr()
        assert code == 1 and "1 checkpoint(s) differ" in out
        assert f"checkpoint {checkpoint_id}: writes" in err


def test_migrate_refuses_a_sqlite_file_that_does_not_exist(
    prefix: str, redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.db"

    code = main(["migrate", "--from", "sqlite", str(missing), "--url", redis_url, "--prefix", prefix])

    assert code == 1 and "no sqlite database" in capsys.readouterr().err
    assert not missing.exists()


def test_migrate_help_names_the_sources_and_an_unknown_one_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["migrate", "--help"]) == 0
    help_text = capsys.readouterr().out
    assert all(kind in help_text for kind in SOURCES) and "Resumable" in help_text
    assert main(["migrate", "--from", "mongo", "x", "--url", "redis://localhost:1"]) == 2
