"""Who writes to the store, without Redis: a writer name is a bounded printable string, the
LangGraph run is read from the runnable config LangGraph sets (plain strings only, none outside
a run), and the store's events name both."""

from __future__ import annotations

import os
import uuid
from typing import Any

import pytest
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.store.base import PutOp

from streamsaver.errors import ConfigurationError
from streamsaver.log.events import ItemDeleted, ItemPut, RunContext
from streamsaver.memory.runs import current_run, writer_name
from streamsaver.store.core import StoreCore
from streamsaver.store.writers import MAX_WRITER, RunPut, check_writer, run_of, with_run, with_runs


@pytest.mark.parametrize("name", ["memory-agent", "billing service (eu)", "agent é", "x" * MAX_WRITER])
def test_a_printable_bounded_name_is_a_writer(name: str) -> None:
    assert check_writer(name) == name == writer_name(name)


@pytest.mark.parametrize("name", ["", "x" * (MAX_WRITER + 1), "two\nlines", "tab\there", "nul\x00", "esc\x1b[31m",
                                  "\ud800", 7, b"bytes", None])
def test_anything_else_is_refused_as_a_writer(name: Any) -> None:
    with pytest.raises(ConfigurationError, match="writer"):
        check_writer(name)


def test_the_default_writer_is_this_process() -> None:
    name = writer_name(None)
    assert name.endswith(f"-{os.getpid()}") and check_writer(name) == name


def _in_config(config: Any) -> RunContext | None:
    token = var_child_runnable_config.set(config)
    try:
        return current_run()
    finally:
        var_child_runnable_config.reset(token)


def test_outside_a_run_there_is_no_run() -> None:
    assert current_run() is None
    assert _in_config({"configurable": {}, "metadata": {}}) is None
    assert _in_config({"configurable": {"checkpoint_ns": ""}}) is None


def test_a_node_config_gives_thread_namespace_and_run_id() -> None:
    config = {"configurable": {"thread_id": "t-1", "checkpoint_ns": "node:9f", "run_id": "r-1"}, "metadata": {}}
    assert _in_config(config) == RunContext("t-1", "node:9f", "r-1")
    run = uuid.uuid4()
    from_metadata = {"configurable": {"thread_id": 42}, "metadata": {"run_id": run}}
    assert _in_config(from_metadata) == RunContext("42", "", str(run))
    assert _in_config({"configurable": {}, "run_id": "top"}) == RunContext(run_id="top")


def test_only_plain_values_are_taken_from_the_config() -> None:
    class Loud:
        def __str__(self) -> str:
            raise AssertionError("a config value's code was run")

    config = {"configurable": {"thread_id": Loud(), "checkpoint_ns": True, "run_id": "r"}}
    assert _in_config(config) == RunContext(run_id="r")


def test_a_put_carries_its_run_and_plain_ops_carry_none() -> None:
    put, run = PutOp(("a",), "k", {"v": 1}), RunContext("t")
    carried = with_run(put, run)
    assert isinstance(carried, RunPut) and carried == put and run_of(carried) == run and run_of(put) is None
    other = with_run(put, RunContext("u"))
    ops = with_runs([carried, put, PutOp(("a",), "gone", None)], RunContext("later"))
    assert [run_of(op) for op in ops] == [run, RunContext("later"), RunContext("later")]  # type: ignore[arg-type]
    assert run_of(with_runs([other], None)[0]) == RunContext("u")  # type: ignore[arg-type]


def test_the_events_of_a_batch_name_the_writer_and_each_op_s_run() -> None:
    core = StoreCore("p", 4, writer="svc")
    ops = [with_run(PutOp(("a",), "k", {"v": 1}), RunContext("t-1")), PutOp(("b",), "k", None)]
    events = [e for log in core.events(ops, {}).values() for e in log]
    put = next(e for e in events if isinstance(e, ItemPut))
    deleted = next(e for e in events if isinstance(e, ItemDeleted))
    assert (put.writer, put.run) == ("svc", RunContext("t-1"))
    assert (deleted.writer, deleted.run) == ("svc", None)
