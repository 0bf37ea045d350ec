"""Every call of a saver as a program (`streamsaver.log.program`), without I/O.

`StreamSaver` runs these with the sync driver, `AsyncStreamSaver` with the asyncio one; each of
their methods is one line that picks the driver. What a call does reads top to bottom here; what
it sends and how a reply is read is in `SaverCore` and the modules it uses. A call on a saver not
set up yet sets it up first (`ready`), once even when many calls start together.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)

from projectors.domain import CHECKPOINTS
from streamsaver.checkpoints import cached_reads, history, inline_views
from streamsaver.checkpoints import durability as durability_
from streamsaver.checkpoints.append import thread_id_of
from streamsaver.checkpoints.core import SaverCore
from streamsaver.checkpoints.ownership import WriteFence, check_request, claim_request
from streamsaver.errors import ConfigurationError, WrongKeyTypeError
from streamsaver.log import setup
from streamsaver.log.keys import checked_id
from streamsaver.log.new_primaries import joined, slot_map_check
from streamsaver.log.program import Alone, Call, Emit, Owner, Program, Refused
from streamsaver.log.routing import Command, Routed

log = logging.getLogger("streamsaver.checkpoints")

WRONG_TYPE = "WRONGTYPE streamsaver key"
"""How the write scripts' refusal of a key of another type starts (``expect_type`` in _lib.lua)."""

__all__ = [
    "check_write_ownership",
    "claim_write_ownership",
    "copy_thread",
    "delete_for_runs",
    "delete_thread",
    "delta_channel_history",
    "durable",
    "get_tuple",
    "list_checkpoints",
    "pin_thread",
    "ping",
    "prune",
    "put",
    "put_writes",
    "ready",
    "retain",
    "set_up",
]


def set_up(core: SaverCore, *, wait_indexed: bool = False) -> Program[None]:
    """`setup()`: `streamsaver.log.setup.program` for the checkpoint domain, then one round trip
    recording or reading the deployment's inline views (`inline_views`); the core keeps what it
    read, and its appends project the recorded views. A saver that declared no projections
    adopts the recorded views before the indexes are made (`inline_views.adopt`), and makes
    theirs (and its read view's, kept by a worker).

    Raises:
        InlineViewsError: the saver's projections disagree with the recorded views.
    """
    adopted, fresh = (yield from inline_views.adopt(core.prefix, core.view)) if core.adopts else (None, False)
    views = core.projections if adopted is None else (*adopted, *(() if core.view in adopted else (core.view,)))
    try:
        keyspace, topology = yield from setup.program(
            CHECKPOINTS, core.prefix, core.partitions, views, core.cluster, wait_indexed, core.allow_eviction,
        )
    except ConfigurationError:
        if fresh:
            yield inline_views.forget(core.prefix)
        raise
    if adopted is None:
        replies = yield inline_views.record_requests(keyspace, core.projections)
        adopted = inline_views.agree(keyspace, replies, core.projections, core.view)
    core.projections = adopted
    core.keyspace, core.topology = keyspace, topology


def _set_up_once(core: SaverCore) -> Program[None]:
    if core.keyspace is None:  # another call may have set it up while this one waited
        yield from set_up(core)


def ready(core: SaverCore) -> tuple[Alone, ...]:
    """The steps that set the saver up unless it is (one setup at a time on a driver): none once
    it is, so that ``yield from ready(core)`` costs a call a program nothing more."""
    return () if core.keyspace is not None else (Alone(_set_up_once(core)),)


def durable(core: SaverCore, command: Command) -> Program[Any]:
    """Send an append and the wait its durability asks for, in one round trip: the append's reply.

    The wait names no key; it goes to the node of the append's first key (its slot). When a
    cluster redirected the append (slots moved; the client's map was stale), the wait went to
    the node the append left, which answers at once: it is sent again to the owner now.

    Raises:
        DurabilityError: the append was not confirmed durable in time (it was made).
    """
    wait = durability_.wait_command(core.durability, core.durability_timeout_ms)
    if wait is None:
        [reply] = yield Call([command], core.load_scripts)
        return reply
    key = str(command[3])
    sent_to = yield Owner(key)
    reply, waited = yield Call([command, Routed(key, wait)], core.load_scripts)
    if (yield Owner(key)) != sent_to:
        log.info("slots moved under an append to %s: durability wait re-sent to the new owner", key)
        [waited] = yield Call([Routed(key, wait)], core.load_scripts)
    durability_.check_waited(core.durability, core.durability_timeout_ms, waited)
    return reply


def _append(core: SaverCore, command: Command, thread_id: str, fence: WriteFence | None) -> Program[Any]:
    """`durable`, through `fence` when the writer holds a claim of the thread.

    Raises:
        StaleWriteOwnerError: the claim is not the thread's current one (nothing was written).
        WrongKeyTypeError: a key the append would write holds another type (nothing was written).
    """
    try:
        if fence is None:
            return (yield from durable(core, command))
        return (yield from durable(core, fence.guard(thread_id, command)))
    except Refused as refused:
        if refused.starts(WRONG_TYPE):
            raise WrongKeyTypeError(str(refused.error)) from None
        if fence is None:
            raise
        raise fence.stale(refused) from None


def put(
    core: SaverCore,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
    fence: WriteFence | None = None,
) -> Program[RunnableConfig]:
    """`put`: append the checkpoint (values that extend what this saver last stored of them as
    deltas), durably; when the log refuses a delta whose link is not what this saver
    remembered (``SSBASE``: another process wrote the thread), append the full values instead.
    With `fence`, only while its claim is the thread's current one (`StaleWriteOwnerError`).
    Returns the config of the checkpoint saved."""
    yield from ready(core)
    call = core.put_call(config, checkpoint, metadata, new_versions)
    thread_id = call.event.thread_id
    try:
        reply = yield from _append(core, call.command, thread_id, fence)
    except Refused as refused:
        log.info("delta refused (%s): another process wrote the thread; appending full values", refused.error)
        reply = yield from _append(core, core.put_refused(call, refused), thread_id, fence)
    core.put_logged(call, reply)
    return call.saved


def put_writes(
    core: SaverCore,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
    fence: WriteFence | None = None,
) -> Program[None]:
    """`put_writes`: one durable append; none (no round trip) for no writes. With `fence`, only
    while its claim is the thread's current one (`StaleWriteOwnerError`)."""
    if writes:  # the request names keys of the deployment: a first call sets the saver up first
        yield from ready(core)
    command = core.put_writes_request(config, writes, task_id, task_path)
    if command is None:
        return
    core.appended(command, (yield from _append(core, command, thread_id_of(config), fence)))


def claim_write_ownership(core: SaverCore, thread_id: str) -> Program[WriteFence]:
    """Make a new claim of `thread_id` its current one (one round trip), superseding any other:
    the fence a writer's put and put_writes carry (`streamsaver.checkpoints.ownership`)."""
    thread_id = checked_id(thread_id, "thread_id")
    yield from ready(core)
    [token] = yield Call([claim_request(core.keys, thread_id)], core.load_scripts)
    return WriteFence(thread_id, token.decode() if isinstance(token, bytes) else str(token))


def check_write_ownership(core: SaverCore, fence: WriteFence) -> Program[None]:
    """One round trip: raises `StaleWriteOwnerError` unless `fence`'s claim is still current
    (for a worker about to act outside the thread: send a message, call a tool)."""
    yield from ready(core)
    [held] = yield Call([check_request(core.keys, fence.thread_id)], core.load_scripts)
    fence.check(held)


def delete_thread(core: SaverCore, thread_id: str) -> Program[None]:
    """`delete_thread`: one durable append (a tombstone; nothing of the thread is left); the
    script appends nothing for a thread that has no key (never written, or already deleted)."""
    yield from ready(core)
    yield from durable(core, core.delete_request(thread_id))


def get_tuple(core: SaverCore, config: RunnableConfig) -> Program[CheckpointTuple | None]:
    """`get_tuple`: one round trip (with `refresh_on_read`, the TTL refresh pipelined after)."""
    yield from ready(core)
    requests, cached = core.get_call(config)
    meanwhile = None if cached is None else partial(cached.guess, core.serde)
    return core.read_got(cached, (yield Call(requests, core.load_scripts, meanwhile)))


def list_checkpoints(
    core: SaverCore,
    config: RunnableConfig | None,
    filter: Mapping[str, Any] | None,
    before: RunnableConfig | None,
    limit: int | None,
) -> Program[None]:
    """`list`: emits each page's tuples as it is read (see `listing.ListPager`). When a query
    finds its index gone (dropped or lost, or on a cluster slots moved since setup), or on a
    cluster the slot map its queries ask in the same round trip names a primary setup did not
    know (it joined since: `streamsaver.log.new_primaries`), it sets up again, making the
    index where it is missing and waiting until it has indexed what is there, and goes on below
    the last checkpoint it emitted, once.

    Raises:
        IndexMissingError: the index is gone and the user may not create it.
        IndexNotReadyError: the re-created index was still indexing when the wait ran out.
    """
    yield from ready(core)
    pager, moved = core.list_pager(config, filter, before, limit), False
    meanwhile = cached_reads.page_guess(core.entries, core.keys, core.serde, pager)
    while (request := pager.next_request()) is not None:
        # on a cluster, index queries (routed to each primary) ask for the slot map beside them
        asks = core.topology is not None and not moved and any(isinstance(step, Routed) for step in request)
        check = slot_map_check(core.topology) if asks else []
        call, meanwhile = Call([*request, *check], core.load_scripts, meanwhile), None
        try:
            replies = yield call
            if moved or not (new := joined(core.topology, replies[len(request) :])):
                yield Emit(pager.feed(replies[: len(request)]))
                continue
            why = f"primaries joined the cluster since setup: {', '.join(new)}"
        except Refused as refused:
            if moved or not core.moved(refused):
                raise
            why = f"an index is gone, or slots moved since setup: {refused.error}"
        moved = True
        log.warning("%s: setting up again before listing on", why)
        yield from set_up(core, wait_indexed=True)
        pager = pager.resumed(core.index_targets(core.view))


def copy_thread(core: SaverCore, source: str, target: str, until: str | datetime | None) -> Program[None]:
    """`copy_thread` (see `maintenance.copy_thread`)."""
    yield from ready(core)
    yield from core.copy_program(source, target, until)


def prune(core: SaverCore, thread_ids: Sequence[str], strategy: str) -> Program[None]:
    """`prune` (see `maintenance.prune`)."""
    yield from ready(core)
    yield from core.prune_program(thread_ids, strategy)


def retain(
    core: SaverCore, thread_ids: Sequence[str], keep_last: int | None, max_age: timedelta | None
) -> Program[None]:
    """Retention (see `maintenance.retain`)."""
    yield from ready(core)
    yield from core.retain_program(thread_ids, keep_last, max_age)


def delete_for_runs(core: SaverCore, run_ids: Sequence[str]) -> Program[None]:
    """`delete_for_runs` (see `maintenance.delete_for_runs`). On Redis Cluster, when slots moved
    or a primary joined since setup (its first index query asks for the slot map), it sets up
    again (waiting for the new indexes) and runs again: what the first run deleted is not found
    twice."""
    yield from ready(core)
    try:
        yield from core.runs_program(run_ids)
    except Refused as refused:
        if not core.moved(refused):
            raise
        log.warning(
            "an index is gone, or slots moved or primaries joined since setup (%s): setting up again and deleting "
            "again", refused.error
        )
        yield from set_up(core, wait_indexed=True)
        yield from core.runs_program(run_ids)


def pin_thread(core: SaverCore, thread_id: str, pinned: bool) -> Program[None]:
    """Pin a thread (its keys never expire) or unpin it (they expire again, in `default_ttl`)."""
    yield from ready(core)
    yield Call([core.pin_request(thread_id, pinned)], core.load_scripts)


def delta_channel_history(
    core: SaverCore, config: RunnableConfig, channels: Sequence[str]
) -> Program[Mapping[str, DeltaChannelHistory]]:
    """`get_delta_channel_history`: on the full view one round trip (`history.history_request`);
    on the shallow view, which keeps no ancestors to read at once, the base class's walk of the
    parent chain with `get_tuple` (`history.walk`)."""
    if not channels:
        return {}
    yield from ready(core)
    request = core.history_request(config, channels)
    if request is None:
        return (yield from history.walk(lambda parent: get_tuple(core, parent), config, channels))
    [reply] = yield Call([request[0]], core.load_scripts)
    return core.read_history(reply, channels, request[1])


def ping(core: SaverCore) -> Program[float]:
    """One ``PING`` round trip, for readiness probes: the seconds it took (the savers' drivers
    raise `ServerUnavailableError` / `ServerTimeoutError` when the server does not answer)."""
    started = time.monotonic()
    yield Call([["PING"]], core.load_scripts)
    return time.monotonic() - started
