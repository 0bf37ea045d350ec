"""The projector worker: keeps views current from the partition feeds, off the write path.

A saver keeps inline only the views named in its ``projections``; a `ProjectorWorker` keeps the
others (and builds a new view for an existing deployment, see ``docs/worker.md``). Per view it
reads each partition feed through one consumer group (``projector:<view>``); for each pointer it
reads the log entry (``XRANGE log id id``), decodes it and applies it with `apply_call`, the
same script and projectors as replay, then acks. Per-thread positions, recorded in the same
script as the change, make a second delivery a no-op.

* **Start id.** A missing group is created at ``start``: ``"0"`` (default) folds every pointer
  the feed holds, so a worker started late misses nothing; ``"$"`` follows only what comes next,
  for a view backfilled by `streamsaver.ops.replay` right after the groups were made (`prepare`).
* **One owner per partition.** A lease ``P:lease:{pN}:<view>`` (``SET NX PX``) names the owner;
  ``scripts/lease.lua`` renews it and reads the feed in one script, so only the owner ever takes
  entries from the group. Taking a free or expired lease first claims every pending entry of the
  group (XAUTOCLAIM), and the owner reads its pending entries before new ones: nothing a dead
  owner read is skipped. Live workers heartbeat a roster (``scripts/roster.lua``, server time);
  partition ``p`` belongs to the ``p mod n``-th of the ``n`` live workers in name order, and a
  worker releases what is no longer its share.
* **Per-thread order.** An owner applies its partition in feed order (log order per thread).
  An owner whose lease lapsed mid-batch may still finish it while the next owner starts over
  from the claimed entries; both apply in feed order and the positions skip what was applied,
  so nothing is applied out of order. An apply refused by a transient error (OOM, LOADING, ...)
  stops its partition's batch there and is retried first next cycle.
* **Poison.** A malformed pointer or event, or an apply the server rejects, is logged and moved
  (pointer fields plus ``feed``, ``entry``, ``error``, ``worker``) to ``P:projector:dead:<view>``,
  acked, and the partition goes on. Its thread's later events still apply; after fixing the
  cause, rebuild the view (``streamsaver replay --view <view>``).
* **Gone entries.** A pointer whose log entry was erased (the thread was deleted) is acked with
  nothing to apply; a ``ThreadDeleted`` pointer is applied from the pointer itself (the append
  erases the log), which purges the thread from the view.

Decisions live in `WorkerCore` (the projection) and the partition-consumer core it shares with
the subscribers (`streamsaver.feeds.consumer`: leases, rosters, reads, acks, release); their
programs are generators that yield pipelines (lists of commands) or `Wait` and receive replies;
`ProjectorWorker` only drives them, with a sync or a ``redis.asyncio`` client. Acks and dead
letters ride on the partition's next read pipeline, so a steady batch costs three round trips:
read, log entries, applies. An idle worker blocks on ``XREAD`` after its feeds' last entries
(at most ``poll_ms``), so a new pointer is applied at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from projectors.domain import CHECKPOINTS
from streamsaver.drivers.cluster import is_cluster
from streamsaver.drivers.programs import CoreRunner
from streamsaver.feeds.worker_core import WorkerCore, default_name
from streamsaver.feeds.worker_units import WorkerStats
from streamsaver.log.domain import Domain

__all__ = ["ProjectorWorker", "WorkerStats"]


class ProjectorWorker(CoreRunner[WorkerStats]):
    """Keeps `views` of the deployment under `prefix` current from its partition feeds.

    Args:
        client: a ``redis.Redis`` (for `run`, `run_burst`, `run_once`, `release`) or a
            ``redis.asyncio.Redis`` (for the ``async_`` twins), or their ``RedisCluster``
            counterparts, with ``decode_responses=False``.
        prefix: the deployment's key prefix.
        views: the views to keep, e.g. ``["shallow"]``.
        name: this worker's name, unique among live workers (default: host-pid-random).
        lease_ms: lease time-to-live; a dead worker's partitions move after this long.
        batch: pointers read per partition per cycle (one pipelined round trip per step).
        start: where a consumer group starts when this worker creates it: ``"0"`` or ``"$"``.
        poll_ms: the longest wait for new pointers after a cycle that found nothing.
        domain: the domain whose views the worker keeps (the checkpoints by default).

    Raises:
        ConfigurationError: a client that decodes responses.
        InvalidInputError: a bad view or option.
    """

    core: WorkerCore

    def __init__(self, client: Any, prefix: str, views: Sequence[str], *, name: str | None = None,
                 lease_ms: int = 10_000, batch: int = 100, start: str = "0", poll_ms: int = 100,
                 domain: Domain = CHECKPOINTS) -> None:
        super().__init__(client)
        self.core = WorkerCore(prefix, views, name or default_name(), lease_ms, batch, start, poll_ms,
                               cluster=is_cluster(client), domain=domain)

    @property
    def name(self) -> str:
        """The worker's name: its lease value and consumer name."""
        return self.core.name

    def _request_stop(self) -> None:
        self.core.stopping = True

    def _stopping(self) -> bool:
        return self.core.stopping
