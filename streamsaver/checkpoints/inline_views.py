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

A saver that declares no `projections` (the default) *adopts* the recorded views (`adopt`): on a
deployment with none recorded it records only the view it reads (``full`` for `StreamSaver`,
``shallow`` for `ShallowStreamSaver`), so each put indexes one document, not two. A deployment
whose settings predate the record (its partition count is there, its views are not) was written by
savers whose default projected both views: it records ``full,shallow`` (`LEGACY_VIEWS`), what
those writers project. An adopting saver reading a view the deployment neither keeps inline nor
has a projector worker for (the worker's consumer group on partition 0's feed) is refused with
`InlineViewsError` before its first write.
"""

from __future__ import annotations

from typing import Any

from streamsaver.errors import InlineViewsError
from streamsaver.log.keys import Keyspace, ViewName, projector_group
from streamsaver.log.program import Program

__all__ = ["FIELD", "LEGACY_VIEWS", "adopt", "agree", "forget", "record_requests"]

FIELD = "views"
"""The settings hash's field recording the deployment's inline views."""
LEGACY_VIEWS: tuple[ViewName, ...] = ("full", "shallow")
"""What the savers of a deployment set up before the record projected (their default)."""


def record_requests(keyspace: Keyspace, projections: tuple[ViewName, ...]) -> list[list[Any]]:
    """Record `projections` as the deployment's inline views unless some are, and read them."""
    return [["HSETNX", keyspace.meta, FIELD, ",".join(projections)], ["HGET", keyspace.meta, FIELD]]


def recorded_views(reply: Any) -> tuple[str, ...]:
    """The views the ``HGET`` of `record_requests` read."""
    text = reply.decode() if isinstance(reply, bytes) else str(reply)
    return tuple(view for view in text.split(",") if view)


def _out_of_memory(reply: Any) -> bool:
    return isinstance(reply, Exception) and "maxmemory" in str(reply)


def _recorded(keyspace: Keyspace, replies: list[Any], fallback: tuple[ViewName, ...]) -> tuple[ViewName, ...]:
    """The views the replies to `record_requests` read (`fallback` when none are recorded and
    the server was too full to record: nothing to agree with).

    Raises:
        InlineViewsError: the server refused the record (other than for want of memory) or the read.
    """
    record, read = replies
    # A full server (noeviction) refuses the record; a reader needs none (as for the partitions).
    for reply in (read,) if _out_of_memory(record) else (record, read):
        if isinstance(reply, Exception):
            raise InlineViewsError(f"cannot record the inline views of {keyspace.prefix!r}: {reply}") from reply
    return fallback if read is None else recorded_views(read)


def agree(
    keyspace: Keyspace, replies: list[Any], projections: tuple[ViewName, ...], read_view: ViewName
) -> tuple[ViewName, ...]:
    """The views the saver's appends project: the deployment's recorded ones (see the module).

    Raises:
        InlineViewsError: `projections` name a view the deployment does not project inline,
            other than a worker-kept read view; or the server refused the record (other than
            for want of memory) or its read.
    """
    recorded = _recorded(keyspace, replies, projections)
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


def _refused(keyspace: Keyspace, reply: Any) -> None:
    if isinstance(reply, Exception):
        raise InlineViewsError(f"cannot read the inline views of {keyspace.prefix!r}: {reply}") from reply


def adopt(prefix: str, read_view: ViewName) -> Program[tuple[tuple[ViewName, ...], bool]]:
    """The views a saver declaring no `projections` projects: the recorded ones, recording
    them first on a deployment without a record (see the module), and whether it recorded them
    on a new deployment (whose setup, should it fail, takes the record back: `forget`). One
    round trip when they are recorded and hold `read_view`; one more to record them, one more
    to look for a projector worker of `read_view` when they do not hold it. Runs before setup
    creates any index.

    Raises:
        InlineViewsError: the deployment keeps `read_view` neither inline nor by a worker, or
            the server refused the read (or the record, other than for want of memory).
    """
    keyspace = Keyspace(prefix)
    [settings] = yield [["HMGET", keyspace.meta, FIELD, "partitions"]]
    _refused(keyspace, settings)
    recorded, partitions = settings
    fresh = False
    if recorded is None:
        choice = (read_view,) if partitions is None else LEGACY_VIEWS
        replies = yield record_requests(keyspace, choice)
        views, fresh = _recorded(keyspace, replies, choice), partitions is None and replies[0] == 1
    else:
        views = recorded_views(recorded)
    if read_view in views:
        return views, fresh
    [groups] = yield [["XINFO", "GROUPS", keyspace.feed(0)]]
    if not _worker_keeps(groups, read_view):
        raise InlineViewsError(_not_kept(keyspace, views, read_view))
    return views, fresh


def forget(prefix: str) -> list[list[Any]]:
    """Take back the views `adopt` recorded on a new deployment whose setup then failed, so
    that a retry (or an import, which wants an empty prefix) finds the prefix as it was."""
    return [["HDEL", Keyspace(prefix).meta, FIELD]]


def _worker_keeps(groups: Any, view: ViewName) -> bool:
    """Whether an ``XINFO GROUPS`` reply (an error: no feed yet) names `view`'s worker group."""
    if isinstance(groups, Exception):
        return False
    wanted = projector_group(view)
    for group in groups:
        name = group.get("name", group.get(b"name")) if isinstance(group, dict) else None
        if (name.decode() if isinstance(name, bytes) else name) == wanted:
            return True
    return False


def _not_kept(keyspace: Keyspace, views: tuple[ViewName, ...], read_view: ViewName) -> str:
    both = ",".join(dict.fromkeys((*views, read_view)))
    return (
        f"this saver reads the {read_view!r} view, which the deployment under prefix {keyspace.prefix!r} "
        f"does not keep: it projects only {', '.join(views)} inline (recorded in {keyspace.meta}, field "
        f"{FIELD!r}, by its first setup) and no projector worker keeps {read_view!r}. Either declare every "
        f"view its savers read at the deployment's first setup (projections={tuple(both.split(','))!r}), "
        f"or add the view: stop the deployment's writers, `HSET {keyspace.meta} {FIELD} {both}`, rebuild "
        f"it from the logs (`streamsaver replay --view {read_view}`), then start them again; or keep it "
        f"off the write path with a projector worker (docs/worker.md)"
    )
