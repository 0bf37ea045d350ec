"""The decisions of a subscriber, without I/O (the overview is in `streamsaver.feeds.subscriber`).

`SubscriberCore`'s programs are generators (see `streamsaver.feeds.ownership`): they yield pipelines,
`Wait`, or `Deliver` (hand these events to the handler, in order) and receive the replies, so the
sync and async `Subscriber` only send pipelines, sleep and call the handler. A steady cycle costs
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

from streamsaver.checkpoints.setup import load_scripts, read_topology
from streamsaver.drivers.wire import Command
from streamsaver.errors import ConfigurationError
from streamsaver.feeds.event import Entry, EntrySource, FeedEvent
from streamsaver.feeds.ownership import (
    LEASE,
    ROSTER,
    Program,
    Wait,
    call,
    lease_call,
    roster_call,
    share,
)
from streamsaver.feeds.subscriber_options import Deliver, Options, SubscriberStats, check_group
from streamsaver.feeds.worker_units import parse_pointer
from streamsaver.log import deltas
from streamsaver.log.events import CheckpointSaved, ThreadDeleted
from streamsaver.log.keys import Keyspace
from streamsaver.log.routing import Step
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


class SubscriberCore:
    """Every decision of one subscriber of one group, as programs a shell drives.

    Args:
        prefix: the deployment's key prefix.
        options: the subscriber's settings.
        serde: decodes payloads for the handler.
        source: reads a log entry when a handler asks for one that was not prefetched.

    Raises:
        InvalidInputError: a bad group name or option.
    """

    def __init__(self, prefix: str, options: Options, serde: SerializerProtocol, source: EntrySource | None,
                 cluster: bool = False) -> None:
        options.check()
        self.prefix, self.o, self.serde, self.source = prefix, options, serde, source
        self.name = options.name
        self.keyspace: Keyspace | None = None
        self.all: list[int] = []
        self.mine: list[int] = []
        self.owned: set[int] = set()
        self.later: list[Command] = []
        self.tails: dict[int, str] = {}
        self.heartbeat_at = float("-inf")
        self.trimmed_at = time.monotonic()
        self.joined = False
        self.cluster = cluster
        self.loads: list[Step] = [*LOAD]
        self.stopping = False

    @property
    def keys(self) -> Keyspace:
        """The deployment's keyspace, known once `prepare` has run."""
        if self.keyspace is None:
            raise ConfigurationError("the subscriber is not prepared yet")
        return self.keyspace

    def prepare(self) -> Program[None]:
        """Find the deployment, load the scripts, create the group on its feeds at `start`.

        Raises:
            ConfigurationError: no deployment under the prefix, a partition out of range, or
                the server refused to create the group.
        """
        topology = yield from read_topology(self.prefix, self.cluster)
        self.loads = load_scripts(topology, (LEASE, ROSTER, TRIM))
        (partitions,) = yield from call([["HGET", Keyspace(self.prefix).meta, "partitions"]], self.loads)
        if partitions is None or isinstance(partitions, Exception):
            raise ConfigurationError(f"no streamsaver deployment under prefix {self.prefix!r}")
        self.keyspace = Keyspace(self.prefix, int(partitions))
        wanted = sorted(set(self.o.partitions)) if self.o.partitions is not None else list(range(int(partitions)))
        if not wanted or any(not 0 <= p < self.keyspace.partitions for p in wanted):
            raise ConfigurationError(f"partitions must be a non-empty subset of 0..{self.keyspace.partitions - 1}")
        self.all, self.mine = wanted, wanted
        replies = yield from call([*self.loads, *(self._create_group(p, self.o.start) for p in wanted)], self.loads)
        for reply in replies[len(self.loads):]:
            if isinstance(reply, Exception) and "BUSYGROUP" not in str(reply):
                raise ConfigurationError(f"cannot create consumer group {self.o.group!r}: {reply}") from reply

    def _create_group(self, partition: int, start: str) -> Command:
        return ["XGROUP", "CREATE", self.keys.feed(partition), self.o.group, start, "MKSTREAM"]

    def _lease(self, partition: int, count: int) -> Command:
        k = self.keys
        return lease_call(k.subscriber_lease(partition, self.o.group), k.feed(partition), self.name,
                          self.o.lease_ms, self.o.group, count, k.subscriber_attempts(partition, self.o.group))

    def _heartbeat(self) -> Program[None]:
        """Renew this subscriber in the group's roster (a few times per lease) and take its share."""
        now = time.monotonic()
        if now - self.heartbeat_at < self.o.lease_ms / 4000:
            return
        (live,) = yield from call([roster_call(self.keys.subscribers(self.o.group), self.name, self.o.lease_ms)], self.loads)
        if isinstance(live, Exception):
            raise live
        self.heartbeat_at, self.joined = now, True
        self.mine = share(self.all, [n.decode() for n in live], self.name)

    def cycle(self, balance: bool) -> Program[SubscriberStats]:
        """One batch on every partition this subscriber owns or can take; with `balance`, first
        heartbeat and keep only this subscriber's share.

        Raises:
            RedisError: a failed pipeline or read.
        """
        stats = SubscriberStats(cycles=1)
        if balance:
            yield from self._heartbeat()
        targets = self.mine if balance else self.all
        release = [p for p in sorted(self.owned) if p not in targets]
        later, self.later = self.later + [self._lease(p, 0) for p in release], []
        started = time.monotonic()
        replies = yield from call(later + [self._lease(p, self.o.batch) for p in targets], self.loads)
        if errors := [r for r in replies[: len(later)] if isinstance(r, Exception) and "BUSYGROUP" not in str(r)]:
            raise errors[0]
        self.owned.difference_update(release)
        batches, failed = self._read(targets, replies[len(later):], stats)
        yield from self._prefetch([i for items in batches.values() for i in items])
        deadline = started + self.o.lease_ms * 0.8 / 1000
        for partition, items in batches.items():
            yield from self._run_partition(partition, items, deadline, stats)
        if failed:
            raise failed
        return stats

    def _read(self, targets: list[int], replies: list[Any],
              stats: SubscriberStats) -> tuple[dict[int, list[Item]], RedisError | None]:
        batches: dict[int, list[Item]] = {}
        failed: RedisError | None = None
        for partition, reply in zip(targets, replies):
            if isinstance(reply, RedisError):
                if "NOGROUP" in str(reply):
                    self.later.append(self._create_group(partition, "0"))
                failed = failed or reply
                continue
            if not reply:
                self.owned.discard(partition)
                stats.busy += 1
                continue
            self.owned.add(partition)
            claimed, entries, tail, attempts = reply
            stats.claimed += int(claimed)
            if tail:
                self.tails[partition] = tail.decode()
            recovering = bool(attempts)
            tries = [int(a) for a in attempts] if recovering else [0] * len(entries)
            items = [self._item(partition, e.decode(), flat, n, recovering) for (e, flat), n in zip(entries, tries)]
            stats.read += len(items)
            if items:
                batches[partition] = items
        return batches, failed

    def _item(self, partition: int, entry: str, flat: list[bytes] | None, attempts: int, recovering: bool) -> Item:
        raw = dict(zip(flat[::2], flat[1::2])) if flat else {}
        item = Item(entry, raw, attempts, recovering)
        if attempts >= self.o.max_deliveries:
            item.skip = f"dead: {attempts} deliveries never completed (does the handler crash its process?)"
            return item
        pointer = parse_pointer(raw, self.keys, partition)
        if isinstance(pointer, str):
            item.skip = f"dead: {pointer}" if raw else "filtered"  # a trimmed entry has no fields
            return item
        target = raw.get(b"for")
        if (target is not None and target.decode() != self.o.group) or not self.o.event_filter.admits_type(pointer.type):
            item.skip = "filtered"
            return item
        ns, cid = raw.get(b"ns"), raw.get(b"cid")
        item.event = FeedEvent(
            type_=pointer.type, thread_id=pointer.thread, partition=partition, feed_id=entry,
            checkpoint_ns=ns.decode("utf-8", "surrogatepass") if ns is not None else None,
            checkpoint_id=cid.decode("utf-8", "surrogatepass") if cid is not None else None,
            log_id=pointer.log_id, log_key=self.keys.thread(pointer.thread).log,
            deliveries=attempts + 1, serde=self.serde, source=self.source)
        return item

    def _prefetch(self, items: list[Item]) -> Program[None]:
        """Read the batch's log entries in one pipeline: every event's with `prefetch`, the
        checkpoints' with `load_metadata` (or a metadata filter)."""
        metadata = self.o.load_metadata or bool(self.o.event_filter.metadata)
        wanted = [i.event for i in items if i.event is not None and i.event.type != ThreadDeleted.TYPE and (
            self.o.prefetch or (metadata and i.event.type == CheckpointSaved.TYPE))]
        if not wanted:
            return
        replies = yield from call([["XRANGE", e.log_key, e.log_id, e.log_id] for e in wanted], self.loads)
        for event, reply in zip(wanted, replies):
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
            unread = list(dict.fromkeys((e.log_key, link[0]) for e, link in wanted if (e.log_key, link[0]) not in known))
            if unread:
                replies = yield from call([["XRANGE", key, entry, entry] for key, entry in unread], self.loads)
                for at, reply in zip(unread, replies):
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
                    self.later.append(["HINCRBY", self.keys.subscriber_attempts(partition, self.o.group), stop.entry, 1])
                log.info("subscriber %s: %s failed (attempt %d): %r", self.name, stop.event, stop.attempts + 1, error)
                break
            stop.skip = f"dead: {type(error).__name__}: {error}"
            pos += 1
            self._settle(partition, stop, acks, stats)
        if acks:
            self.later.append(["XACK", self.keys.feed(partition), self.o.group, *acks])

    def _settle(self, partition: int, item: Item, acks: list[str], stats: SubscriberStats) -> None:
        if item.skip.startswith("dead"):
            stats.dead += 1
            self.later.append(self._dead_letter(partition, item))
        elif item.skip:
            stats.filtered += 1
        else:
            stats.handled += 1
        if item.attempts or item.recovering:
            self.later.append(["HDEL", self.keys.subscriber_attempts(partition, self.o.group), item.entry])
        acks.append(item.entry)

    def _dead_letter(self, partition: int, item: Item) -> Command:
        error = item.skip.removeprefix("dead: ")
        log.warning("subscriber group %s: dead letter %s of partition %d: %s", self.o.group, item.entry, partition, error)
        extra = {b"partition": b"%d" % partition, b"entry": item.entry.encode(), b"error": error.encode("utf-8", "replace"),
                 b"consumer": self.name.encode(),
                 b"attempts": b"%d" % (item.attempts + (1 if item.event is not None else 0))}
        flat = [x for kv in ({k: v for k, v in item.raw.items() if k != b"for"} | extra).items() for x in kv]
        return ["XADD", self.keys.subscriber_dead_letters(self.o.group), "*", *flat]

    def idle(self) -> Program[None]:
        """Wait for new entries on the owned feeds (XREAD BLOCK after each feed's tail), at
        most a poll interval, so that leases stay renewed. On Redis Cluster one XREAD can wait
        on one feed only (its keys must share a slot): with several feeds it pauses instead."""
        block = max(1, int(min(self.o.poll_ms, self.o.lease_ms / 3)))
        feeds = {self.keys.feed(p): self.tails[p] for p in sorted(self.owned) if p in self.tails}
        if not feeds or (self.cluster and len(feeds) > 1):
            yield Wait(block / 1000)
            return
        yield [["XREAD", "COUNT", 1, "BLOCK", block, "STREAMS", *feeds, *feeds.values()]]

    def _trim_if_due(self) -> None:
        """With `trim_every_s`, queue a trim (``trim.lua``) of each owned feed once per period: it
        drops the entries every group on the feed has acknowledged (see `streamsaver.feeds.admin`)."""
        if self.o.trim_every_s is None or time.monotonic() - self.trimmed_at < self.o.trim_every_s:
            return
        self.trimmed_at = time.monotonic()
        self.later += [TRIM.evalsha_args([self.keys.feed(p)], []) for p in sorted(self.owned)]

    def release(self) -> Program[None]:
        """Send pending acks and dead letters, give up every lease, leave the roster."""
        if self.keyspace is None:
            return
        leave = [roster_call(self.keys.subscribers(self.o.group), self.name, 0)] if self.joined else []
        commands = self.later + [self._lease(p, 0) for p in sorted(self.owned)] + leave
        self.later = []
        if commands:
            yield from call(commands, self.loads)
        self.owned.clear()
        self.joined, self.heartbeat_at = False, float("-inf")

    def once(self) -> Program[SubscriberStats]:
        """One balanced cycle (preparing first if needed)."""
        if self.keyspace is None:
            yield from self.prepare()
        return (yield from self.cycle(balance=True))

    def burst(self) -> Program[SubscriberStats]:
        """Prepare, then cycle over every partition whose lease is free until nothing is left
        to read, then release."""
        yield from self.prepare()
        total = SubscriberStats()
        while True:
            stats = yield from self.cycle(balance=False)
            total.add(stats)
            if stats.read == 0 and not self.later:
                break
        yield from self.release()
        return total

    def loop(self) -> Program[SubscriberStats]:
        """Prepare, then cycle with balancing until `stopping`; a Redis error is logged and
        retried with backoff. Releases everything at the end."""
        yield from self.prepare()
        total, backoff = SubscriberStats(), 0.05
        while not self.stopping:
            try:
                stats = yield from self.cycle(balance=True)
                total.add(stats)
                backoff = 0.05
                self._trim_if_due()
                if stats.failed and self.o.retry_ms and not self.stopping:
                    yield Wait(self.o.retry_ms / 1000)  # let a failing dependency recover
                elif stats.read == 0 and not self.later and not self.stopping:
                    yield from self.idle()
            except RedisError as exc:
                log.warning("subscriber %s: %s; retrying in %.2fs", self.name, exc, backoff)
                yield Wait(backoff)
                backoff = min(backoff * 2, 5.0)
        self.stopping = False
        try:
            yield from self.release()
        except RedisError as exc:
            log.warning("subscriber %s: could not release its leases (they expire): %s", self.name, exc)
        return total


def _fields(raw: Any) -> dict[bytes, bytes]:
    return dict(raw) if isinstance(raw, Mapping) else dict(zip(raw[::2], raw[1::2]))
