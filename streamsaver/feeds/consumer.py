"""The partition-consumer core, without I/O: what a subscriber and a projector worker share.

A consumer reads partition feeds through consumer groups with one owner per unit of work (a
`Lane`: one group on one partition feed), so that a partition is handled in feed order. This
core holds the ownership loop once: find the deployment and create the groups (`prepare`),
heartbeat the rosters and take this consumer's share, renew or take each lease and read its
entries in one ``lease.lua`` call, release what is no longer ours, queue acks and dead letters
for the next round trip (`later`), wait for new entries, retry with backoff, release at the end.

A kind of consumer subclasses `PartitionConsumer` and brings only its own part: its units
(`units`, `lane`), what it sets up (`_setup`), and what it does with the entries a cycle read
(`_consume`: deliver to a handler, or project into views). Programs are generators (see
`streamsaver.feeds.ownership`); the sync and async shells only move bytes.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Generic, TypeVar

from redis.exceptions import RedisError

from streamsaver.errors import ConfigurationError
from streamsaver.feeds.consumer_data import (
    ConsumerOptions,
    ConsumerStats,
    Lane,
    Taken,
    Unit,
    assignment,
)
from streamsaver.feeds.ownership import Program, Wait, call, lease_call, roster_call
from streamsaver.log.deployment import keyspace_of, partitions_request
from streamsaver.log.keys import Keyspace
from streamsaver.log.routing import Command, Step, Topology
from streamsaver.log.setup import read_topology

__all__ = ["PartitionConsumer"]

S = TypeVar("S", bound=ConsumerStats)
Batch = list[tuple[Unit, list[Taken]]]


class PartitionConsumer(ABC, Generic[Unit, S]):
    """The ownership loop over a consumer's units, as programs a sync or async shell drives.

    Args:
        prefix: the deployment's key prefix.
        options: the settings every consumer has (checked by the subclass).
        stats: the counts this kind of consumer keeps.
        loads: the ``SCRIPT LOAD`` commands to resend on NOSCRIPT (until `_setup` knows the
            deployment's nodes).
        cluster: whether the client is a Redis Cluster client.
    """

    kind = "consumer"
    """How messages name this kind of consumer."""
    log = logging.getLogger("streamsaver.feeds")
    heartbeat_s = 0.0
    """The least time between two roster heartbeats (0: every balanced cycle)."""

    def __init__(self, prefix: str, options: ConsumerOptions, stats: type[S], loads: Sequence[Step],
                 cluster: bool = False) -> None:
        self.prefix, self.options, self.stats_type, self.cluster = prefix, options, stats, cluster
        self.name = options.name
        self.loads: list[Step] = [*loads]
        self.keyspace: Keyspace | None = None
        self.mine: list[Unit] = []
        self.owned: set[Unit] = set()
        self.later: list[Command] = []
        """Acks, dead letters and group repairs, sent with the next round trip. Losing them
        with a failed pipeline is harmless: their entries stay pending and are read again."""
        self.tails: dict[int, str] = {}
        self.heartbeat_at = float("-inf")
        self.joined = False
        self.stopping = False
        self.running: S = stats()
        """The counts of the `burst` or `loop` under way (read by status reports)."""

    @property
    def keys(self) -> Keyspace:
        """The deployment's keyspace, known once `prepare` has run."""
        if self.keyspace is None:
            raise ConfigurationError(f"the {self.kind} is not prepared yet")
        return self.keyspace

    def feed(self, partition: int) -> str:
        """The feed this consumer reads on `partition` (the thread logs' partition feed)."""
        return self.keys.feed(partition)

    @abstractmethod
    def units(self) -> list[Unit]:
        """Every unit of the deployment this consumer may own, in reading order."""

    @abstractmethod
    def lane(self, unit: Unit) -> Lane:
        """The keys of `unit`."""

    @abstractmethod
    def _setup(self, topology: Topology | None, probed: list[Any]) -> list[Step]:
        """Check what `_probe` read and return the commands to send before the groups are
        created (script loads, indexes); set `loads` for the deployment's nodes."""

    def _probe(self, topology: Topology | None) -> list[Step]:
        """Commands sent with the partition-count read in `prepare` (their replies go to `_setup`)."""
        return []

    def _check_setup(self, replies: list[Any]) -> None:
        """Check the replies to `_setup`'s commands (script loads are fine as they are)."""

    @abstractmethod
    def _consume(self, batch: Batch[Unit], started: float, stats: S) -> Program[RedisError | None]:
        """Handle the entries a cycle read (`started`: monotonic time of the lease renewal),
        queue their acks and dead letters; return an error that stopped a unit, to raise once
        every unit is settled."""

    def call(self, commands: Sequence[Step]) -> Program[list[Any]]:
        """Send `commands` in one pipeline; on NOSCRIPT load the scripts and resend those."""
        return (yield from call(commands, self.loads))

    def prepare(self) -> Program[None]:
        """Find the deployment, set up what this kind of consumer needs, and create the
        consumer groups (at the `start` option) that do not exist yet.

        Raises:
            ConfigurationError: no deployment under the prefix, a unit out of range, or the
                server refused a step.
        """
        topology = yield from read_topology(self.prefix, self.cluster)
        partitions, *probed = yield from self.call([partitions_request(self.prefix), *self._probe(topology)])
        self.keyspace = keyspace_of(self.prefix, partitions)
        try:
            before = self._setup(topology, probed)
        except ConfigurationError:
            self.keyspace = None  # not prepared: `once` prepares again
            raise
        units = self.units()
        replies = yield from self.call([*before, *(self._create_group(u, self.options.start) for u in units)])
        self._check_setup(replies[: len(before)])
        for unit, reply in zip(units, replies[len(before):], strict=True):
            if isinstance(reply, Exception) and "BUSYGROUP" not in str(reply):
                group = self.lane(unit).group
                raise ConfigurationError(f"cannot create consumer group {group!r}: {reply}") from reply

    def _create_group(self, unit: Unit, start: str) -> Command:
        lane = self.lane(unit)
        return ["XGROUP", "CREATE", self.feed(lane.partition), lane.group, start, "MKSTREAM"]

    def _lease(self, unit: Unit, count: int) -> Command:
        lane = self.lane(unit)
        return lease_call(lane.lease, self.feed(lane.partition), self.name, self.options.lease_ms,
                          lane.group, count, lane.attempts)

    def _ack(self, unit: Unit, entries: list[str]) -> None:
        lane = self.lane(unit)
        self.later.append(["XACK", self.feed(lane.partition), lane.group, *entries])

    def _heartbeat(self) -> Program[None]:
        """Renew this consumer in its rosters (at most every `heartbeat_s`) and take its share."""
        now = time.monotonic()
        if now - self.heartbeat_at < self.heartbeat_s:
            return
        units = self.units()
        lanes = {u: self.lane(u) for u in units}
        rosters = list(dict.fromkeys(lane.roster for lane in lanes.values()))
        replies = yield from self.call([roster_call(r, self.name, self.options.lease_ms) for r in rosters])
        self.joined = True
        if errors := [r for r in replies if isinstance(r, Exception)]:
            raise errors[0]
        self.heartbeat_at = now
        live = {roster: [n.decode() for n in names] for roster, names in zip(rosters, replies, strict=True)}
        self.mine = assignment(units, lanes, live, self.name)

    def cycle(self, balance: bool) -> Program[S]:
        """One batch on every unit this consumer owns or can take; with `balance`, first
        heartbeat and keep only this consumer's share.

        Raises:
            RedisError: a failed pipeline or read, or a failure that stopped a unit.
        """
        stats = self.stats_type(cycles=1)
        if balance:
            yield from self._heartbeat()
        targets = self.mine if balance else self.units()
        release = [u for u in sorted(self.owned) if u not in targets]
        later, self.later = self.later + [self._lease(u, 0) for u in release], []
        started = time.monotonic()
        replies = yield from self.call(later + [self._lease(u, self.options.batch) for u in targets])
        if errors := [r for r in replies[: len(later)] if isinstance(r, Exception) and "BUSYGROUP" not in str(r)]:
            raise errors[0]
        self.owned.difference_update(release)
        batch, failed = self._read(targets, replies[len(later):], stats)
        if error := (yield from self._consume(batch, started, stats)) or failed:
            raise error
        return stats

    def _read(self, units: list[Unit], replies: list[Any], stats: S) -> tuple[Batch[Unit], RedisError | None]:
        """The entries each unit read, and the first failed read (a lost consumer group is
        created again, from the feed's start, before the unit's next read)."""
        batch: Batch[Unit] = []
        failed: RedisError | None = None
        for unit, reply in zip(units, replies, strict=True):
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
            claimed, entries, *rest = reply
            stats.claimed += int(claimed)
            tail, attempts = rest if rest else (None, [])
            if tail:
                self.tails[self.lane(unit).partition] = tail.decode()
            tries = [int(a) for a in attempts] if attempts else [0] * len(entries)
            taken = [Taken(e.decode(), dict(zip(flat[::2], flat[1::2], strict=True)) if flat else {}, n, bool(attempts))
                     for (e, flat), n in zip(entries, tries, strict=True)]
            if taken:
                batch.append((unit, taken))
        return batch, failed

    def idle(self) -> Program[None]:
        """Wait for new entries on the owned feeds (XREAD BLOCK after each feed's tail), at
        most `ConsumerOptions.idle_ms`, so that leases stay renewed. On Redis Cluster one XREAD
        can wait on one feed only (its keys must share a slot): with several feeds it pauses."""
        block = self.options.idle_ms
        partitions = sorted({self.lane(u).partition for u in self.owned})
        feeds = {self.feed(p): self.tails[p] for p in partitions if p in self.tails}
        if not feeds or (self.cluster and len(feeds) > 1):
            yield Wait(block / 1000)
            return
        yield [["XREAD", "COUNT", 1, "BLOCK", block, "STREAMS", *feeds, *feeds.values()]]

    def _after(self, stats: S) -> Program[None]:
        """What `loop` does after a cycle: wait for new entries when it read nothing."""
        if stats.read == 0 and not self.later and not self.stopping:
            yield from self.idle()

    def release(self) -> Program[None]:
        """Send pending acks and dead letters, give up every lease, leave the rosters."""
        if self.keyspace is None:
            return
        rosters = dict.fromkeys(self.lane(u).roster for u in self.units()) if self.joined else {}
        commands = self.later + [self._lease(u, 0) for u in sorted(self.owned)]
        commands += [roster_call(r, self.name, 0) for r in rosters]
        self.later = []
        if commands:
            yield from self.call(commands)
        self.owned.clear()
        self.joined, self.heartbeat_at = False, float("-inf")

    def once(self) -> Program[S]:
        """One balanced cycle (preparing first if needed)."""
        if self.keyspace is None:
            yield from self.prepare()
        return (yield from self.cycle(balance=True))

    def burst(self) -> Program[S]:
        """Prepare, then cycle over every unit whose lease is free until nothing is left to
        read, then release. Units another consumer holds are counted in ``busy`` per cycle."""
        yield from self.prepare()
        total = self.running = self.stats_type()
        while True:
            stats = yield from self.cycle(balance=False)
            total.add(stats)
            if stats.read == 0 and not self.later:
                break
        yield from self.release()
        return total

    def loop(self) -> Program[S]:
        """Prepare, then cycle with balancing until `stopping`; a Redis error is logged and
        retried with backoff. Releases everything at the end."""
        yield from self.prepare()
        total, backoff = self.stats_type(), 0.05
        self.running = total
        while not self.stopping:
            try:
                stats = yield from self.cycle(balance=True)
                total.add(stats)
                backoff = 0.05
                yield from self._after(stats)
            except RedisError as exc:
                self.log.warning("%s %s: %s; retrying in %.2fs", self.kind, self.name, exc, backoff)
                yield Wait(backoff)
                backoff = min(backoff * 2, 5.0)
        self.stopping = False
        try:
            yield from self.release()
        except RedisError as exc:
            self.log.warning("%s %s: could not release its leases (they expire): %s", self.kind, self.name, exc)
        return total
