"""The decisions of the projector worker, without I/O (the overview is in `streamsaver.feeds.worker`).

`WorkerCore` is a `streamsaver.feeds.consumer.PartitionConsumer` over every (view, partition):
the shared core owns, reads, settles and releases; this module holds the projection: turn each
pointer into an event (reading its log entry, or the whole log after a rewrite), apply it with
the same script and projectors as replay, and decide each entry's outcome (applied, skipped,
gone, dead, or a transient failure that stops its partition). One cycle costs: a roster
heartbeat (when balancing), one pipeline with the previous cycle's acks and dead letters, lease
releases and one ``lease.lua`` call per partition (renew or take the lease, claim, read), one with
the log entries (``XRANGE``), and one with the applies (``apply.lua``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from redis.exceptions import RedisError

from projectors.domain import CHECKPOINTS
from streamsaver.drivers.wire import Command
from streamsaver.errors import ConfigurationError, EventDecodeError, InvalidInputError
from streamsaver.feeds.consumer import PartitionConsumer
from streamsaver.feeds.consumer_data import ConsumerOptions, Lane, Pointer, Taken, parse_pointer
from streamsaver.feeds.ownership import LEASE, ROSTER, Program, Wait, default_name
from streamsaver.feeds.worker_units import Item, Unit, WorkerStats
from streamsaver.log.append import apply_call
from streamsaver.log.domain import Domain
from streamsaver.log.events import CheckpointSaved, Event, RunsDeleted, ThreadPruned, ValuesRetained
from streamsaver.log.indexes import index_names, list_indexes
from streamsaver.log.keys import ViewName, projector_group
from streamsaver.log.rewrite import Entry, decode_log, rewrite_call
from streamsaver.log.routing import Step, Topology
from streamsaver.log.setup import create_requests, load_scripts, read_created

__all__ = ["Program", "Wait", "WorkerCore", "default_name"]

log = logging.getLogger("streamsaver.feeds.worker")
REFOLDING = frozenset({ThreadPruned.TYPE, RunsDeleted.TYPE})
"""Markers of a rewritten log (prune, delete_for_runs): the worker refolds the thread's view
from the whole log, as the rewrite did for the views projected inline."""


class WorkerCore(PartitionConsumer[Unit, WorkerStats]):
    """Every decision of a projector worker, as programs a sync or async shell drives: the
    ownership loop of `PartitionConsumer` over every (view, partition), and the projection.

    Args:
        prefix: the deployment's key prefix.
        views: the views to keep.
        name: this worker's name (lease holder and consumer name); unique per live worker.
        lease_ms: how long a lease outlives its last renewal (one renewal per cycle).
        batch: pointers read per partition per cycle.
        start: where a missing consumer group starts: ``"0"`` or ``"$"``.
        poll_ms: the longest wait when a cycle found nothing (capped at a third of `lease_ms`).
        domain: the domain whose views the worker keeps (the checkpoints by default).

    Raises:
        InvalidInputError: an unknown view, no view, or a bad `start`, `batch` or `lease_ms`.
    """

    kind = "projector worker"
    log = log

    def __init__(self, prefix: str, views: Sequence[str], name: str, lease_ms: int, batch: int,
                 start: str = "0", poll_ms: int = 100, cluster: bool = False,
                 domain: Domain = CHECKPOINTS) -> None:
        if isinstance(views, str):
            raise InvalidInputError(f"views must be a list of view names, not the string {views!r}")
        options = ConsumerOptions(name=name, batch=batch, lease_ms=lease_ms, poll_ms=poll_ms, start=start)
        options.check()
        self.domain = domain
        self.views: tuple[ViewName, ...] = tuple(dict.fromkeys(domain.view_of(v) for v in views))
        if not self.views:
            raise InvalidInputError("need at least one view")
        super().__init__(prefix, options, WorkerStats, load_scripts((*domain.setup_scripts, LEASE, ROSTER)), cluster)

    def feed(self, partition: int) -> str:
        """The feed of `partition` the domain's pointers go to (the store's own, for the store)."""
        return self.domain.feed_key(self.keys, partition)

    def units(self) -> list[Unit]:
        """Every (view, partition) of the deployment this worker may keep."""
        return [Unit(v, p) for v in self.views for p in range(self.keys.partitions)]

    def lane(self, unit: Unit) -> Lane:
        """The keys of a view's partition: its projector group, lease and roster."""
        k = self.keys
        return Lane(projector_group(unit.view), unit.partition, k.lease(unit.partition, unit.view),
                    k.projector_workers(unit.view))

    def _probe(self, topology: Topology | None) -> list[Step]:
        return list_indexes(topology)

    def _setup(self, topology: Topology | None, probed: list[Any]) -> list[Step]:
        """Create the views' indexes if missing and load the scripts."""
        if any(isinstance(i, Exception) for i in probed):
            raise ConfigurationError(f"no streamsaver deployment under prefix {self.prefix!r} ({probed!r})")
        create = create_requests(self.domain, self.keys, self.views, index_names(probed), topology)
        own = load_scripts((LEASE, ROSTER), topology)
        self.loads = [*load_scripts(self.domain.setup_scripts, topology), *own]
        return [*create, *own]

    def _check_setup(self, replies: list[Any]) -> None:
        read_created(replies)

    def _consume(self, batch: list[tuple[Unit, list[Taken]]], started: float,
                 stats: WorkerStats) -> Program[RedisError | None]:
        items = [self._item(unit, taken) for unit, read in batch for taken in read]
        yield from self._load_events(items)
        yield from self._apply(items)
        return self._settle(items, stats)

    def _item(self, unit: Unit, taken: Taken) -> Item:
        item = Item(unit, taken.entry, taken.raw)
        pointer = parse_pointer(item.raw, self.keys, unit.partition, self.domain.log_partition)
        if isinstance(pointer, str):
            item.fail(pointer)
        else:
            item.pointer = pointer
            if pointer.type == self.domain.erase.TYPE:
                item.event = self.domain.erase(pointer.thread)
        return item

    def _load_events(self, items: list[Item]) -> Program[None]:
        wanted = [i for i in items if i.pointer is not None and i.event is None and not i.outcome]
        reads: list[Command] = []
        for item in wanted:
            assert item.pointer is not None
            log_key, log_id = self.domain.log_keys(self.keys, item.pointer.thread).log, item.pointer.log_id
            whole = item.pointer.type in REFOLDING
            reads.append(["XRANGE", log_key, "-" if whole else log_id, "+" if whole else log_id])
        for item, reply in zip(wanted, (yield from self.call(reads)) if reads else [], strict=True):
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

    def _decode(self, item: Item, pointer: Pointer, raw: Any) -> Event | None:
        try:
            fields = raw if isinstance(raw, dict) else dict(zip(raw[::2], raw[1::2], strict=True))
            event = self.domain.decode(fields, pointer.log_id)
        except EventDecodeError as exc:
            item.fail(str(exc))
            return None
        retained = event.TYPE == ValuesRetained.TYPE and event.thread_id == pointer.thread
        if pointer.type == CheckpointSaved.TYPE and retained:
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
        for item, reply in zip(todo, (yield from self.call(calls)) if calls else [], strict=True):
            if isinstance(reply, Exception):
                item.fail(reply)
            else:
                item.outcome = "applied" if item.refold is not None or int(reply) > 0 else "skipped"

    def _apply_call(self, item: Item, event: Event, pointer: Pointer) -> Command:
        """An event's apply, or for a rewritten log the refold of the thread's view."""
        if item.refold is None:
            return apply_call(self.domain, event, pointer.log_id, self.keys, [item.unit.view])
        return rewrite_call(
            self.domain, self.keys, [item.unit.view], pointer.thread,
            guard="", replace_log=None, entries=item.refold, pointers=False,
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
            self._ack(item.unit, [item.entry])
        return first

    def _dead_letter(self, item: Item) -> Command:
        feed = self.feed(item.unit.partition)
        log.warning("projector %s: dead letter %s of %s (log entry %s): %s", item.unit.view, item.entry, feed,
                    item.pointer.log_id if item.pointer else "?", item.error)
        fields_ = {**item.raw, b"feed": feed.encode(), b"entry": item.entry.encode(),
                   b"error": item.error.encode("utf-8", "replace"), b"worker": self.name.encode()}
        return ["XADD", self.keys.dead_letters(item.unit.view), "*", *[x for kv in fields_.items() for x in kv]]
