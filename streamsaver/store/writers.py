"""Who writes to the store: the writer's name every put and delete logs, and the LangGraph run
a write was made in, carried with its op (`RunPut`) from where the call was made to the batch
that logs it (`streamsaver.log.events.ItemPut.writer`, ``run``).

The async store coalesces the calls of many tasks into one batch, run by a task of its own: the
run must be read where each call is made, not where the batch runs, so it travels on the op.
"""

from __future__ import annotations

from collections.abc import Iterable

from langgraph.store.base import Op, PutOp

from streamsaver.errors import ConfigurationError
from streamsaver.log.events import RunContext

__all__ = ["MAX_WRITER", "RunPut", "check_writer", "run_of", "with_run", "with_runs"]

MAX_WRITER = 128
"""The longest writer name, in characters."""


def check_writer(writer: object) -> str:
    """`writer` if it is a store's writer name: a printable string (no control characters or
    line breaks) of 1 to `MAX_WRITER` characters, so that an audit line shows it as it is.

    Raises:
        ConfigurationError: anything else.
    """
    if not isinstance(writer, str) or not 0 < len(writer) <= MAX_WRITER or not writer.isprintable():
        raise ConfigurationError(
            f"writer is a printable name of 1 to {MAX_WRITER} characters (the service or agent writing), "
            f"not {writer!r:.200}")
    return writer


class RunPut(PutOp):
    """A put (or a delete: a put of None) with the LangGraph run it was made in, decided where
    the call was made (None: outside a run). An ordinary `PutOp` to everything else."""

    run: RunContext | None


def with_run(op: PutOp, run: RunContext | None) -> RunPut:
    """`op` carrying `run`."""
    put = RunPut(*op)
    put.run = run
    return put


def with_runs(ops: Iterable[Op], run: RunContext | None) -> list[Op]:
    """`ops` with `run` on each put that does not carry a run of its own yet."""
    return [with_run(op, run) if isinstance(op, PutOp) and not isinstance(op, RunPut) else op for op in ops]


def run_of(op: PutOp) -> RunContext | None:
    """The run `op` carries (None: none, or a plain `PutOp`)."""
    return op.run if isinstance(op, RunPut) else None
