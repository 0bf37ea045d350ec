"""`SaverCore`: the options of a saver and what its calls send and read, without I/O.

The programs of `streamsaver.checkpoints.programs` sequence these requests and replies; the
savers only choose the driver that runs them.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from projectors.domain import CHECKPOINTS
from streamsaver.checkpoints import (
    append,
    cached_reads,
    history,
    listing,
    maintenance,
    reads,
    ttl,
    windows,
)
from streamsaver.checkpoints import durability as durability_
from streamsaver.checkpoints.delta_plan import BASE_REFUSED, DeltaMemory, PutPlan
from streamsaver.checkpoints.entry_cache import DEFAULT_READ_CACHE_BYTES, EntryCache
from streamsaver.errors import ConfigurationError, InvalidInputError
from streamsaver.log import setup
from streamsaver.log.events import CheckpointSaved
from streamsaver.log.keys import DEFAULT_PREFIX, Keyspace, ViewName
from streamsaver.log.program import Program, Refused
from streamsaver.log.routing import Command, IndexTarget, Step, Topology, index_targets
from streamsaver.log.serde import SafeSerializer
from streamsaver.scripts import ALL

__all__ = ["LOAD_SCRIPTS", "Command", "CoreBinding", "PutCall", "SaverCore"]

LOAD_SCRIPTS: list[Command] = [["SCRIPT", "LOAD", s.source] for s in ALL]

def _saved_config(event: CheckpointSaved) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": event.thread_id,
            "checkpoint_ns": event.checkpoint_ns,
            "checkpoint_id": event.checkpoint_id,
        }
    }


@dataclass
class PutCall:
    """One `put` in flight: its append, the config it returns, its event and delta plan."""

    command: Command
    saved: RunnableConfig
    event: CheckpointSaved
    plan: PutPlan | None


@dataclass
class SaverCore:
    """Options of one saver and the pure logic behind each of its methods."""

    serde: SerializerProtocol
    view: ViewName = "full"
    projections: tuple[ViewName, ...] = ("full", "shallow")
    """The views each append projects (after `setup`: the deployment's recorded inline views)."""
    prefix: str = DEFAULT_PREFIX
    partitions: int | None = None
    keyspace: Keyspace | None = None
    durability: durability_.Durability = "memory"
    durability_timeout_ms: int = 5000
    ttl_ms: int = 0
    refresh_on_read: bool = False
    compression: str | None = "zstd"
    deltas: bool = True
    cluster: bool = False
    allow_eviction: bool = False
    topology: Topology | None = None
    window_hints: windows.WindowHints = field(default_factory=windows.WindowHints)
    skipped: listing.Skipped = field(default_factory=listing.Skipped)
    """Checkpoints this saver's listings across threads left out, unreadable (`listing.Skipped`)."""
    memory: DeltaMemory = field(default_factory=DeltaMemory, repr=False, compare=False)
    entries: EntryCache | None = field(default=None, repr=False, compare=False)
    """The read cache (`entry_cache`); None: reads ship every entry they need."""
    adopts: bool = False
    """Whether the saver declared no projections: `setup` adopts the deployment's recorded views
    (`streamsaver.checkpoints.inline_views.adopt`)."""

    @classmethod
    def configure(
        cls,
        serde: SerializerProtocol,
        *,
        view: str,
        projections: Iterable[str] | None,
        prefix: str,
        partitions: int | None,
        durability: str = "memory",
        durability_timeout_ms: int = 5000,
        default_ttl: float | None = None,
        refresh_on_read: bool = False,
        compression: str | None = "zstd",
        cluster: bool = False,
        deltas: bool = True,
        allow_eviction: bool = False,
        read_cache_bytes: int = DEFAULT_READ_CACHE_BYTES,
    ) -> SaverCore:
        """Validate saver options.

        Raises:
            InvalidInputError: an unknown view, durability or compression, a read view that is
                not projected, a TTL that is not a positive number of minutes, `partitions`
                not None nor an int in 1..16384 (0 meant the default, a bool or float passed),
                or `read_cache_bytes` not an int >= 0.
            ConfigurationError: a bad prefix.
        """
        read_view = append.view_of(view)
        if partitions is not None and (
            isinstance(partitions, bool) or not isinstance(partitions, int) or not 1 <= partitions <= 16384
        ):
            raise InvalidInputError(f"partitions must be None or an int in 1..16384, not {partitions!r}")
        Keyspace(prefix, partitions or 1)
        level = durability_.durability_of(durability, durability_timeout_ms)
        views = append.projections_of((read_view,) if projections is None else projections, read_view)
        if compression not in ("zstd", None):
            raise InvalidInputError(f'compression must be "zstd" or None, not {compression!r}')
        if isinstance(read_cache_bytes, bool) or not isinstance(read_cache_bytes, int) or read_cache_bytes < 0:
            raise InvalidInputError(f"read_cache_bytes must be an int >= 0, not {read_cache_bytes!r}")
        return cls(
            serde, read_view, views, prefix, partitions, None,
            durability=level, durability_timeout_ms=durability_timeout_ms,
            ttl_ms=ttl.ttl_ms(default_ttl), refresh_on_read=bool(refresh_on_read), cluster=cluster,
            compression=compression, deltas=bool(deltas), allow_eviction=bool(allow_eviction),
            entries=EntryCache(read_cache_bytes) if read_cache_bytes else None,
            adopts=projections is None,
        )

    @property
    def compress(self) -> bool:
        """Whether appends compress large payloads: asked for, and the serde does not encrypt
        (ciphertext does not compress; an `EncryptedSerializer` would only pay for the try)."""
        return self.compression is not None and not isinstance(self.serde, EncryptedSerializer)

    def _ttl_block(self, thread_id: str) -> list[str | bytes | int]:
        return ttl.ttl_block(self.keys, thread_id, self.ttl_ms) if self.ttl_ms else []

    @property
    def keys(self) -> Keyspace:
        """The deployment's keyspace, known once `setup` has run."""
        if self.keyspace is None:
            raise ConfigurationError("the saver is not set up yet; call setup()")
        return self.keyspace

    # setup -------------------------------------------------------------------------------
    def moved(self, refused: Refused) -> bool:
        """Whether `refused`, from a query on the indexes, means an index is not where `setup()`
        left it: the cluster's slots moved since setup read them, or (on one server too) the
        index was dropped or lost (``no such index``). Then set up again, which re-creates it
        and waits until it has indexed the documents already there, and query again."""
        return refused.moved

    def load_scripts(self) -> list[Step]:
        """What to send after a NOSCRIPT: every script, on every primary of a cluster."""
        return setup.load_scripts(CHECKPOINTS.setup_scripts, self.topology)

    def index_targets(self, view: ViewName) -> tuple[IndexTarget, ...]:
        """The indexes of `view` a query must reach (one per primary on a cluster)."""
        return index_targets(self.keys, view, self.topology)

    # writes ------------------------------------------------------------------------------
    def put_request(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> tuple[Command, RunnableConfig]:
        """The append of a `put`, and the config `put` returns."""
        event = append.checkpoint_saved(self.serde, config, checkpoint, metadata, new_versions, self.compress)
        return (
            append.append_call(event, self.keys, self.projections, self._ttl_block(event.thread_id)),
            _saved_config(event),
        )

    def put_call(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> PutCall:
        """The append of a `put`, storing values that extend what this saver last stored of
        them as deltas (with `deltas`); `put_logged` or `put_refused` follows its reply."""
        plan = None
        if self.deltas:
            plan = self.memory.plan(append.thread_id_of(config), append.namespace_of(config), self.compress)
        event = append.checkpoint_saved(self.serde, config, checkpoint, metadata, new_versions, self.compress, plan)
        command = append.append_call(event, self.keys, self.projections, self._ttl_block(event.thread_id))
        return PutCall(command, _saved_config(event), event, plan)

    def put_logged(self, call: PutCall, reply: Any) -> None:
        """Remember what the put `call` stored (`reply`: ``append.lua``'s, the entry id and the
        thread's incarnation)."""
        self.appended(call.command, reply)
        entry_id = reply[0]
        if call.plan is not None:
            self.memory.commit(call.plan, entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id))

    def put_refused(self, call: PutCall, refused: Refused) -> Command:
        """The append to send instead when `append.lua` refused a delta whose link is not what
        this saver remembered (``SSBASE``): the full values.

        Raises:
            Refused: any other refusal, as it came.
        """
        if call.plan is None or not refused.starts(BASE_REFUSED) or not call.plan.full:
            raise refused
        self.memory.forget(call.event.thread_id)
        event = call.plan.fallback(call.event)
        call.event = event
        call.command = append.append_call(event, self.keys, self.projections, self._ttl_block(event.thread_id))
        return call.command

    def appended(self, command: Command, reply: Any) -> None:
        """Hold the entry the append `command` logged in the read cache, under the thread's
        incarnation its `reply` names (``append.lua``: entry id, incarnation)."""
        if self.entries is not None:
            self.entries.appended(command, reply)

    def put_writes_request(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str
    ) -> Command | None:
        """The append of a `put_writes`; None for no writes (nothing to append).

        Raises:
            InvalidInputError: see `append.writes_saved` (also when there are no writes).
        """
        event = append.writes_saved(self.serde, config, writes, task_id, task_path, self.compress)
        if not event.writes:
            return None
        return append.append_call(event, self.keys, self.projections, self._ttl_block(event.thread_id))

    def delete_request(self, thread_id: str) -> Command:
        """The append of a `delete_thread`: a tombstone on the feed, nothing left of the thread."""
        self.memory.forget(str(thread_id))
        command = append.append_call(append.thread_deleted(thread_id), self.keys, self.projections)
        if self.entries is not None:
            self.entries.forget(str(command[3]))
        return command

    # reads -------------------------------------------------------------------------------
    def get_requests(self, config: RunnableConfig) -> list[Command]:
        """The one round trip of a `get_tuple`: the read script, and with `refresh_on_read` a
        TTL refresh of the thread pipelined after it."""
        read = reads.get_request(self.keys, self.view, config)
        if not (self.refresh_on_read and self.ttl_ms):
            return [read]
        thread_id = append.thread_id_of(config)
        return [read, ttl.ttl_call(self.keys, thread_id, self.ttl_ms, "touch")]

    def get_call(self, config: RunnableConfig) -> tuple[list[Command], cached_reads.CachedGet | None]:
        """The one round trip of a `get_tuple` (`get_requests`), through the read cache when the
        saver has one; `read_got` reads its replies."""
        if self.entries is None:
            return self.get_requests(config), None
        cached = cached_reads.cached_get(self.entries, self.keys, self.view, config)
        if not (self.refresh_on_read and self.ttl_ms):
            return [cached.command], cached
        return [cached.command, ttl.ttl_call(self.keys, append.thread_id_of(config), self.ttl_ms, "touch")], cached

    def read_got(self, cached: cached_reads.CachedGet | None, replies: Sequence[Any]) -> CheckpointTuple | None:
        """The tuple a `get_tuple` returns, from the replies to `get_call`."""
        if cached is None or self.entries is None:
            return self.read_get(replies)
        return cached.read(self.entries, self.serde, replies[0])

    def read_get(self, replies: Sequence[Any]) -> CheckpointTuple | None:
        """The tuple a `get_tuple` returns, from the replies to `get_requests`."""
        tuples = reads.decode_rows(self.serde, replies[0])
        return tuples[0] if tuples else None

    def pin_request(self, thread_id: str, pinned: bool) -> Command:
        """Pin a thread (its keys never expire) or unpin it (they expire again, in `default_ttl`).

        Raises:
            InvalidInputError: a bad thread id.
        """
        thread = append.thread_id_of({"configurable": {"thread_id": thread_id}})
        return ttl.ttl_call(self.keys, thread, self.ttl_ms, "pin" if pinned else "unpin")

    def list_pager(
        self,
        config: RunnableConfig | None,
        filter: Mapping[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> listing.ListPager:
        """The plan of a `list` call."""
        return listing.ListPager.plan(
            self.keys, self.view, self.serde, config, filter, before, limit, self.index_targets(self.view),
            self.window_hints, self.skipped,
        )

    def history_request(
        self, config: RunnableConfig, channels: Sequence[str]
    ) -> tuple[Command, cached_reads.CachedHistory | None] | None:
        """The one script call of a native `get_delta_channel_history`, through the read cache
        when the saver has one (`read_history` reads its reply); None when the saver reads the
        shallow view, which keeps no ancestors to walk (the base class walk runs)."""
        if self.view != "full":
            return None
        if self.entries is None:
            return history.history_request(self.keys, config, channels), None
        cached = cached_reads.cached_history(self.entries, self.keys, config, channels)
        return cached.command, cached

    def read_history(
        self, reply: Sequence[Any], channels: Sequence[str], cached: cached_reads.CachedHistory | None = None
    ) -> Mapping[str, DeltaChannelHistory]:
        """The per-channel history of a `history_request` reply."""
        if cached is None or self.entries is None:
            return history.read_history(self.serde, reply, channels)
        return cached.read(self.entries, self.serde, reply, channels)

    # maintenance (programs the twins drive) -------------------------------------------------
    def copy_program(self, source: str, target: str, until: str | datetime | None) -> Program[None]:
        """`copy_thread` (see `maintenance.copy_thread`)."""
        return maintenance.copy_thread(
            self.keys, self.projections, source, target, until, self.ttl_ms, load=self.load_scripts
        )

    def prune_program(self, thread_ids: Sequence[str], strategy: str) -> Program[None]:
        """`prune` (see `maintenance.prune`)."""
        return maintenance.prune(self.keys, self.projections, thread_ids, strategy, self.ttl_ms, load=self.load_scripts)

    def retain_program(
        self, thread_ids: Sequence[str], keep_last: int | None, max_age: timedelta | None
    ) -> Program[None]:
        """Retention (see `maintenance.retain`)."""
        return maintenance.retain(
            self.keys, self.projections, thread_ids, keep_last=keep_last, max_age=max_age, ttl=self.ttl_ms,
            load=self.load_scripts,
        )

    def runs_program(self, run_ids: Sequence[str]) -> Program[None]:
        """`delete_for_runs` (see `maintenance.delete_for_runs`)."""
        view: ViewName = "full" if "full" in self.projections else self.projections[0]
        return maintenance.delete_for_runs(
            self.keys, self.projections, run_ids, self.ttl_ms, self.index_targets(view), load=self.load_scripts,
            topology=self.topology,
        )

    @staticmethod
    def next_version(current: str | float | None) -> str:
        """The next channel version (see `append.version_after`)."""
        return append.version_after(current, random.random())



class CoreBinding:
    """Keeps a saver's `core` on the saver's current `serde`.

    `BaseCheckpointSaver.with_allowlist` (which `graph.compile` calls) shallow-copies the saver
    and assigns a new `serde`; the copy must then decode with it, and the original must not.
    """

    core: SaverCore
    _serde: SerializerProtocol = SafeSerializer()

    @property
    def serde(self) -> SerializerProtocol:
        return self._serde

    @serde.setter
    def serde(self, value: SerializerProtocol) -> None:
        self._serde = value
        if "core" in self.__dict__:
            self.core = dataclasses.replace(self.core, serde=value)
