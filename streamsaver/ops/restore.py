"""Point-in-time restore: a new thread holding another thread's history up to a moment.

`restore_thread` reads the source thread's log up to and including `at`, rewrites each event's
thread id to `into`, and appends the events through the normal append path (`append_call`, with
the deployment's projections). The new thread so gets a log, feed pointers, views and positions
of its own, as if LangGraph had saved those checkpoints and writes under the new id: the same
checkpoint ids, metadata, channel values and pending writes, in the same order; only the log
entry ids are new. The source thread is not touched. ``ThreadDeleted`` events are not copied.

`at` is a checkpoint id (as ``get_state_history`` gives it: the entry that saved that
checkpoint and every one before it; the writes logged against it afterwards are not copied, so
resuming the new thread runs the next step again), a log entry id (``"1718000000000-3"``: that
entry and every one before it), an epoch
time in milliseconds (every entry logged in or before that millisecond), or a timezone-aware
`datetime` (likewise, to the millisecond; an ISO 8601 string such as
``"2024-06-10T09:30:00Z"`` is read as one). A log entry id carries the time the event was
appended, which is a little later than the ``ts`` LangGraph writes into the checkpoint.

The copy is one MULTI/EXEC (``append.lua`` loaded first, inside it) after a WATCH on the new
thread's keys: a write to `into` racing the restore makes it fail rather than mix two
histories, and a client that dies before EXEC copies nothing. Every key the transaction writes
carries the new thread's partition tag, so it stays in one hash slot; on Redis Cluster the
transaction runs on the primary owning that slot, and the source is read through the cluster
client, wherever its slot lives. A very long thread holds the server for the time of its
appends.

    restore_thread(saver, "chat", at="2024-06-10T09:30:00Z", into="chat-before-the-bug")
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from redis import Redis
from redis.cluster import RedisCluster
from redis.exceptions import WatchError

from projectors.domain import CHECKPOINTS
from streamsaver.drivers.wire import Command, enqueue
from streamsaver.errors import InvalidInputError
from streamsaver.log.append import append_call
from streamsaver.log.bounds import log_bound
from streamsaver.log.domain import Domain
from streamsaver.log.events import CheckpointSaved, Event
from streamsaver.log.keys import DEFAULT_PREFIX, Keyspace, ThreadKeys, ViewName, checked_id
from streamsaver.log.rewrite import whole_values
from streamsaver.ops.inspection import deployment_keyspace
from streamsaver.saver.sync import StreamSaver
from streamsaver.scripts import APPEND

__all__ = ["RestoreReport", "log_bound", "restore_thread"]

CHECKPOINT_ID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
"""A checkpoint id as LangGraph makes them (a UUID; never a log entry id or a time)."""


@dataclasses.dataclass(frozen=True)
class RestoreReport:
    """What `restore_thread` copied.

    `until` is the inclusive log bound `at` came to; `last_source_entry` the last source entry
    copied; `last_entry` the new thread's last log entry; `views` the views it was projected into.
    """

    thread_id: str
    into: str
    until: str
    events: int
    checkpoints: int
    last_source_entry: str
    last_entry: str
    views: tuple[ViewName, ...]

    def to_dict(self) -> dict[str, Any]:
        """The report as plain JSON-ready data."""
        return dataclasses.asdict(self) | {"views": list(self.views)}


def restore_thread(
    target: StreamSaver | Redis | RedisCluster,
    thread_id: str,
    *,
    at: str | int | datetime,
    into: str,
    prefix: str = DEFAULT_PREFIX,
    projections: Sequence[str] | None = None,
    domain: Domain = CHECKPOINTS,
) -> RestoreReport:
    """Copy `thread_id`'s history up to and including `at` into the new thread `into`.

    Args:
        target: a `StreamSaver` (its client, deployment and projections are used), or a
            ``redis.Redis`` or ``RedisCluster`` (``decode_responses=False``) with `prefix`.
        thread_id: the source thread.
        at: a checkpoint id of the thread, or a point in time (see `log_bound`).
        into: the new thread's id; it must hold nothing yet.
        prefix: the deployment's key prefix when `target` is a client.
        projections: the views to project the new thread into; default: the saver's
            projections, or with a client the views the source thread's positions name.
        domain: whose log and views (default: checkpoints).

    Returns:
        What was copied.

    Raises:
        InvalidInputError: a bad thread id or `at`; a checkpoint id the thread has no checkpoint
            of; `into` already holds a log or views (also
            when written during the restore: then nothing is copied); the source has no event
            up to `at`.
        ConfigurationError: nothing was ever set up under `prefix`.
        EventDecodeError: the source log holds an event this code cannot read.
        redis.exceptions.RedisError: the server failed a command (on a cluster, also when the
            new thread's slot moved during the restore: nothing was copied then).
    """
    thread_id, into = checked_id(thread_id, "thread_id"), checked_id(into, "thread_id")
    client, keyspace, default_views = _deployment(target, prefix)
    bound = _bound(domain, client, keyspace.thread(thread_id).log, at)
    with _owner(client, keyspace.thread(into).log).pipeline(transaction=True) as transaction:
        pipe: Any = transaction
        _claim(pipe, keyspace.thread(into), into, domain)
        source = keyspace.thread(thread_id)
        views = _views(domain, client, source.positions, projections, default_views)
        events = _renamed(_read(domain, client, source.log, bound), into)
        if not events:
            raise InvalidInputError(f"thread {thread_id!r} has no events up to {bound}")
        last_entry = _append_all(pipe, [append_call(domain, event, keyspace, views) for _, event in events], into)
    checkpoints = sum(isinstance(e, CheckpointSaved) for _, e in events)
    return RestoreReport(thread_id, into, bound, len(events), checkpoints, events[-1][0], last_entry, views)


def _renamed(logged: list[tuple[str, Event]], into: str) -> list[tuple[str, Event]]:
    """The `logged` events (under their source ids) as events of thread `into`; appended under
    new ids, so deltas are stored whole (their links name the source's ids)."""
    whole = whole_values(logged, [("*", e) for _, e in logged])
    return [
        # A thread log holds checkpoint events only, each with a `thread_id` field.
        (entry_id, dataclasses.replace(cast(Any, e), thread_id=into))
        for (entry_id, _), (_, e) in zip(logged, whole, strict=True)
    ]


def _owner(client: Redis, key: str) -> Redis:
    """The client of the server holding `key`: on Redis Cluster, the primary owning its slot
    (a transaction with WATCH runs on one node)."""
    if isinstance(client, RedisCluster):
        owner: Any = client
        return cast(Redis, owner.get_node_from_key(key).redis_connection)
    return client


def _claim(pipe: Any, new: ThreadKeys, into: str, domain: Domain) -> None:
    """Watch the new thread's keys (so a write to them aborts the copy); refuse when any exists."""
    guarded = [new.log, new.positions, *(new.namespaces(view) for view in domain.view_names)]
    pipe.watch(*guarded)
    if pipe.exists(*guarded):
        raise InvalidInputError(f"thread {into!r} already exists; restore into a new thread id")


def _append_all(pipe: Any, calls: list[Command], into: str) -> str:
    """Send the appends in one transaction (the script loaded first, in it); the last entry id
    (``append.lua`` replies with the entry id and the thread's incarnation)."""
    pipe.multi()
    pipe.execute_command("SCRIPT", "LOAD", APPEND.source)
    enqueue(pipe, calls)
    try:
        replies = pipe.execute()
    except WatchError as exc:
        raise InvalidInputError(f"thread {into!r} was written to during the restore; nothing was copied") from exc
    return _text(replies[-1][0])


def _deployment(
    target: StreamSaver | Redis | RedisCluster, prefix: str
) -> tuple[Redis, Keyspace, tuple[ViewName, ...] | None]:
    """The client (a ``RedisCluster`` typed as the ``Redis`` whose commands it offers), keyspace
    and projections (None: not known) of the deployment `target` names."""
    if isinstance(target, StreamSaver):
        if target.core.keyspace is None:
            target.setup()
        return cast(Redis, target.redis), target.core.keys, target.core.projections
    client = cast(Redis, target)
    return client, deployment_keyspace(client, prefix), None


def _views(
    domain: Domain, client: Redis, positions: str, chosen: Sequence[str] | None, default: tuple[ViewName, ...] | None
) -> tuple[ViewName, ...]:
    if chosen is not None:
        views = tuple(dict.fromkeys(domain.view_of(v) for v in chosen))
        if not views:
            raise InvalidInputError("restore needs at least one view to project into")
        return views
    if default is not None:
        return default
    recorded = {_text(v) for v in client.hkeys(positions)}
    return tuple(view for view in domain.view_names if view in recorded) or domain.view_names


def _bound(domain: Domain, client: Redis, log: str, at: str | int | datetime) -> str:
    """`log_bound` of `at`; for a checkpoint id, the log entry that saved that checkpoint."""
    if not (isinstance(at, str) and CHECKPOINT_ID.fullmatch(at.strip())):
        return log_bound(at)
    wanted = at.strip().lower()
    for entry_id, event in _read(domain, client, log, "+"):
        if isinstance(event, CheckpointSaved) and event.checkpoint_id.lower() == wanted:
            return entry_id
    raise InvalidInputError(f"the thread has no checkpoint {at.strip()!r} (log {log})")


def _read(domain: Domain, client: Redis, log: str, bound: str, page: int = 1000) -> list[tuple[str, Event]]:
    """The events of `log` up to `bound` (inclusive), erasures (``ThreadDeleted``) left out."""
    out: list[tuple[str, Event]] = []
    start = "-"
    reader: Any = client  # redis-py types a reply as str | bytes; this client returns bytes
    while entries := reader.xrange(log, start, bound, count=page):
        for raw_id, fields in entries:
            entry_id = _text(raw_id)
            event = domain.decode(fields, entry_id)
            if not isinstance(event, domain.erase):
                out.append((entry_id, event))
        start = "(" + _text(entries[-1][0])
    return out


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
