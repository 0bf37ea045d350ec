"""The write side, without I/O: LangGraph inputs -> validated event -> one append call (the log
core's `streamsaver.log.append`, bound to the checkpoint domain).

Everything that can reject an input (a missing thread id, a value the serde cannot serialize,
metadata that is not JSON) happens here, before anything is sent, so a rejected call writes
nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from projectors.domain import CHECKPOINTS
from streamsaver.checkpoints.delta_plan import PutPlan
from streamsaver.checkpoints.metadata import checked_metadata
from streamsaver.errors import InvalidInputError
from streamsaver.log import append as log_append
from streamsaver.log import compression
from streamsaver.log.codec import strict_json
from streamsaver.log.events import (
    Blob,
    ChannelValue,
    CheckpointSaved,
    Event,
    PendingWrite,
    ThreadDeleted,
    WritesSaved,
)
from streamsaver.log.fields import EMPTY_TYPE
from streamsaver.log.keys import Keyspace, ViewName, checked_id

__all__ = [
    "append_call", "apply_batch_call", "apply_call", "checkpoint_saved", "namespace_of", "projections_of",
    "thread_deleted", "thread_id_of", "version_after", "view_of", "writes_saved",
]

EMPTY = Blob(EMPTY_TYPE, b"")
"""Stands for a channel with a new version but no value (LangGraph's convention)."""


def _as_text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, not {type(value).__name__}")
    return value


def thread_id_of(config: RunnableConfig | None) -> str:
    """The thread id of `config`.

    Raises:
        InvalidInputError: (a ValueError) when the config names no thread, or is not a mapping.
    """
    if config is not None and not isinstance(config, Mapping):
        raise InvalidInputError(f"config must be a mapping (a RunnableConfig), not {type(config).__name__}")
    configurable = (config or {}).get("configurable") or {}
    if not isinstance(configurable, Mapping) or configurable.get("thread_id") is None:
        raise InvalidInputError(
            "config must carry configurable.thread_id, e.g. "
            '{"configurable": {"thread_id": "my-thread"}}'
        )
    return checked_id(configurable["thread_id"], "thread_id")


def namespace_of(config: RunnableConfig) -> str:
    """The checkpoint namespace of `config` ("" for the root graph)."""
    return checked_id(config["configurable"].get("checkpoint_ns") or "", "checkpoint_ns")


def _serialized(serde: SerializerProtocol, value: Any, what: str) -> tuple[str, bytes]:
    try:
        return serde.dumps_typed(value)
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        raise InvalidInputError(f"cannot serialize {what}: {exc}") from exc


def _dump(serde: SerializerProtocol, value: Any, what: str, compress: bool) -> Blob:
    type_, data = _serialized(serde, value, what)
    return compression.shrink(Blob(type_, data)) if compress else compression.keep(Blob(type_, data))


def _channel_blob(
    serde: SerializerProtocol, channel: str, version: Any, value: Any, compress: bool, plan: PutPlan | None
) -> Blob:
    if plan is None:
        return _dump(serde, value, f"channel {channel!r}", compress)
    return plan.blob(channel, version, *_serialized(serde, value, f"channel {channel!r}"))


def checkpoint_saved(
    serde: SerializerProtocol,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
    compress: bool = False,
    plan: PutPlan | None = None,
) -> CheckpointSaved:
    """The event of a `put`; with `compress`, large payloads are stored compressed
    (`streamsaver.log.compression`); with `plan`, a channel value that extends the one the plan
    remembers is stored as a delta (`streamsaver.checkpoints.delta_plan`; `compress` is the plan's).

    Raises:
        InvalidInputError: no thread id, an id that is not valid Unicode, a checkpoint that is not
            a mapping (or whose values or versions are not), an unserializable value, or non-JSON
            metadata or channel versions.
    """
    thread_id = thread_id_of(config)
    parent = config["configurable"].get("checkpoint_id")
    _check_put(checkpoint, metadata, new_versions)
    body = {k: v for k, v in checkpoint.items() if k != "channel_values"}
    values = checkpoint.get("channel_values", {})
    md, channel_versions = _json_parts(config, checkpoint, metadata)
    return CheckpointSaved(
        thread_id=thread_id,
        checkpoint_ns=namespace_of(config),
        checkpoint_id=checked_id(checkpoint["id"], "checkpoint id"),
        parent_checkpoint_id=checked_id(parent, "parent checkpoint id") if parent else None,
        metadata=md,
        channel_versions=channel_versions,
        body=_dump(serde, body, "the checkpoint", compress),
        values=tuple(
            ChannelValue(ch, v, _channel_blob(serde, ch, v, values[ch], compress, plan) if ch in values else EMPTY)
            for ch, v in new_versions.items()
        ),
    )


def _check_put(checkpoint: Any, metadata: Any, new_versions: Any) -> None:
    """Refuse arguments of a `put` that are not the shapes LangGraph passes (before any write).

    Raises:
        InvalidInputError: a checkpoint, its ``channel_values`` or ``channel_versions``, the
            metadata or `new_versions` not a mapping, or a checkpoint id not a string.
    """
    if not isinstance(checkpoint, Mapping):
        raise InvalidInputError(f"a checkpoint must be a mapping, not {type(checkpoint).__name__}")
    for part in ("channel_values", "channel_versions"):
        if not isinstance(checkpoint.get(part, {}), Mapping):
            raise InvalidInputError(f"a checkpoint's {part} must be a mapping, not {type(checkpoint[part]).__name__}")
    if not isinstance(metadata, Mapping):
        raise InvalidInputError(f"checkpoint metadata must be a mapping, not {type(metadata).__name__}")
    if not isinstance(new_versions, Mapping):
        raise InvalidInputError(f"new_versions must map channels to versions, not {type(new_versions).__name__}")
    if not isinstance(checkpoint.get("id"), str):
        # LangGraph ids are strings; another type would be stored as its str() while the body
        # keeps the original: the checkpoint would not read back as put.
        raise InvalidInputError(f"checkpoint id must be a string, not {type(checkpoint.get('id')).__name__}")


def _json_parts(
    config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The metadata and channel versions of a checkpoint, checked to be JSON (the views index them).

    Raises:
        InvalidInputError: either is not JSON-serializable, or the metadata breaks a rule of
            `streamsaver.checkpoints.metadata`.
    """
    md = dict(get_serializable_checkpoint_metadata(config, metadata))
    try:
        md_json = strict_json(md)
    except TypeError as exc:
        raise InvalidInputError(f"checkpoint metadata must be JSON-serializable: {exc}") from exc
    checked_metadata(md, md_json)
    channel_versions = dict(checkpoint.get("channel_versions", {}))
    try:
        strict_json(channel_versions)
    except TypeError as exc:
        raise InvalidInputError(f"channel names and versions must be JSON-serializable: {exc}") from exc
    return md, channel_versions


def writes_saved(
    serde: SerializerProtocol,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
    compress: bool = False,
) -> WritesSaved:
    """The event of a `put_writes`; indexes follow ``WRITES_IDX_MAP``; `compress` as in
    `checkpoint_saved`.

    Raises:
        InvalidInputError: no thread id or checkpoint id, writes that are not (channel name,
            value) pairs, or an unserializable value.
    """
    thread_id = thread_id_of(config)
    pairs = _pairs(writes)
    checkpoint_id = config["configurable"].get("checkpoint_id")
    if not checkpoint_id:
        raise InvalidInputError("put_writes needs configurable.checkpoint_id (the config put returned)")
    return WritesSaved(
        thread_id=thread_id,
        checkpoint_ns=namespace_of(config),
        checkpoint_id=checked_id(checkpoint_id, "checkpoint_id"),
        task_id=checked_id(task_id, "task_id"),
        task_path=_as_text(task_path or "", "task_path"),
        writes=tuple(
            PendingWrite(WRITES_IDX_MAP.get(ch, i), ch, _dump(serde, value, f"the write to {ch!r}", compress))
            for i, (ch, value) in enumerate(pairs)
        ),
    )


def _pairs(writes: Any) -> list[tuple[str, Any]]:
    """`writes` as a list of (channel name, value) pairs.

    Raises:
        InvalidInputError: `writes` is a string, a mapping or not iterable, or an item is not a
            pair whose first item is a string.
    """
    if isinstance(writes, (str, bytes, Mapping)) or not isinstance(writes, Iterable):
        raise InvalidInputError(f"writes must be a sequence of (channel, value) pairs, not {type(writes).__name__}")
    pairs = list(writes)
    for pair in pairs:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2 or not isinstance(pair[0], str):
            raise InvalidInputError(f"each write must be a (channel name, value) pair, not {pair!r:.80}")
    return [(ch, value) for ch, value in pairs]


def thread_deleted(thread_id: Any) -> ThreadDeleted:
    """The event of a `delete_thread`."""
    return ThreadDeleted(checked_id(thread_id, "thread_id"))


def append_call(
    event: Event, keyspace: Keyspace, views: Sequence[ViewName], ttl: Sequence[str | bytes | int] = ()
) -> list[str | bytes | int]:
    """The append of a checkpoint event (`streamsaver.log.append.append_call`); `ttl` is the
    thread's TTL block (`streamsaver.checkpoints.ttl.ttl_block`), empty for none."""
    return log_append.append_call(CHECKPOINTS, event, keyspace, views, ttl)


def apply_call(event: Event, event_id: str, keyspace: Keyspace, views: Sequence[ViewName]) -> list[str | bytes | int]:
    """The apply of one logged checkpoint event (`streamsaver.log.append.apply_call`)."""
    return log_append.apply_call(CHECKPOINTS, event, event_id, keyspace, views)


def apply_batch_call(
    logged: Sequence[tuple[Event, str]], keyspace: Keyspace, views: Sequence[ViewName]
) -> list[str | bytes | int]:
    """The apply of logged events of one thread (`streamsaver.log.append.apply_batch_call`).

    Raises:
        InvalidInputError: no events, or events of more than one thread.
    """
    return log_append.apply_batch_call(CHECKPOINTS, logged, keyspace, views)


def version_after(current: str | float | None, random_part: float) -> str:
    """The channel version after `current`: a zero-padded counter and a random tie-breaker, so
    versions sort as strings and branches forked from one checkpoint never reuse a version."""
    if current is None:
        counter = 0
    elif isinstance(current, (int, float)):
        counter = int(current)
    else:
        counter = int(str(current).split(".")[0])
    return f"{counter + 1:032}.{random_part:016}"


def view_of(value: str) -> ViewName:
    """Validate a checkpoint view name.

    Raises:
        InvalidInputError: for anything but a view of `projectors.domain.CHECKPOINTS`.
    """
    return CHECKPOINTS.view_of(value)


def projections_of(values: Iterable[str], read_view: ViewName) -> tuple[ViewName, ...]:
    """Validate the views an append keeps current; the read view must be one of them."""
    return CHECKPOINTS.projections_of(values, read_view)
