"""Writing many steps quickly: pipelined appends for StreamSaver, the public API for the others.

StreamSaver is filled through its own request builders (`SaverCore.put_request`,
`put_writes_request`), a hundred steps per pipelined round trip, like
`benchmarks.replay_throughput.build_log`: the same appends, projections and views as ``put`` and
``put_writes`` make, only without waiting for each reply. Every other saver is filled through
its public ``put`` and ``put_writes``, one call at a time.
"""

from __future__ import annotations

from collections.abc import Iterable

from benchmarks.savers import Opened
from benchmarks.workload import Conversation
from streamsaver import StreamSaver

__all__ = ["fill", "is_pipelined"]

BATCH = 100


def is_pipelined(opened: Opened) -> bool:
    """Whether `fill` writes to this saver through pipelined appends."""
    return isinstance(opened.saver, StreamSaver)


def fill(opened: Opened, steps: Iterable[Conversation], pipelined: bool = True) -> int:
    """One step (a ``put`` and its ``put_writes``) of each conversation in `steps`, in order;
    with `pipelined` False, StreamSaver too is filled through its public API (a pipelined
    append does not learn its entry id before the batch is sent, so it stores no list delta:
    the storage section measures what ``put`` stores).

    Returns:
        The steps written.
    """
    if pipelined and is_pipelined(opened):
        return _fill_pipelined(opened.saver, steps)  # type: ignore[arg-type]
    written = 0
    for conversation in steps:
        step = conversation.next_step()
        saved, _ = opened.driver.call(
            "put", step.parent_config, step.checkpoint, step.metadata, step.new_versions
        )
        conversation.record(saved)
        opened.driver.call("put_writes", saved, step.writes, step.task_id)
        written += 1
    return written


def _fill_pipelined(saver: StreamSaver, steps: Iterable[Conversation]) -> int:
    written = 0
    pipe = saver.redis.pipeline(transaction=False)
    for conversation in steps:
        step = conversation.next_step()
        put, saved = saver.core.put_request(
            step.parent_config, step.checkpoint, step.metadata, step.new_versions
        )
        conversation.record(saved)
        pipe.execute_command(*put)
        pipe.execute_command(*saver.core.put_writes_request(saved, step.writes, step.task_id, ""))
        written += 1
        if written % BATCH == 0:
            pipe.execute()
    pipe.execute()
    return written
