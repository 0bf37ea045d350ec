"""The views a checkpoint deployment projects inline, agreed by every saver, without I/O.

The first `setup()` of a deployment records its saver's `projections` in the settings hash
(``P:meta``, field ``views``, comma-separated, ``HSETNX``); every later saver reads them in the
same round trip and agrees with them (`agree`). Every saver's appends project exactly the
recorded views, so no view is ever half-projected: a view projected inline by some writers only
would miss the other writers' checkpoints (and a projector worker folding it would skip the
events older than the position an inline write recorded).

Which savers agree, for recorded views ``R``, a saver's `projections` ``S`` and read view ``V``:

* ``S == R``: the saver's own.
* ``V`` in ``R`` and ``S`` a part of ``R`` (e.g. a shallow-only saver of a deployment recording
  full and shallow): its writes project all of ``R``; it reads ``V``, kept inline.
* ``S == (V,)`` with ``V`` not in ``R``: a reader of a view a projector worker keeps
  (docs/worker.md); its writes project ``R`` and the worker folds ``V`` from the feeds. Its
  reads lag its writes (read-your-writes holds for inline views only).
* anything else (``S`` names a view outside ``R`` besides a worker-kept read view):
  `InlineViewsError`, raised before the saver's first write.
"""

from __future__ import annotations

from typing import Any

from streamsaver.errors import InlineViewsError
from streamsaver.log.keys import Keyspace, ViewName

__all__ = ["FIELD", "agree", "record_requests"]

FIELD = "views"
"""The settings hash's field recording the deployment's inline views."""


def record_requests(keyspace: Keyspace, projections: tuple[ViewName, ...]) -> list[list[Any]]:
    """Record `projections` as the deployment's inline views unless some are, and read them."""
    return [["HSETNX", keyspace.meta, FIELD, ",".join(projections)], ["HGET", keyspace.meta, FIELD]]


def recorded_views(reply: Any) -> tuple[str, ...]:
    """The views the ``HGET`` of `record_requests` read."""
    text = reply.decode() if isinstance(reply, bytes) else str(reply)
    return tuple(view for view in text.split(",") if view)


def _out_of_memory(reply: Any) -> bool:
    return isinstance(reply, Exception) and "maxmemory" in str(reply)


def agree(
    keyspace: Keyspace, replies: list[Any], projections: tuple[ViewName, ...], read_view: ViewName
) -> tuple[ViewName, ...]:
    """The views the saver's appends project: the deployment's recorded ones (see the module).

    Raises:
        InlineViewsError: `projections` name a view the deployment does not project inline,
            other than a worker-kept read view; or the server refused the record (other than
            for want of memory) or its read.
    """
    record, read = replies
    # A full server (noeviction) refuses the record; a reader needs none (as for the partitions).
    for reply in (read,) if _out_of_memory(record) else (record, read):
        if isinstance(reply, Exception):
            raise InlineViewsError(f"cannot record the inline views of {keyspace.prefix!r}: {reply}") from reply
    if read is None:  # nothing recorded and the server too full to record: nothing to agree with
        return projections
    recorded = recorded_views(read)
    if recorded == projections:
        return projections
    outside = [view for view in projections if view not in recorded]
    if not outside or (projections == (read_view,) and recorded):
        return recorded
    raise InlineViewsError(
        f"the deployment under prefix {keyspace.prefix!r} projects the views {', '.join(recorded)} inline "
        f"(recorded in {keyspace.meta}, field {FIELD!r}, by its first setup); this saver asks for "
        f"{', '.join(projections)}: its writes would leave {', '.join(outside)} half-projected. Open it with "
        f"projections={recorded!r} (read a view outside them from a projector worker with "
        "projections=(view,)), or change the deployment's views: stop its writers, "
        f"`HSET {keyspace.meta} {FIELD} {','.join(dict.fromkeys((*recorded, *outside)))}`, build a new view "
        "with a projector worker (docs/worker.md, 'Adding a view'), then start the writers"
    )
