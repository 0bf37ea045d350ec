"""Replay: fold the logs of a domain through its projectors into its views. The log is the truth.

Replay reads each thread log in pages and applies every event through ``apply.lua``: the same
projectors and ops as the inline append, with the view position checked and recorded in the
same script. So replaying twice changes nothing, a replay stopped at any point resumes where it
stopped, and views rebuilt from empty keys equal the live ones.

    replayer = Replayer.open(redis.Redis.from_url(url), prefix="streamsaver")
    replayer.rebuild(["full"])            # drop the full view, fold every log into it again
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from redis import Redis

from projectors.domain import CHECKPOINTS
from streamsaver.drivers.wire import Command
from streamsaver.errors import InvalidInputError
from streamsaver.log.append import apply_batch_call
from streamsaver.log.domain import Domain
from streamsaver.log.keys import DEFAULT_PREFIX, Keyspace, ViewName
from streamsaver.ops.bulk import bulk_round_trip
from streamsaver.ops.inspection import deployment_keyspace, deployment_views

__all__ = ["ReplayStats", "Replayer"]

Progress = Callable[[int], None]

PER_LOG = 64
"""About how many entries of one log a replay round trip reads and applies in one script."""


@dataclass
class ReplayStats:
    """What a replay did: logs read, events read, (event, view) applications made."""

    threads: int = 0
    events: int = 0
    applied: int = 0


class Replayer:
    """Rebuilds views of one deployment from its thread logs (sync client).

    Args:
        client: a ``redis.Redis`` with ``decode_responses=False``.
        keyspace: the deployment's keys (see `open` to read them from Redis).
        page: events read and applied per round trip.
        target: where the views (and positions) are written and dropped; default `keyspace`.
            Pointers are log entry ids, so views folded into another keyspace of the same
            partition count are byte-identical to the live ones (`streamsaver.ops.verify`).
        domain: whose logs and views (default: checkpoints).
    """

    def __init__(
        self,
        client: Redis,
        keyspace: Keyspace,
        *,
        page: int = 500,
        target: Keyspace | None = None,
        domain: Domain = CHECKPOINTS,
    ) -> None:
        self.redis = client
        self.domain = domain
        self.keyspace = keyspace
        self.target = target or keyspace
        self.page = page

    @classmethod
    def open(
        cls,
        client: Redis,
        prefix: str = DEFAULT_PREFIX,
        *,
        page: int = 500,
        target: str | None = None,
        domain: Domain = CHECKPOINTS,
    ) -> Replayer:
        """A replayer for the deployment under `prefix`, writing under the prefix `target`
        (default: `prefix` itself).

        Raises:
            ConfigurationError: nothing was ever set up under `prefix`.
        """
        keyspace = deployment_keyspace(client, prefix)
        into = Keyspace(target, keyspace.partitions, scratch=True) if target is not None else None
        return cls(client, keyspace, page=page, target=into, domain=domain)

    def _scan(self, pattern: str, type_: str | None = None) -> Iterator[bytes]:
        yield from self.redis.scan_iter(match=pattern, count=1000, _type=type_)

    def thread_logs(self, partitions: Iterable[int] | None = None) -> Iterator[bytes]:
        """The key of every thread log of the deployment (of `partitions` only, when given)."""
        pattern = self.domain.logs_pattern
        if partitions is None:
            return self._scan(pattern(self.keyspace), "stream")
        return (log for partition in partitions for log in self._scan(pattern(self.keyspace, partition), "stream"))

    def replay_log(self, log: bytes | str, views: Sequence[ViewName], *, until: str = "+") -> ReplayStats:
        """Apply one thread log, oldest first, up to the entry id `until` (inclusive)."""
        return self._fold(iter([log]), views, width=1, until=until)

    def replay(
        self,
        views: Sequence[ViewName] | None = None,
        *,
        progress: Progress | None = None,
        partitions: Iterable[int] | None = None,
    ) -> ReplayStats:
        """Apply every thread log (of `partitions`, when given) to `views`; `progress(events)`
        is called after each round trip with the number of events it applied.

        Logs are folded several at a time: up to ``page // 64`` logs, ``page // (page // 64)``
        (about 64) entries of each per round trip. Each log's entries of a round trip are applied
        by one script, which writes each key they touch once, so the more of a log a script
        applies the less it writes (a thread of tens of steps is one script). `views` default
        to those the deployment keeps (`streamsaver.ops.inspection.deployment_views`)."""
        logs = self.thread_logs(partitions)
        return self._fold(logs, self._views(views), width=max(1, self.page // PER_LOG), progress=progress)

    def _views(self, views: Sequence[ViewName] | None) -> Sequence[ViewName]:
        return deployment_views(self.redis, self.keyspace.prefix, self.domain) if views is None else views

    def _fold(
        self,
        logs: Iterator[bytes | str],
        views: Sequence[ViewName],
        *,
        width: int,
        until: str = "+",
        progress: Progress | None = None,
    ) -> ReplayStats:
        """Fold `logs`, `width` at a time. The events of one log are applied in log order, the
        logs in any order.

        Reading and projecting a page overlaps with the server applying the previous one: one
        round trip of applies is in flight on its own connection (from one worker thread, so
        the applies keep their order) while this thread reads and projects the next page.
        """
        stats, count = ReplayStats(), max(1, self.page // width)
        cursors: list[list[Any]] = []  # [log, start] of the logs being read
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="streamsaver-replay") as applier:
            in_flight: Future[tuple[int, int]] | None = None
            while True:
                while len(cursors) < width and (log := next(logs, None)) is not None:
                    cursors.append([log, "-"])
                    stats.threads += 1
                if not cursors:
                    break
                calls, events = self._read_page(cursors, count, until, views)
                cursors = [cursor for cursor in cursors if cursor[1] is not None]
                if in_flight is not None:
                    self._applied(in_flight.result(), stats, progress)
                in_flight = applier.submit(self._apply, calls, events) if calls else None
            if in_flight is not None:
                self._applied(in_flight.result(), stats, progress)
        return stats

    def _read_page(
        self, cursors: list[list[Any]], count: int, until: str, views: Sequence[ViewName]
    ) -> tuple[list[Command], int]:
        """Read the next entries of each log in `cursors` (one round trip), advance the cursors
        (None when a log is exhausted); returns one batched apply per log read, and the number
        of events they carry."""
        reads: list[Command] = [["XRANGE", log, start, until, "COUNT", count] for log, start in cursors]
        calls: list[Command] = []
        events, decode = 0, self.domain.decode
        for cursor, entries in zip(cursors, bulk_round_trip(self.redis, reads), strict=True):
            if entries:
                ids = [raw_id.decode() for raw_id, _ in entries]
                logged = [(decode(e[1], i, payloads=False), i) for i, e in zip(ids, entries, strict=True)]
                calls.append(apply_batch_call(self.domain, logged, self.target, views))
                events += len(logged)
            cursor[1] = "(" + entries[-1][0].decode() if len(entries) == count else None
        return calls, events

    def _apply(self, calls: list[Command], events: int) -> tuple[int, int]:
        applied = bulk_round_trip(self.redis, calls)
        return events, sum(int(n) for n in applied)

    @staticmethod
    def _applied(done: tuple[int, int], stats: ReplayStats, progress: Progress | None) -> None:
        events, applied = done
        stats.events += events
        stats.applied += applied
        if progress is not None:
            progress(events)

    def drop(self, views: Sequence[ViewName]) -> int:
        """Delete every key of `views` and their recorded positions; returns keys deleted."""
        deleted = 0
        for view in views:
            batch: list[bytes] = []
            for key in self._scan(self.target.view_pattern(view)):
                batch.append(key)
                if len(batch) >= 500:
                    deleted += int(self.redis.unlink(*batch))
                    batch = []
            if batch:
                deleted += int(self.redis.unlink(*batch))
        for positions in self._scan(self.target.positions_pattern(self.domain.positions_family), "hash"):
            self.redis.hdel(positions, *views)
        return deleted

    def replay_thread(
        self, thread_id: str, views: Sequence[ViewName] | None = None, *, keep: bool = False,
        progress: Progress | None = None,
    ) -> ReplayStats:
        """Fold one thread's log into `views` (default: those the deployment keeps): its view
        keys and positions dropped first, unless `keep` (then only what the views lack is
        applied). Other threads are not touched.

        Raises:
            InvalidInputError: the thread has no log.
        """
        views = self._views(views)
        log = self.keyspace.thread(thread_id).log
        if not self.redis.exists(log):
            raise InvalidInputError(f"thread {thread_id!r} has no log under {self.keyspace.prefix!r}")
        if not keep:
            self._drop_thread(thread_id, views)
        return self._fold(iter([log]), views, width=1, progress=progress)

    def _drop_thread(self, thread_id: str, views: Sequence[ViewName]) -> None:
        """Delete one thread's keys of `views` (``P:<view>:<kind>:T:t`` and the per-namespace
        and per-checkpoint keys under it) and its positions of those views."""
        keys = self.target.thread(thread_id)
        tail = f"{keys.slot_tag}:{keys.escaped_thread}"
        for view in views:
            stem = f"{self.target.prefix}:{view}:"
            found = {key for pattern in (f"{stem}*:{tail}", f"{stem}*:{tail}:*") for key in self._scan(pattern)}
            # `*` may span colons: keep the keys whose kind (one word) is followed by this thread.
            mine = [key for key in found if _after_kind(key.decode()[len(stem):]) in (tail, f"{tail}:")]
            if mine:
                self.redis.unlink(*mine)
        self.redis.hdel(keys.positions, *views)

    def rebuild(self, views: Sequence[ViewName] | None = None, *, progress: Progress | None = None) -> ReplayStats:
        """Drop `views` (default: those the deployment keeps) and fold every thread log into
        them again."""
        views = self._views(views)
        self.drop(views)
        return self.replay(views, progress=progress)


def _after_kind(rest: str) -> str:
    """``T:t`` (a thread's key of one kind) or ``T:t:`` (a key under it) from ``kind:T:t...``."""
    after = rest.partition(":")[2]
    tag, _, remainder = after.partition(":")
    thread, colon, _ = remainder.partition(":")
    return f"{tag}:{thread}{colon}"
