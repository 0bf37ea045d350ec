"""`SaverCore`: every decision of a saver, shared by `StreamSaver` and `AsyncStreamSaver`.

The twins only move bytes: they send the commands the core builds (one command, or several in
one pipelined round trip) and hand the replies back to it.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import time
from collections.abc import Generator, Iterable, Mapping, Sequence
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
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from streamsaver.checkpoints import (
    append,
    history,
    listing,
    maintenance,
    reads,
    setup,
    ttl,
    windows,
)
from streamsaver.checkpoints import durability as durability_
from streamsaver.checkpoints.delta_plan import BASE_REFUSED, DeltaMemory, PutPlan
from streamsaver.drivers.cluster import index_moved
from streamsaver.drivers.wire import (
    CONNECTION_RETRIES,
    Command,
    check_client,
    enqueue,
    failed_reply,
    retry_backoff,
)
from streamsaver.errors import ConfigurationError, InvalidInputError
from streamsaver.log.events import CheckpointSaved
from streamsaver.log.keys import DEFAULT_PREFIX, Keyspace, ViewName
from streamsaver.log.routing import IndexTarget, Routed, Step, Topology, index_targets
from streamsaver.scripts import ALL

__all__ = [
    "CONNECTION_RETRIES", "Command", "CoreBinding", "PutCall", "SaverCore", "SetupProgram", "check_client", "enqueue", "failed_reply",
    "retry_backoff",
]

log = logging.getLogger("streamsaver.setup")

LOAD_SCRIPTS: list[Command] = [["SCRIPT", "LOAD", s.source] for s in ALL]

INDEXING_WAIT_S = 30.0
"""How long a setup after moved slots (or during an index schema upgrade) waits for new indexes
to index what their nodes hold."""
INDEXING_POLL_S = 0.05
"""The pause between two reads of the new indexes' state (`SaverCore.setup_program`)."""

SetupProgram = Generator[list[Step] | setup.Pause, Any, None]
"""`setup()`: each yield is one round trip, answered with its raw replies (errors as values)."""

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
    topology: Topology | None = None
    window_hints: windows.WindowHints = field(default_factory=windows.WindowHints)
    memory: DeltaMemory = field(default_factory=DeltaMemory, repr=False, compare=False)

    @classmethod
    def configure(
        cls,
        serde: SerializerProtocol,
        *,
        view: str,
        projections: Iterable[str],
        prefix: str,
        partitions: int | None,
        durability: str = "memory",
        durability_timeout_ms: int = 5000,
        default_ttl: float | None = None,
        refresh_on_read: bool = False,
        compression: str | None = "zstd",
        cluster: bool = False,
        deltas: bool = True,
    ) -> SaverCore:
        """Validate saver options.

        Raises:
            InvalidInputError: an unknown view, durability or compression, a read view that is
                not projected, a TTL that is not a positive number of minutes, or `partitions`
                not None nor an int in 1..16384 (0 meant the default, a bool or float passed).
            ConfigurationError: a bad prefix.
        """
        read_view = append.view_of(view)
        if partitions is not None and (
            isinstance(partitions, bool) or not isinstance(partitions, int) or not 1 <= partitions <= 16384
        ):
            raise InvalidInputError(f"partitions must be None or an int in 1..16384, not {partitions!r}")
        Keyspace(prefix, partitions or 1)
        level = durability_.durability_of(durability, durability_timeout_ms)
        views = append.projections_of(projections, read_view)
        if compression not in ("zstd", None):
            raise InvalidInputError(f'compression must be "zstd" or None, not {compression!r}')
        return cls(
            serde, read_view, views, prefix, partitions, None,
            durability=level, durability_timeout_ms=durability_timeout_ms,
            ttl_ms=ttl.ttl_ms(default_ttl), refresh_on_read=bool(refresh_on_read), cluster=cluster,
            compression=compression, deltas=bool(deltas),
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
    def setup_program(self, wait_indexed: bool = False) -> SetupProgram:
        """`setup()` (see `streamsaver.checkpoints.setup`); on a cluster it first reads the slot map.
        With `wait_indexed`, it then polls the indexes it created until they have indexed the
        documents already there (at most `INDEXING_WAIT_S`; between two polls it yields a
        `setup.Pause` of `INDEXING_POLL_S`, which the driver sleeps): after slots moved, new
        indexes are made on nodes that hold documents. During an upgrade to a new index schema
        (an index of an older one exists) it polls every index of its views the same way.

        Raises:
            MissingModuleError, ConfigurationError: see `setup.read_probe`, `setup.read_created`.
        """
        topology = yield from setup.read_topology(self.prefix, self.cluster)
        keyspace, existing = setup.read_probe(
            self.prefix, self.partitions, (yield setup.probe_request(self.prefix, self.partitions, topology))
        )
        requests = setup.create_requests(keyspace, self.projections, existing, topology)
        setup.read_created((yield requests))
        infos = setup.index_infos(requests) if wait_indexed else []
        older = setup.older_indexes(keyspace, self.projections, existing)
        if older:
            # The new indexes cover documents written before them: until their scan is done, a
            # query would quietly miss some (whichever process created them).
            infos = setup.view_index_infos(keyspace, self.projections, topology)
        deadline = time.monotonic() + INDEXING_WAIT_S
        while infos and setup.still_indexing((yield infos)):
            yield setup.Pause(INDEXING_POLL_S)  # not a busy loop of FT.INFO on the primaries
            if time.monotonic() > deadline:
                # Reading on would miss whatever the new indexes have not reached yet.
                raise ConfigurationError(
                    f"new indexes were still indexing after {INDEXING_WAIT_S:.0f} s; call again when "
                    "`FT.INFO` shows indexing 0 on every primary"
                )
        if older:
            # Both schemas' indexes are kept current until an operator drops the older: the
            # server pays for both (docs/operations.md, upgrading the index schema).
            log.warning(
                "indexes of an older schema remain: %s; drop them (FT.DROPINDEX, without DD) once no "
                "process of an older release uses them (docs/operations.md)", ", ".join(older),
            )
        self.keyspace, self.topology = keyspace, topology

    def index_moved(self, error: Exception) -> bool:
        """Whether `error`, from a query on the indexes, means the cluster's slots moved since
        `setup()` read them (then `setup_program(wait_indexed=True)` and query again)."""
        return self.topology is not None and index_moved(error)

    def load_scripts(self) -> list[Step]:
        """What to send after a NOSCRIPT: every script, on every primary of a cluster."""
        return setup.load_scripts(self.topology)

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
        return append.append_call(event, self.keys, self.projections, self._ttl_block(event.thread_id)), _saved_config(event)

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

    def put_logged(self, call: PutCall, entry_id: Any) -> None:
        """Remember what the put `call` stored, logged as `entry_id` (its reply)."""
        if call.plan is not None:
            self.memory.commit(call.plan, entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id))

    def put_refused(self, call: PutCall, error: Exception) -> Command:
        """The append to send instead when `append.lua` refused a delta whose link is not what
        this saver remembered (``SSBASE``): the full values. Any other error is raised."""
        if call.plan is None or not str(error).startswith(BASE_REFUSED) or not call.plan.full:
            raise error
        self.memory.forget(call.event.thread_id)
        event = call.plan.fallback(call.event)
        call.event = event
        return append.append_call(event, self.keys, self.projections, self._ttl_block(event.thread_id))

    def put_writes_request(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str
    ) -> Command:
        """The append of a `put_writes`."""
        event = append.writes_saved(self.serde, config, writes, task_id, task_path, self.compress)
        return append.append_call(event, self.keys, self.projections, self._ttl_block(event.thread_id))

    def durable(self, command: Command) -> list[Step]:
        """An append followed by the wait its durability asks for: one pipelined round trip.
        The wait names no key; it goes to the node of the append's first key (its slot)."""
        wait = durability_.wait_command(self.durability, self.durability_timeout_ms)
        return [command] if wait is None else [command, Routed(str(command[3]), wait)]

    @staticmethod
    def wait_key(steps: Sequence[Step]) -> str | None:
        """The key whose node the wait of `durable` goes to; None without a wait."""
        return steps[1].key if len(steps) > 1 and isinstance(steps[1], Routed) else None

    @staticmethod
    def wait_again(steps: Sequence[Step], sent_to: str | None, owner_now: str | None) -> list[Step]:
        """The wait to send again when the append was redirected (slots moved; the client's map
        was stale): the wait went to the node the append left, which returns at once."""
        return list(steps[1:]) if sent_to != owner_now else []

    def read_durable(self, replies: Sequence[Any]) -> None:
        """Check the wait of `durable`.

        Raises:
            DurabilityError: the append was not confirmed durable in time (it was made).
        """
        if len(replies) > 1:
            durability_.check_waited(self.durability, self.durability_timeout_ms, replies[1])

    def delete_request(self, thread_id: str) -> Command:
        """The append of a `delete_thread`: a tombstone on the feed, nothing left of the thread."""
        self.memory.forget(str(thread_id))
        return append.append_call(append.thread_deleted(thread_id), self.keys, self.projections)

    # reads -------------------------------------------------------------------------------
    def get_requests(self, config: RunnableConfig) -> list[Command]:
        """The one round trip of a `get_tuple`: the read script, and with `refresh_on_read` a
        TTL refresh of the thread pipelined after it."""
        read = reads.get_request(self.keys, self.view, config)
        if not (self.refresh_on_read and self.ttl_ms):
            return [read]
        thread_id = append.thread_id_of(config)
        return [read, ttl.ttl_call(self.keys, thread_id, self.ttl_ms, "touch")]

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
            self.window_hints,
        )

    def history_request(self, config: RunnableConfig, channels: Sequence[str]) -> Command | None:
        """The one script call of a native `get_delta_channel_history`; None when the saver
        reads the shallow view, which keeps no ancestors to walk (the base class walk runs)."""
        if self.view != "full":
            return None
        return history.history_request(self.keys, config, channels)

    def read_history(self, reply: Sequence[Any], channels: Sequence[str]) -> Mapping[str, DeltaChannelHistory]:
        """The per-channel history of a `history_request` reply."""
        return history.read_history(self.serde, reply, channels)

    # maintenance (programs the twins drive) -------------------------------------------------
    def copy_program(self, source: str, target: str, until: str | datetime | None) -> maintenance.Program:
        """`copy_thread` (see `maintenance.copy_thread`)."""
        return maintenance.copy_thread(self.keys, self.projections, source, target, until, self.ttl_ms)

    def prune_program(self, thread_ids: Sequence[str], strategy: str) -> maintenance.Program:
        """`prune` (see `maintenance.prune`)."""
        return maintenance.prune(self.keys, self.projections, thread_ids, strategy, self.ttl_ms)

    def retain_program(
        self, thread_ids: Sequence[str], keep_last: int | None, max_age: timedelta | None
    ) -> maintenance.Program:
        """Retention (see `maintenance.retain`)."""
        return maintenance.retain(
            self.keys, self.projections, thread_ids, keep_last=keep_last, max_age=max_age, ttl=self.ttl_ms
        )

    def runs_program(self, run_ids: Sequence[str]) -> maintenance.Program:
        """`delete_for_runs` (see `maintenance.delete_for_runs`)."""
        view: ViewName = "full" if "full" in self.projections else self.projections[0]
        return maintenance.delete_for_runs(self.keys, self.projections, run_ids, self.ttl_ms, self.index_targets(view))

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
    _serde: SerializerProtocol = JsonPlusSerializer()

    @property
    def serde(self) -> SerializerProtocol:
        return self._serde

    @serde.setter
    def serde(self, value: SerializerProtocol) -> None:
        self._serde = value
        if "core" in self.__dict__:
            self.core = dataclasses.replace(self.core, serde=value)
