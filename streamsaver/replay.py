"""Replay: fold thread logs through the projectors into the views. The log is the truth.

Replay reads each thread log in pages and applies every event through ``apply.lua``: the same
projectors and ops as the inline append, with the view position checked and recorded in the
same script. So replaying twice changes nothing, a replay stopped at any point resumes where it
stopped, and views rebuilt from empty keys equal the live ones.

    replayer = Replayer.open(redis.Redis.from_url(url), prefix="streamsaver")
    replayer.rebuild(["full"])            # drop the full view, fold every log into it again
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from redis import Redis

from streamsaver.errors import ConfigurationError
from streamsaver.events import from_fields
from streamsaver.keys import DEFAULT_PREFIX, Keyspace, ViewName
from streamsaver.saver.append import apply_call
from streamsaver.saver.core import LOAD_SCRIPTS, Command, enqueue, failed_reply

__all__ = ["ReplayStats", "Replayer"]

Progress = Callable[[int], None]


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
    """

    def __init__(self, client: Redis, keyspace: Keyspace, *, page: int = 500) -> None:
        self.redis = client
        self._xrange: Callable[..., Any] = client.xrange
        self.keyspace = keyspace
        self.page = page

    @classmethod
    def open(cls, client: Redis, prefix: str = DEFAULT_PREFIX, *, page: int = 500) -> Replayer:
        """A replayer for the deployment under `prefix`.

        Raises:
            ConfigurationError: nothing was ever set up under `prefix`.
        """
        partitions = client.hget(Keyspace(prefix).meta, "partitions")
        if partitions is None:
            raise ConfigurationError(f"no streamsaver deployment under prefix {prefix!r}")
        return cls(client, Keyspace(prefix, int(partitions)), page=page)

    def _scan(self, pattern: str, type_: str | None = None) -> Iterator[bytes]:
        yield from self.redis.scan_iter(match=pattern, count=1000, _type=type_)

    def thread_logs(self) -> Iterator[bytes]:
        """The key of every thread log of the deployment."""
        return self._scan(f"{self.keyspace.prefix}:log:*", "stream")

    def _send(self, commands: Sequence[Command]) -> None:
        for attempt in (1, 2):
            pipe = self.redis.pipeline(transaction=False)
            enqueue(pipe, commands)
            error = failed_reply(pipe.execute(raise_on_error=False))
            if error is None:
                return
            if attempt == 2 or "NOSCRIPT" not in str(error):
                raise error
            pipe = self.redis.pipeline(transaction=False)
            enqueue(pipe, LOAD_SCRIPTS)
            pipe.execute()

    def replay_log(self, log: bytes | str, views: Sequence[ViewName], *, until: str = "+") -> ReplayStats:
        """Apply one thread log, oldest first, up to the entry id `until` (inclusive)."""
        stats, start = ReplayStats(threads=1), "-"
        while True:
            entries: list[tuple[bytes, dict[bytes, bytes]]] = self._xrange(log, start, until, count=self.page)
            if not entries:
                return stats
            calls = []
            for raw_id, fields in entries:
                entry_id = raw_id.decode()
                calls.append(apply_call(from_fields(fields, entry_id), entry_id, self.keyspace, views))
            self._send(calls)
            stats.events += len(entries)
            start = "(" + entries[-1][0].decode()

    def replay(self, views: Sequence[ViewName], *, progress: Progress | None = None) -> ReplayStats:
        """Apply every thread log to `views`; `progress(events)` is called after each log
        with the number of events it held."""
        total = ReplayStats()
        for log in self.thread_logs():
            stats = self.replay_log(log, views)
            total.threads += 1
            total.events += stats.events
            if progress is not None:
                progress(stats.events)
        return total

    def drop(self, views: Sequence[ViewName]) -> int:
        """Delete every key of `views` and their recorded positions; returns keys deleted."""
        deleted = 0
        for view in views:
            batch: list[bytes] = []
            for key in self._scan(self.keyspace.view_pattern(view)):
                batch.append(key)
                if len(batch) >= 500:
                    deleted += int(self.redis.unlink(*batch))
                    batch = []
            if batch:
                deleted += int(self.redis.unlink(*batch))
        for positions in self._scan(f"{self.keyspace.prefix}:pos:*", "hash"):
            self.redis.hdel(positions, *views)
        return deleted

    def rebuild(self, views: Sequence[ViewName], *, progress: Progress | None = None) -> ReplayStats:
        """Drop `views` and fold every thread log into them again."""
        self.drop(views)
        return self.replay(views, progress=progress)
