"""The facts the log records, and their one stored form.

An event is immutable and named in the past tense. Payloads (checkpoint body, channel values,
write values) arrive here already serialized by the saver's serde as `Blob` (type name, bytes),
in their stored form (large ones compressed, see `streamsaver.log.compression`), so an
`EncryptedSerializer` protects them at rest; ids, namespaces, metadata and channel versions
stay readable because the views index them.

Their stored form (stream fields) is converted in one place, `streamsaver.log.stored`.

Maintenance events (copy, prune, runs deletion) record what happened to a thread's log:
`ThreadCopied`, `ThreadPruned` and `RunsDeleted` are markers without payloads, and
`ValuesRetained` keeps, at the log position of a checkpoint that was removed, only the channel
values that surviving checkpoints still point at (``c:`` fields, as in `CheckpointSaved`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = [
    "OMITTED",
    "Blob",
    "ChannelValue",
    "CheckpointSaved",
    "Event",
    "ItemDeleted",
    "ItemPut",
    "Marker",
    "PendingWrite",
    "RunContext",
    "RunsDeleted",
    "StoreEvent",
    "StorePartitionErased",
    "ThreadCopied",
    "ThreadDeleted",
    "ThreadPruned",
    "ValuesRetained",
    "WritesSaved",
]

Version = str | int | float


@dataclass(frozen=True)
class Blob:
    """A value serialized by the saver's serde: its type name and bytes, in stored form
    (`streamsaver.log.compression.expand` gives back what the serde wrote)."""

    type: str
    data: bytes


OMITTED = Blob("", b"")
"""Stands for every payload of an event read with ``from_fields(..., payloads=False)``."""


@dataclass(frozen=True)
class ChannelValue:
    """The value of one channel at one version."""

    channel: str
    version: Version
    blob: Blob


@dataclass(frozen=True)
class PendingWrite:
    """One write of a task; `idx` follows LangGraph's ``WRITES_IDX_MAP`` rule."""

    idx: int
    channel: str
    blob: Blob


@dataclass(frozen=True)
class CheckpointSaved:
    """A checkpoint was saved. `values` holds only the channels whose version is new."""

    TYPE: ClassVar[str] = "CheckpointSaved"
    VERSION: ClassVar[int] = 1

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    metadata: Mapping[str, Any]
    channel_versions: Mapping[str, Version]
    body: Blob
    values: tuple[ChannelValue, ...]


@dataclass(frozen=True)
class WritesSaved:
    """A task saved pending writes against a checkpoint."""

    TYPE: ClassVar[str] = "WritesSaved"
    VERSION: ClassVar[int] = 1

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    task_id: str
    task_path: str
    writes: tuple[PendingWrite, ...]


@dataclass(frozen=True)
class ThreadDeleted:
    """A thread and everything stored for it were deleted."""

    TYPE: ClassVar[str] = "ThreadDeleted"
    VERSION: ClassVar[int] = 1

    thread_id: str


@dataclass(frozen=True)
class ThreadCopied:
    """The events after this one, up to the next marker, were copied from `source_thread_id`'s
    log, up to the log bound or checkpoint `until` ("" for the whole log)."""

    TYPE: ClassVar[str] = "ThreadCopied"
    VERSION: ClassVar[int] = 1

    thread_id: str
    source_thread_id: str
    until: str


@dataclass(frozen=True)
class ValuesRetained:
    """What is left of a removed checkpoint: the channel values surviving checkpoints point at."""

    TYPE: ClassVar[str] = "ValuesRetained"
    VERSION: ClassVar[int] = 1

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    values: tuple[ChannelValue, ...]


@dataclass(frozen=True)
class ThreadPruned:
    """The thread's log was compacted: only `kept` checkpoints (and their writes) remain."""

    TYPE: ClassVar[str] = "ThreadPruned"
    VERSION: ClassVar[int] = 1

    thread_id: str
    strategy: str
    kept: int


@dataclass(frozen=True)
class RunsDeleted:
    """The checkpoints and writes of `run_ids` were removed from the thread's log and views."""

    TYPE: ClassVar[str] = "RunsDeleted"
    VERSION: ClassVar[int] = 1

    thread_id: str
    run_ids: tuple[str, ...]


@dataclass(frozen=True)
class RunContext:
    """The LangGraph run a store write was made in, as its config named it (plain strings; ""
    where the config named nothing): what links a fact in the store to the conversation that
    produced it. Inside a graph node, `checkpoint_ns` is the node's task namespace
    (``node:task_id``, subgraphs joined by ``|``)."""

    thread_id: str = ""
    checkpoint_ns: str = ""
    run_id: str = ""


@dataclass(frozen=True)
class ItemPut:
    """The store put `value` (plain JSON) under (`namespace`, `key`) at `at` (microseconds
    since the epoch, the writer's clock); `ttl_ms` > 0: the item expires that long after its
    last write (or refreshing read). Logged in the store partition `log_id` of the namespace."""

    TYPE: ClassVar[str] = "ItemPut"
    VERSION: ClassVar[int] = 3
    """2: the embedding's model, the put's own paths and a kept deadline (`model`, `paths`,
    `expires_ms`); 3: who wrote it (`writer`, `run`). Older entries (without them) read as
    their defaults."""

    log_id: str
    namespace: tuple[str, ...]
    key: str
    value: Mapping[str, Any]
    at: int
    ttl_ms: int = 0
    vectors: tuple[tuple[float, ...], ...] = ()
    """The embeddings the writer computed for the item's indexed fields (one per text): replay
    never re-embeds."""
    model: str = ""
    """The name of the model that computed `vectors` ("" without vectors, or logged before
    version 2): what a re-embedding compares."""
    paths: tuple[str, ...] | None = None
    """The put's own paths to embed (None: the index's)."""
    expires_ms: int = 0
    """When set (a re-embedding's put, which keeps the item's deadline), the item's deadline in
    Unix milliseconds instead of `at` plus `ttl_ms`."""
    writer: str = ""
    """The writing store's name (its ``writer=``; "" when logged before version 3)."""
    run: RunContext | None = None
    """The LangGraph run the put was made in (None: outside a run, or logged before version 3)."""

    @property
    def thread_id(self) -> str:
        """The log the event belongs to (the log core's name for it)."""
        return self.log_id


@dataclass(frozen=True)
class ItemDeleted:
    """The store deleted the item (`namespace`, `key`) at `at` (microseconds since the epoch);
    `writer` and `run` as in `ItemPut`."""

    TYPE: ClassVar[str] = "ItemDeleted"
    VERSION: ClassVar[int] = 2
    """2: who deleted it (`writer`, `run`); version 1 entries read as their defaults."""

    log_id: str
    namespace: tuple[str, ...]
    key: str
    at: int
    writer: str = ""
    run: RunContext | None = None

    @property
    def thread_id(self) -> str:
        """The log the event belongs to (the log core's name for it)."""
        return self.log_id


@dataclass(frozen=True)
class StorePartitionErased:
    """Every item of the store partition `log_id` was erased (the store's erasing event: what a
    failed batch apply answers with before the partition is folded again)."""

    TYPE: ClassVar[str] = "StorePartitionErased"
    VERSION: ClassVar[int] = 1

    log_id: str

    @property
    def thread_id(self) -> str:
        """The log the event belongs to (the log core's name for it)."""
        return self.log_id


Event = (
    CheckpointSaved | WritesSaved | ThreadDeleted | ThreadCopied | ValuesRetained | ThreadPruned | RunsDeleted
    | ItemPut | ItemDeleted | StorePartitionErased
)
StoreEvent = ItemPut | ItemDeleted | StorePartitionErased
"""The store domain's events (a log per store partition)."""
Marker = ThreadCopied | ThreadPruned | RunsDeleted
"""Events that record a maintenance operation and project nothing."""
