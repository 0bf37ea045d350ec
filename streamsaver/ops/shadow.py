"""Shadow rebuild: build a view beside the live one, then swap it in thread by thread.

`rebuild` drops the views and folds the logs into them while readers watch them fill. A shadow
rebuild instead folds every log into shadow keys under ``P:shadow:`` (the same projectors and
apply path, through `Replayer` with a shadow target; no index covers them), and then swaps each
thread in with ``swap.lua``: one script per thread that checks the shadow has applied the
thread's last log entry, deletes the thread's live view keys and renames the shadow keys into
their place. Writes that landed during the build leave the shadow behind; such a thread is
caught up from its log and swapped again. So:

* a reader sees, for every thread, either its old view or its rebuilt one, whole, never a
  thread half folded; the live index indexes each renamed document as it moves, so it never
  holds half a thread either (a listing across threads during the swap may see some threads
  old and some new, each complete);
* the live view stays readable for the whole build, which is most of the time;
* writers go on: the swap of a thread and an append to it are both atomic scripts on the
  thread's partition, one after the other;
* a shadow rebuild killed at any moment leaves the live view whole (threads swapped or not)
  and the shadow keys behind; running it again drops them first and ends identical.

    ShadowRebuild.open(redis.Redis.from_url(url), "streamsaver").run(["full"])
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from redis import Redis

from projectors.domain import CHECKPOINTS
from streamsaver.drivers.sync import round_trip
from streamsaver.drivers.wire import Command
from streamsaver.errors import StreamSaverError
from streamsaver.log.domain import Domain
from streamsaver.log.keys import Keyspace, ViewName, nested_prefix
from streamsaver.ops.inspection import deployment_keyspace
from streamsaver.ops.replay import Replayer
from streamsaver.scripts import SWAP

__all__ = ["SHADOW", "ShadowRebuild", "ShadowStats", "SwapStalled"]

SHADOW = "shadow"
"""The word after the deployment's prefix under which shadow views are built."""

Progress = Callable[[int], None]


class SwapStalled(StreamSaverError):
    """A thread was written to faster than its shadow could be caught up and swapped."""


@dataclass
class ShadowStats:
    """What a shadow rebuild did: events folded into the shadow, threads swapped in, and
    threads that had to be caught up (written to during the build) before their swap."""

    events: int = 0
    swapped: int = 0
    caught_up: int = 0


class ShadowRebuild:
    """Rebuilds views of one deployment in shadow keys and swaps them in (sync client).

    Args:
        client: a ``redis.Redis`` with ``decode_responses=False``.
        keyspace: the deployment's keys.
        page: events per round trip while folding; threads per round trip while swapping.
        attempts: catch-ups tried per thread before giving up with `SwapStalled`.
        domain: whose logs and views (default: checkpoints).
    """

    def __init__(
        self, client: Redis, keyspace: Keyspace, *, page: int = 500, attempts: int = 20, domain: Domain = CHECKPOINTS
    ) -> None:
        self.redis = client
        self.live = keyspace
        self.domain = domain
        self.shadow = Keyspace(nested_prefix(keyspace.prefix, SHADOW), keyspace.partitions, scratch=True)
        self.replayer = Replayer(client, keyspace, page=page, target=self.shadow, domain=domain)
        self.page = page
        self.attempts = attempts

    @classmethod
    def open(cls, client: Redis, prefix: str, *, page: int = 500, domain: Domain = CHECKPOINTS) -> ShadowRebuild:
        """A shadow rebuild of the deployment under `prefix`.

        Raises:
            ConfigurationError: nothing was ever set up under `prefix`.
        """
        return cls(client, deployment_keyspace(client, prefix), page=page, domain=domain)

    def run(
        self, views: Sequence[ViewName], *, progress: Progress | None = None, swapping: Progress | None = None
    ) -> ShadowStats:
        """Drop leftover shadow keys, fold every log into the shadow, then swap every thread in.

        `progress(events)` follows the fold, `swapping(threads)` the swap.

        Raises:
            SwapStalled: a thread kept outrunning its catch-up (the views stay whole).
        """
        stats = self.fold(views, progress=progress)
        for view in views:
            self.swap(view, stats, progress=swapping)
        return stats

    def fold(self, views: Sequence[ViewName], *, progress: Progress | None = None) -> ShadowStats:
        """Drop leftover shadow keys of `views` and fold every log into the shadow."""
        self.replayer.drop(views)
        return ShadowStats(events=self.replayer.replay(views, progress=progress).events)

    def swap(self, view: ViewName, stats: ShadowStats, *, progress: Progress | None = None) -> None:
        """Swap every thread's shadow `view` in, catching up the threads written since."""
        batch: list[str] = []
        for thread_id in self.threads():
            batch.append(thread_id)
            if len(batch) >= self.page:
                self._swap_batch(view, batch, stats, progress)
                batch = []
        self._swap_batch(view, batch, stats, progress)

    def _swap_batch(self, view: ViewName, threads: list[str], stats: ShadowStats, progress: Progress | None) -> None:
        pending = threads
        for _ in range(self.attempts):
            if not pending:
                return
            replies = round_trip(self.redis, [self._swap_call(view, t) for t in pending]) if pending else []
            behind = [t for t, swapped in zip(pending, replies, strict=True) if int(swapped) == 0]
            stats.swapped += len(pending) - len(behind)
            if progress is not None:
                progress(len(pending) - len(behind))
            for thread_id in behind:
                self.replayer.replay_log(self.live.thread(thread_id).log, [view])
            stats.caught_up += len(behind)
            pending = behind
        if pending:
            raise SwapStalled(
                f"{len(pending)} threads outran their catch-up {self.attempts} times, e.g. {pending[0]!r}"
            )

    def _swap_call(self, view: ViewName, thread_id: str) -> Command:
        live, shadow = self.live.thread(thread_id), self.shadow.thread(thread_id)
        stems = self.domain.erase_stems
        args: list[str | bytes | int] = [view, *stems(view, thread_id, self.live), *stems(view, thread_id, self.shadow)]
        return SWAP.evalsha_args([live.log, live.positions, shadow.positions], args)

    def threads(self) -> Iterator[str]:
        """Every thread with a log, a live position or a shadow position, once each."""
        seen: set[str] = set()
        scans = (
            (self.live, self.domain.logs_pattern(self.live)),
            (self.live, self.live.positions_pattern()),
            (self.shadow, self.shadow.positions_pattern()),
        )
        for keyspace, pattern in scans:
            for key in self.redis.scan_iter(match=pattern, count=1000):
                thread_id = keyspace.thread_of(key)
                if thread_id not in seen:
                    seen.add(thread_id)
                    yield thread_id

