"""The decisions of the projector worker, without I/O (the overview is in `streamsaver.feeds.worker`).

`WorkerCore`'s programs are generators: they yield a pipeline (a list of commands) or a `Wait`
and receive the replies (errors as exception objects), so the sync and the async
`ProjectorWorker` only send pipelines and sleep. One cycle costs: a roster heartbeat (when
balancing), one pipeline with the previous cycle's acks and dead letters, lease releases and one
``lease.lua`` call per partition (renew or take the lease, claim, read), one with the log entries
(``XRANGE``), and one with the applies (``apply.lua``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, TypeVar

from redis.exceptions import RedisError

from streamsaver.checkpoints import setup
from streamsaver.checkpoints.append import apply_call, view_of
from streamsaver.checkpoints.compaction import rewrite_call
from streamsaver.drivers.wire import Command
from streamsaver.errors import ConfigurationError, EventDecodeError, InvalidInputError
from streamsaver.feeds.ownership import (
    LEASE,
    ROSTER,
    Program,
    Wait,
    call,
    check_count,
    default_name,
    lease_call,
    roster_call,
)
from streamsaver.feeds.worker_units import (
    Item,
    Pointer,
    Unit,
    WorkerStats,
    assignment,
    group_name,
    parse_pointer,
)
from streamsaver.log.events import (
    CheckpointSaved,
    Event,
    RunsDeleted,
    ThreadDeleted,
    ThreadPruned,
    ValuesRetained,
)
from streamsaver.log.keys import Keyspace, ViewName
from streamsaver.log.rewrite import Entry, decode_log
from streamsaver.log.routing import Step as RoutedStep
from streamsaver.log.stored import from_fields
from streamsaver.scripts import LOAD_SCRIPTS

__all__ = ["Program", "Wait", "WorkerCore", "default_name"]

log = logging.getLogger("streamsaver.feeds.worker")
T = TypeVar("T")
LOAD_ALL: list[Command] = LOAD_SCRIPTS + [["SCRIPT", "LOAD", s.source] for s in (LEASE, ROSTER)]
REFOLDING = frozenset({ThreadPruned.TYPE, RunsDeleted.TYPE})
"""Markers of a rewritten log (prune, delete_for_runs): the worker refolds the thread's view
from the whole log, as the rewrite did for the views projected inline."""


Step = list[Command] | Wait


class WorkerCore:
    """Every decision of a projector worker, as programs a sync or async shell drives.

    Args:
        prefix: the deployment's key prefix.
        views: the views to keep.
        name: this worker's name (lease holder and consumer name); unique per live worker.
        lease_ms: how long a lease outlives its last renewal (one renewal per cycle).
        batch: pointers read per partition per cycle.
        start: where a missing consumer group starts: ``"0"`` or ``"$"``.
        poll_ms: the pause when a cycle found nothing (capped at a third of `lease_ms`).

    Raises:
        InvalidInputError: an unknown view, no view, or a bad `start`, `batch` or `lease_ms`.
    """

    def __init__(self, prefix: str, views: Sequence[str], name: str, lease_ms: int, batch: int,
                 start: str = "0", poll_ms: int = 100, cluster: bool = False) -> None:
        if isinstance(views, str):
            raise InvalidInputError(f"views must be a list of view names, not the string {views!r}")
        for what, value, minimum in (("batch", batch, 1), ("lease_ms", lease_ms, 10), ("poll_ms", poll_ms, 0)):
            check_count(value, what, minimum)
        self.views: tuple[ViewName, ...] = tuple(dict.fromkeys(view_of(v) for v in views))
        if not self.views or start not in ("0", "$") or batch < 1 or lease_ms < 10:
            raise InvalidInputError("need a view, start '0' or '$', batch >= 1 and lease_ms >= 10")
        self.prefix, self.name, self.lease_ms, self.batch, self.start = prefix, name, lease_ms, batch, start
        self.idle = min(poll_ms, lease_ms / 3) / 1000
        self.keyspace: Keyspace | None = None
        self.owned: set[Unit] = set()
        self.later: list[Command] = []
        self.joined = False
        self.stopping = False
        self.cluster = cluster
        self.loads: list[RoutedStep] = [*LOAD_ALL]

    @property
    def keys(self) -> Keyspace:
        """The deployment's keyspace, known once `prepare` has run."""
        if self.keyspace is None:
            raise ConfigurationError("the worker is not prepared yet")
        return self.keyspace

    def units(self) -> list[Unit]:
        """Every (view, partition) of the deployment this worker may keep."""
        return [Unit(v, p) for v in self.views for p in range(self.keys.partitions)]

    def call(self, commands: Sequence[RoutedStep]) -> Program[list[Any]]:
        """Send `commands` in one pipeline; on NOSCRIPT load the scripts and resend those."""
        return (yield from call(commands, self.loads))

    def prepare(self) -> Program[None]:
        """Find the deployment, create the views' indexes if missing, load the scripts and
        create missing consumer groups at `start`.

        Raises:
            ConfigurationError: no deployment under the prefix, or the server refused a step.
        """
        topology = yield from setup.read_topology(self.prefix, self.cluster)
        probe: list[RoutedStep] = [["HGET", Keyspace(self.prefix).meta, "partitions"], *setup.list_indexes(topology)]
        partitions, *indexes = yield from self.call(probe)
        if partitions is None or isinstance(partitions, Exception) or any(isinstance(i, Exception) for i in indexes):
            raise ConfigurationError(f"no streamsaver deployment under prefix {self.prefix!r} ({indexes!r})")
        self.keyspace = Keyspace(self.prefix, int(partitions))
        create = setup.create_requests(self.keyspace, self.views, setup.index_names(indexes), topology)
        own = setup.load_scripts(topology, (LEASE, ROSTER))
        self.loads = [*setup.load_scripts(topology), *own]
        groups = [self._create_group(u, self.start) for u in self.units()]
        replies = yield from self.call([*create, *own, *groups])
        setup.read_created(replies[: -len(groups)])
        for reply in replies[-len(groups):]:
            if isinstance(reply, Exception) and "BUSYGROUP" not in str(reply):
                raise ConfigurationError(f"cannot create a projector consumer group: {reply}") from reply

    def _create_group(self, unit: Unit, start: str) -> Command:
        return ["XGROUP", "CREATE", self.keys.feed(unit.partition), group_name(unit.view), start, "MKSTREAM"]

    def _lease(self, unit: Unit, count: int) -> Command:
        return lease_call(self.keys.lease(unit.partition, unit.view), self.keys.feed(unit.partition), self.name,
                          self.lease_ms, group_name(unit.view), count)

    def _take_later(self) -> list[Command]:
        """The acks and dead letters of the last cycle. Losing them with a failed pipeline is
        harmless: their entries stay pending and are read, applied (a no-op) and acked again."""
        later, self.later = self.later, []
        return later

    def cycle(self, balance: bool) -> Program[WorkerStats]:
        """One batch on every partition this worker owns or can take; with `balance`, first
        heartbeat and keep only this worker's share of the partitions.

        Raises:
            RedisError: a failed pipeline, or a transient failure that stopped a partition.
        """
        stats, units = WorkerStats(cycles=1), self.units()
        if balance:
            rosters = yield from self.call([roster_call(self.keys.projector_workers(v), self.name, self.lease_ms)
                                            for v in self.views])
            self.joined = True
            units = assignment(units, {v: [n.decode() for n in r] for v, r in zip(self.views, rosters)}, self.name)
        release = [u for u in sorted(self.owned) if u not in units]
        later = self._take_later() + [self._lease(u, 0) for u in release]
        replies = yield from self.call(later + [self._lease(u, self.batch) for u in units])
        if errors := [r for r in replies[: len(later)] if isinstance(r, Exception) and "BUSYGROUP" not in str(r)]:
            raise errors[0]
        self.owned.difference_update(release)
        items, failed = self._read(units, replies[len(later):], stats)
        yield from self._load_events(items)
        yield from self._apply(items)
        if error := self._settle(items, stats) or failed:
            raise error
        return stats

    def _read(
        self, units: list[Unit], replies: list[Any], stats: WorkerStats
    ) -> tuple[list[Item], RedisError | None]:
        """The entries each unit read, and the first failed read (a lost consumer group is
        created again, from the feed's start, before the unit's next read)."""
        items, failed = [], None
        for unit, reply in zip(units, replies):
            if isinstance(reply, RedisError):
                if "NOGROUP" in str(reply):
                    self.later.append(self._create_group(unit, "0"))
                failed = failed or reply
                continue
            if not reply:
                self.owned.discard(unit)
                stats.busy += 1
                continue
            self.owned.add(unit)
            stats.claimed += int(reply[0])
            for entry, flat in reply[1]:
                item = Item(unit, entry.decode(), dict(zip(flat[::2], flat[1::2])) if flat else {})
                pointer = parse_pointer(item.raw, self.keys, unit.partition)
                if isinstance(pointer, str):
                    item.fail(pointer)
                else:
                    item.pointer = pointer
                    if pointer.type == ThreadDeleted.TYPE:
                        item.event = ThreadDeleted(pointer.thread)
                items.append(item)
        return items, failed

    def _load_events(self, items: list[Item]) -> Program[None]:
        wanted = [i for i in items if i.pointer is not None and i.event is None and not i.outcome]
        reads: list[Command] = []
        for item in wanted:
            assert item.pointer is not None
            log_key, log_id = self.keys.thread(item.pointer.thread).log, item.pointer.log_id
            whole = item.pointer.type in REFOLDING
            reads.append(["XRANGE", log_key, "-" if whole else log_id, "+" if whole else log_id])
        for item, reply in zip(wanted, (yield from self.call(reads)) if reads else []):
            assert item.pointer is not None
            marker = [e for e in reply if e[0].decode() == item.pointer.log_id] if isinstance(reply, list) else []
            if isinstance(reply, Exception):
                item.fail(reply)
            elif not marker:
                item.outcome = "gone"
            else:
                item.event = self._decode(item, item.pointer, marker[0][1])
                if item.event is not None and item.pointer.type in REFOLDING:
                    item.refold = self._decode_log(item, reply)

    @staticmethod
    def _decode_log(item: Item, reply: Any) -> list[Entry] | None:
        try:
            return decode_log(reply)
        except EventDecodeError as exc:
            item.fail(str(exc))
            return None

    @staticmethod
    def _decode(item: Item, pointer: Pointer, raw: Any) -> Event | None:
        try:
            event = from_fields(raw if isinstance(raw, dict) else dict(zip(raw[::2], raw[1::2])), pointer.log_id)
        except EventDecodeError as exc:
            item.fail(str(exc))
            return None
        if pointer.type == CheckpointSaved.TYPE and event.TYPE == ValuesRetained.TYPE and event.thread_id == pointer.thread:
            # The checkpoint was pruned since: its entry keeps only values later checkpoints
            # point at, which the rewrite's refold (its ThreadPruned pointer) projects.
            item.outcome = "gone"
            return None
        if (event.thread_id, event.TYPE) != (pointer.thread, pointer.type):
            item.fail(f"log entry {pointer.log_id} holds a {event.TYPE} of thread {event.thread_id!r}, "
                      f"not the {pointer.type} of {pointer.thread!r} the pointer names")
            return None
        return event

    def _apply(self, items: list[Item]) -> Program[None]:
        todo, calls, blocked = [], [], set()
        for item in items:
            if item.outcome == "retry":
                blocked.add(item.unit)  # apply nothing after it: its partition stops there
            elif item.event and item.pointer and not item.outcome and item.unit not in blocked:
                todo.append(item)
                calls.append(self._apply_call(item, item.event, item.pointer))
        for item, reply in zip(todo, (yield from self.call(calls)) if calls else []):
            if isinstance(reply, Exception):
                item.fail(reply)
            else:
                item.outcome = "applied" if item.refold is not None or int(reply) > 0 else "skipped"

    def _apply_call(self, item: Item, event: Event, pointer: Pointer) -> Command:
        """An event's apply, or for a rewritten log the refold of the thread's view."""
        if item.refold is None:
            return apply_call(event, pointer.log_id, self.keys, [item.unit.view])
        return rewrite_call(
            self.keys, [item.unit.view], pointer.thread, guard="", replace_log=None, entries=item.refold, pointers=False
        )

    def _settle(self, items: list[Item], stats: WorkerStats) -> RedisError | None:
        """Queue acks and dead letters in feed order; a partition stops at a transient failure
        (returned, to raise once every partition is settled)."""
        stopped: set[Unit] = set()
        first: RedisError | None = None
        for n, item in enumerate(items):
            if item.unit in stopped or not item.outcome:
                stopped.add(item.unit)
                continue
            if item.outcome == "retry":
                # A retry is useless once a later event of the thread was applied: positions
                # would skip it. Dead-letter it then; otherwise stop the partition here.
                thread = item.pointer.thread if item.pointer else None
                if not any(o.unit == item.unit and o.outcome == "applied" and o.pointer
                           and o.pointer.thread == thread for o in items[n + 1:]):
                    stopped.add(item.unit)
                    first = first or RedisError(f"{item.unit.view} partition {item.unit.partition}: {item.error}")
                    continue
                item.outcome = "dead"
                item.error += "; a later event of its thread was applied meanwhile"
            stats.read += 1
            setattr(stats, item.outcome, getattr(stats, item.outcome) + 1)
            if item.outcome == "dead":
                self.later.append(self._dead_letter(item))
            feed = self.keys.feed(item.unit.partition)
            self.later.append(["XACK", feed, group_name(item.unit.view), item.entry])
        return first

    def _dead_letter(self, item: Item) -> Command:
        feed = self.keys.feed(item.unit.partition)
        log.warning("projector %s: dead letter %s of %s (log entry %s): %s", item.unit.view, item.entry, feed,
                    item.pointer.log_id if item.pointer else "?", item.error)
        fields_ = {**item.raw, b"feed": feed.encode(), b"entry": item.entry.encode(),
                   b"error": item.error.encode("utf-8", "replace"), b"worker": self.name.encode()}
        return ["XADD", self.keys.dead_letters(item.unit.view), "*", *[x for kv in fields_.items() for x in kv]]

    def release(self) -> Program[None]:
        """Send pending acks and dead letters, give up every lease, leave the rosters."""
        if self.keyspace is None:
            return
        leave = [roster_call(self.keys.projector_workers(v), self.name, 0) for v in self.views]
        commands = self._take_later() + [self._lease(u, 0) for u in sorted(self.owned)]
        if commands or self.joined:
            yield from self.call(commands + (leave if self.joined else []))
        self.owned.clear()
        self.joined = False

    def once(self) -> Program[WorkerStats]:
        """One balanced cycle (preparing first if needed)."""
        if self.keyspace is None:
            yield from self.prepare()
        return (yield from self.cycle(balance=True))

    def burst(self) -> Program[WorkerStats]:
        """Prepare, then cycle over every partition whose lease is free until nothing is left to
        read, then release. Partitions another worker holds are counted in ``busy`` per cycle."""
        yield from self.prepare()
        total = WorkerStats()
        while True:
            stats = yield from self.cycle(balance=False)
            total.add(stats)
            if stats.read == 0 and not self.later:
                break
        yield from self.release()
        return total

    def loop(self) -> Program[WorkerStats]:
        """Prepare, then cycle with balancing until `stopping`; a Redis error is logged and
        retried with backoff. Releases everything at the end."""
        yield from self.prepare()
        total, backoff = WorkerStats(), self.idle
        while not self.stopping:
            try:
                stats = yield from self.cycle(balance=True)
            except RedisError as exc:
                log.warning("projector worker %s: %s; retrying in %.1fs", self.name, exc, backoff)
                yield Wait(backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            total.add(stats)
            backoff = self.idle
            if stats.read == 0:
                yield Wait(self.idle)
        self.stopping = False
        try:
            yield from self.release()
        except RedisError as exc:
            log.warning("projector worker %s: could not release its leases (they expire): %s", self.name, exc)
        return total
