"""The decisions of a subscriber, without I/O (the overview is in `streamsaver.feeds.subscriber`).

`SubscriberCore` is a `streamsaver.feeds.consumer.PartitionConsumer` over its group's partitions:
the shared core owns, reads and releases; this module turns feed entries into `FeedEvent`s
(filters, prefetch of log entries and delta links) and hands them to the handler with its retry
and dead-letter policy. Programs are generators (see `streamsaver.feeds.ownership`): they yield
pipelines, `Wait`, or `Deliver` (hand these events to the handler, in order) and receive the
replies, so the sync and async `Subscriber` only send pipelines, sleep and call the handler. A steady cycle costs
one round trip (the previous cycle's acks, then one ``lease.lua`` call per partition: renew, read)
plus one for the log entries when payloads are prefetched or an old pointer lacks metadata.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol
from redis.exceptions import RedisError

from streamsaver.errors import ConfigurationError
from streamsaver.feeds.audit_event import AuditFeedEvent
from streamsaver.feeds.consumer import PartitionConsumer
from streamsaver.feeds.consumer_data import Lane, Pointer, Taken, parse_pointer
from streamsaver.feeds.event import Entry, EntrySource, FeedEvent
from streamsaver.feeds.ownership import LEASE, ROSTER, Program, Wait
from streamsaver.feeds.store_event import StoreFeedEvent, item_address
from streamsaver.feeds.subscriber_options import Deliver, Options, SubscriberStats, check_group
from streamsaver.log import deltas
from streamsaver.log.audit import AUDIT_TYPES
from streamsaver.log.events import CheckpointSaved, ThreadDeleted
from streamsaver.log.fields import CHECKPOINT_ID, NAMESPACE, REQUEUED_FOR, THREAD, TYPE
from streamsaver.log.keys import partition_of
from streamsaver.log.routing import Command, Step, Topology
from streamsaver.log.setup import load_scripts
from streamsaver.scripts import TRIM

__all__ = ["Deliver", "Options", "SubscriberCore", "SubscriberStats", "check_group"]

log = logging.getLogger("streamsaver.feeds.subscriber")
LOAD: list[Command] = [["SCRIPT", "LOAD", s.source] for s in (LEASE, ROSTER, TRIM)]


@dataclass
class Item:
    """One feed entry read in a cycle: an event for the handler, or why not."""

    entry: str
    raw: dict[bytes, bytes]
    attempts: int
    """Attempts counted before this delivery."""
    recovering: bool = False
    """Read from the pending entries: this delivery is counted already."""
    event: FeedEvent | None = None
    skip: str = ""
    """``filtered`` (ack without the handler) or ``dead: <why>`` (a malformed pointer)."""


class SubscriberCore(PartitionConsumer[int, SubscriberStats]):
    """Every decision of one subscriber of one group, as programs a shell drives: the ownership
    loop of `PartitionConsumer` over the group's partitions, and delivery to the handler.

    Args:
        prefix: the deployment's key prefix.
        options: the subscriber's settings.
        serde: decodes payloads for the handler.
        source: reads a log entry when a handler asks for one that was not prefetched.

    Raises:
        InvalidInputError: a bad group name or option.
    """

    kind = "subscriber"
    log = log

    def __init__(self, prefix: str, options: Options, serde: SerializerProtocol, source: EntrySource | None,
                 cluster: bool = False) -> None:
        options.check()
        super().__init__(prefix, options, SubscriberStats, LOAD, cluster)
        self.o, self.serde, self.source = options, serde, source
        self.heartbeat_s = options.lease_ms / 4000
        self.trimmed_at = time.monotonic()
        self.store, self.audit = options.domain == "store", options.domain == "audit"
        self.group_keys = options.group if options.domain == "checkpoints" else f"{options.domain}:{options.group}"
        """The name the group's leases, roster, attempts and dead letters are kept under: a
        store or audit subscriber's never meet those of a checkpoint group of the same name."""

    def feed(self, partition: int) -> str:
        """The partition feed followed: the thread logs', the store's or the agent audit's."""
        if self.audit:
            return self.keys.audit_feed(partition)
        return self.keys.store(str(partition)).feed if self.store else self.keys.feed(partition)

    def units(self) -> list[int]:
        """The group's partitions this subscriber follows (all, or its `partitions` option)."""
        chosen = self.o.partitions
        return sorted(set(chosen)) if chosen is not None else list(range(self.keys.partitions))

    def lane(self, unit: int) -> Lane:
        """The group's keys on partition `unit`."""
        k, group = self.keys, self.group_keys
        return Lane(self.o.group, unit, k.subscriber_lease(unit, group), k.subscribers(group),
                    k.subscriber_attempts(unit, group))

    def _setup(self, topology: Topology | None, probed: list[Any]) -> list[Step]:
        if any(not 0 <= p < self.keys.partitions for p in self.units()):
            raise ConfigurationError(f"partitions must be a non-empty subset of 0..{self.keys.partitions - 1}")
        self.loads = load_scripts((LEASE, ROSTER, TRIM), topology)
        return [*self.loads]

    def _consume(self, batch: list[tuple[int, list[Taken]]], started: float,
                 stats: SubscriberStats) -> Program[RedisError | None]:
        items = {p: [self._item(p, taken) for taken in read] for p, read in batch}
        stats.read += sum(len(i) for i in items.values())
        yield from self._prefetch([i for read in items.values() for i in read])
        deadline = started + self.o.lease_ms * 0.8 / 1000
        for partition, read in items.items():
            yield from self._run_partition(partition, read, deadline, stats)
        return None

    def _item(self, partition: int, taken: Taken) -> Item:
        item = Item(taken.entry, taken.raw, taken.attempts, taken.recovering)
        raw, attempts, entry = taken.raw, taken.attempts, taken.entry
        if attempts >= self.o.max_deliveries:
            item.skip = f"dead: {attempts} deliveries never completed (does the handler crash its process?)"
            return item
        if self.audit:
            return self._audit_item(partition, item)
        pointer = parse_pointer(raw, self.keys, partition, _store_partition if self.store else partition_of)
        if isinstance(pointer, str):
            item.skip = f"dead: {pointer}" if raw else "filtered"  # a trimmed entry has no fields
            return item
        target = raw.get(REQUEUED_FOR)
        elsewhere = target is not None and target.decode() != self.o.group
        if elsewhere or not self.o.event_filter.admits_type(pointer.type):
            item.skip = "filtered"
            return item
        if self.store:
            item.event = self._store_event(partition, taken, pointer)
            return item
        ns, cid = raw.get(NAMESPACE), raw.get(CHECKPOINT_ID)
        item.event = FeedEvent(
            type_=pointer.type, thread_id=pointer.thread, partition=partition, feed_id=entry,
            checkpoint_ns=ns.decode("utf-8", "surrogatepass") if ns is not None else None,
            checkpoint_id=cid.decode("utf-8", "surrogatepass") if cid is not None else None,
            log_id=pointer.log_id, log_key=self.keys.thread(pointer.thread).log,
            deliveries=attempts + 1, serde=self.serde, source=self.source)
        return item

    def _audit_item(self, partition: int, item: Item) -> Item:
        """An audit feed entry is the record itself: no pointer to check, no log entry to read."""
        type_, thread = item.raw.get(TYPE, b"").decode("utf-8", "replace"), item.raw.get(THREAD)
        if thread is None or type_ not in AUDIT_TYPES:
            item.skip = f"dead: not an audit record ({type_!r})" if item.raw else "filtered"
        elif not self.o.event_filter.admits_type(type_):
            item.skip = "filtered"
        else:
            item.event = AuditFeedEvent(
                fields=item.raw, type_=type_, thread_id=thread.decode("utf-8", "surrogatepass"), partition=partition,
                feed_id=item.entry, log_id=item.entry, log_key=self.feed(partition), deliveries=item.attempts + 1,
                serde=self.serde, source=self.source)
        return item

    def _store_event(self, partition: int, taken: Taken, pointer: Pointer) -> StoreFeedEvent:
        namespace, key = item_address(taken.raw)
        return StoreFeedEvent(
            namespace=namespace, key=key, type_=pointer.type, thread_id=pointer.thread, partition=partition,
            feed_id=taken.entry, log_id=pointer.log_id, log_key=self.keys.store(pointer.thread).log,
            deliveries=taken.attempts + 1, serde=self.serde, source=self.source)

    def _prefetch(self, items: list[Item]) -> Program[None]:
        """Read the batch's log entries in one pipeline: every event's with `prefetch`, the
        checkpoints' with `load_metadata` (or a metadata filter)."""
        metadata = self.o.load_metadata or bool(self.o.event_filter.metadata)
        wanted = [i.event for i in items if i.event is not None and i.event.type not in _READS_NOTHING and (
            self.o.prefetch or (metadata and i.event.type == CheckpointSaved.TYPE))]
        if not wanted:
            return
        replies = yield from self.call([["XRANGE", e.log_key, e.log_id, e.log_id] for e in wanted])
        for event, reply in zip(wanted, replies, strict=True):
            if isinstance(reply, Exception):
                raise reply
            event.set_entry({} if not reply else _fields(reply[0][1]))
        if self.o.prefetch:
            yield from self._prefetch_links(wanted)

    def _prefetch_links(self, events: list[FeedEvent]) -> Program[None]:
        """Read the entries the batch's deltas link to (`streamsaver.log.deltas`), one pipeline per
        link level (one level since deltas link to their base), so `payload` reads nothing; an
        entry the batch holds already is not read again."""
        known: dict[tuple[str, str], Entry] = {
            (e.log_key, e.log_id): entry for e in events if (entry := e.entry()) is not None}
        for _ in range(deltas.READ_LIMIT):
            wanted = [(e, link) for e in events for link in e.links_wanted()]
            if not wanted:
                return
            needed = ((e.log_key, link[0]) for e, link in wanted)
            unread = list(dict.fromkeys(at for at in needed if at not in known))
            if unread:
                replies = yield from self.call([["XRANGE", key, entry, entry] for key, entry in unread])
                for at, reply in zip(unread, replies, strict=True):
                    if isinstance(reply, Exception):
                        raise reply
                    known[at] = {} if not reply else _fields(reply[0][1])
            for e, link in wanted:
                e.set_link(link, known[(e.log_key, link[0])])

    def _run_partition(self, partition: int, items: list[Item], deadline: float,
                       stats: SubscriberStats) -> Program[None]:
        """Filter, hand to the handler in feed order, and settle each entry; a failed attempt
        stops the partition (its entry is tried first next cycle) until it is dead-lettered."""
        acks: list[str] = []
        pos = 0
        while pos < len(items):
            rest = items[pos:]
            for item in rest:
                if (item.event is not None and self.o.event_filter.metadata
                        and not self.o.event_filter.admits(item.event.type, item.event.metadata)):
                    item.skip, item.event = "filtered", None
            wanted = [i for i in rest if i.event is not None]
            handled, error = (yield Deliver([i.event for i in wanted if i.event], deadline)) if wanted else (0, None)
            stop = wanted[handled] if handled < len(wanted) else None
            for item in rest:
                if item is stop:
                    break
                pos += 1
                self._settle(partition, item, acks, stats)
            if stop is None or error is None:
                break
            stats.failed += 1
            if stop.attempts + 1 < self.o.max_deliveries:
                if not stop.recovering:
                    attempts = self.keys.subscriber_attempts(partition, self.group_keys)
                    self.later.append(["HINCRBY", attempts, stop.entry, 1])
                log.info("subscriber %s: %s failed (attempt %d): %r", self.name, stop.event, stop.attempts + 1, error)
                break
            stop.skip = f"dead: {type(error).__name__}: {error}"
            pos += 1
            self._settle(partition, stop, acks, stats)
        if acks:
            self._ack(partition, acks)

    def _settle(self, partition: int, item: Item, acks: list[str], stats: SubscriberStats) -> None:
        if item.skip.startswith("dead"):
            stats.dead += 1
            self.later.append(self._dead_letter(partition, item))
        elif item.skip:
            stats.filtered += 1
        else:
            stats.handled += 1
        if item.attempts or item.recovering:
            self.later.append(["HDEL", self.keys.subscriber_attempts(partition, self.group_keys), item.entry])
        acks.append(item.entry)

    def _dead_letter(self, partition: int, item: Item) -> Command:
        error = item.skip.removeprefix("dead: ")
        log.warning(
            "subscriber group %s: dead letter %s of partition %d: %s", self.o.group, item.entry, partition, error
        )
        extra = {b"partition": b"%d" % partition, b"entry": item.entry.encode(),
                 b"error": error.encode("utf-8", "replace"),
                 b"consumer": self.name.encode(),
                 b"attempts": b"%d" % (item.attempts + (1 if item.event is not None else 0))}
        flat = [x for kv in ({k: v for k, v in item.raw.items() if k != REQUEUED_FOR} | extra).items() for x in kv]
        return ["XADD", self.keys.subscriber_dead_letters(self.group_keys), "*", *flat]

    def _trim_if_due(self) -> None:
        """With `trim_every_s`, queue a trim (``trim.lua``) of each owned feed once per period: it
        drops the entries every group on the feed has acknowledged (see `streamsaver.feeds.admin`)."""
        if self.o.trim_every_s is None or time.monotonic() - self.trimmed_at < self.o.trim_every_s:
            return
        self.trimmed_at = time.monotonic()
        self.later += [TRIM.evalsha_args([self.feed(p)], []) for p in sorted(self.owned)]

    def _after(self, stats: SubscriberStats) -> Program[None]:
        """Trim when due; after a failed handler, pause `retry_ms` (let a failing dependency
        recover) instead of waiting for new entries."""
        self._trim_if_due()
        if stats.failed and self.o.retry_ms and not self.stopping:
            yield Wait(self.o.retry_ms / 1000)
        else:
            yield from super()._after(stats)


_READS_NOTHING = AUDIT_TYPES | {ThreadDeleted.TYPE}
"""Events whose feed entry holds all there is: prefetch reads no log entry for them."""


def _store_partition(thread: str, partitions: int) -> int:
    """The partition a store pointer's "thread" (its partition's log id) names (-1: none)."""
    return int(thread) if thread.isdigit() and int(thread) < partitions else -1


def _fields(raw: Any) -> dict[bytes, bytes]:
    return dict(raw) if isinstance(raw, Mapping) else dict(zip(raw[::2], raw[1::2], strict=True))
