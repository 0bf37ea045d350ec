"""The write side, without I/O: LangGraph inputs -> validated event -> one append call.

Everything that can reject an input (a missing thread id, a value the serde cannot serialize,
metadata that is not JSON) happens here, before anything is sent, so a rejected call writes
nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from uuid import UUID

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from projectors import PROJECTORS
from projectors.documents import BODY_FIELD, body_field, write_field
from streamsaver.checkpoints.delta_plan import PutPlan
from streamsaver.checkpoints.metadata import checked_metadata
from streamsaver.errors import InvalidInputError
from streamsaver.log import compression
from streamsaver.log.codec import strict_json
from streamsaver.log.events import (
    Blob,
    ChannelValue,
    CheckpointSaved,
    Event,
    PendingWrite,
    ThreadDeleted,
    ValuesRetained,
    WritesSaved,
    to_fields,
)
from streamsaver.log.keys import Keyspace, ViewName
from streamsaver.scripts import APPEND, APPLY

__all__ = [
    "append_call", "apply_batch_call", "apply_call", "checkpoint_saved", "feed_pointer", "held_entry_probe", "thread_deleted",
    "thread_id_of", "view_blocks", "writes_saved",
]

EMPTY = Blob("empty", b"")
"""Stands for a channel with a new version but no value (LangGraph's convention)."""


def _as_id(value: Any, what: str) -> str:
    if isinstance(value, (int, UUID)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, not {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        # Ids are stored in JSON documents, which hold valid Unicode only (no lone surrogates).
        raise InvalidInputError(f"{what} must be valid Unicode: {exc}") from exc
    return value


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
    return _as_id(configurable["thread_id"], "thread_id")


def namespace_of(config: RunnableConfig) -> str:
    """The checkpoint namespace of `config` ("" for the root graph)."""
    return _as_id(config["configurable"].get("checkpoint_ns") or "", "checkpoint_ns")


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
        InvalidInputError: no thread id, an id that is not valid Unicode, an unserializable
            value, or non-JSON metadata or channel versions.
    """
    thread_id = thread_id_of(config)
    parent = config["configurable"].get("checkpoint_id")
    if not isinstance(metadata, Mapping):
        raise InvalidInputError(f"checkpoint metadata must be a mapping, not {type(metadata).__name__}")
    if not isinstance(new_versions, Mapping):
        raise InvalidInputError(f"new_versions must map channels to versions, not {type(new_versions).__name__}")
    if not isinstance(checkpoint.get("id"), str):
        # LangGraph ids are strings; another type would be stored as its str() while the body
        # keeps the original: the checkpoint would not read back as put.
        raise InvalidInputError(f"checkpoint id must be a string, not {type(checkpoint.get('id')).__name__}")
    body = {k: v for k, v in checkpoint.items() if k != "channel_values"}
    values = checkpoint.get("channel_values", {})
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
    return CheckpointSaved(
        thread_id=thread_id,
        checkpoint_ns=namespace_of(config),
        checkpoint_id=_as_id(checkpoint["id"], "checkpoint id"),
        parent_checkpoint_id=_as_id(parent, "parent checkpoint id") if parent else None,
        metadata=md,
        channel_versions=channel_versions,
        body=_dump(serde, body, "the checkpoint", compress),
        values=tuple(
            ChannelValue(ch, v, _channel_blob(serde, ch, v, values[ch], compress, plan) if ch in values else EMPTY)
            for ch, v in new_versions.items()
        ),
    )


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
        checkpoint_id=_as_id(checkpoint_id, "checkpoint_id"),
        task_id=_as_id(task_id, "task_id"),
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
    return ThreadDeleted(_as_id(thread_id, "thread_id"))


_COUNTS = tuple(str(n) for n in range(1024))


def _count(n: int) -> str:
    """`n` spelt out: packing a str argument costs a third of packing an int (hiredis)."""
    return _COUNTS[n] if n < 1024 else str(n)


def feed_pointer(event: Event) -> list[str | bytes | int]:
    """The fields of the partition-feed pointer of `event`, after ``id`` (its log entry id)."""
    fields: list[str | bytes | int] = ["type", event.TYPE, "thread", event.thread_id]
    if isinstance(event, (CheckpointSaved, WritesSaved, ValuesRetained)):
        fields += ["ns", event.checkpoint_ns, "cid", event.checkpoint_id]
    return fields


def view_blocks(event: Event, keyspace: Keyspace, views: Sequence[ViewName]) -> list[str | bytes | int]:
    """The projected commands of `event` for each view, as the scripts read them: the count of
    views, then per view its name, its command count and the commands, each after its length."""
    args: list[str | bytes | int] = []
    _add_view_blocks(args, event, keyspace, views)
    return args


def _add_view_blocks(
    args: list[str | bytes | int], event: Event, keyspace: Keyspace, views: Sequence[ViewName]
) -> None:
    """Append `view_blocks` to `args` (replay builds a batch's arguments in one list: copying
    each event's blocks into it cost as much as building them)."""
    add, extend = args.append, args.extend
    add(_count(len(views)))
    for view in views:
        commands = PROJECTORS[view](event, keyspace)
        add(view)
        add(_count(len(commands)))
        for command in commands:
            n = len(command)
            add(_COUNTS[n] if n < 1024 else str(n))  # not _count: a call per command costs more
            extend(command)


def held_entry_probe(event: Event, keyspace: Keyspace, views: Sequence[ViewName]) -> tuple[str, str, str] | None:
    """Where a view records the log entry that holds `event` once appended: ``(hash, field,
    checkpoint id the hash's @cid must hold or "")``, for `append.lua` to recognise a repeat.

    A checkpoint is recorded by its body pointer (full: per checkpoint id; shallow: the latest,
    so only while ``@cid`` names it); a put_writes by the pointer of its first write.
    """
    view: ViewName = "full" if "full" in views else views[0]
    keys = keyspace.thread(event.thread_id)
    if isinstance(event, CheckpointSaved):
        ptrs = keys.in_ns(view, "ptrs", event.checkpoint_ns)
        if view == "full":
            return ptrs, body_field(event.checkpoint_id), ""
        return ptrs, BODY_FIELD, event.checkpoint_id
    if isinstance(event, WritesSaved) and event.writes:
        ns, cid = event.checkpoint_ns, event.checkpoint_id
        key = keys.per_checkpoint(view, "writes", ns, cid) if view == "full" else keys.in_ns(view, "writes", ns)
        return key, write_field(event.task_id, event.writes[0].idx), "" if view == "full" else cid
    return None


def append_call(
    event: Event, keyspace: Keyspace, views: Sequence[ViewName], ttl: Sequence[str | bytes | int] = ()
) -> list[str | bytes | int]:
    """The EVALSHA arguments that append `event` and project it into `views`, atomically; a
    repeat of an event already logged (a retried call) writes nothing but the TTL refresh.
    `ttl` is the thread's TTL block (`streamsaver.checkpoints.ttl.ttl_block`), empty for none; the
    repeat probe (`held_entry_probe`), when there is one, comes after it."""
    keys = keyspace.thread(event.thread_id)
    probe = held_entry_probe(event, keyspace, views)
    # Built in one list, in wire order: a put's ~100 arguments were copied four times over.
    command: list[str | bytes | int] = ["EVALSHA", APPEND.sha]
    if probe is None:
        command += ("3", keys.log, keys.feed, keys.positions)
    else:
        command += ("4", keys.log, keys.feed, keys.positions, probe[0])
    fields = to_fields(event)
    command.append(_count(2 * len(fields)))
    for pair in fields.items():
        command += pair
    pointer = feed_pointer(event)
    command.append(_count(len(pointer)))
    command += pointer
    command.append("1" if isinstance(event, ThreadDeleted) else "0")
    _add_view_blocks(command, event, keyspace, views)
    command += ttl
    if probe is not None:
        command += (probe[1], probe[2])
    return command


def apply_call(event: Event, event_id: str, keyspace: Keyspace, views: Sequence[ViewName]) -> list[str | bytes | int]:
    """The EVALSHA arguments that apply the logged `event` (entry `event_id`) to `views` that
    have not applied it yet; the same projectors and ops as the append."""
    return apply_batch_call([(event, event_id)], keyspace, views)


def apply_batch_call(
    logged: Sequence[tuple[Event, str]], keyspace: Keyspace, views: Sequence[ViewName]
) -> list[str | bytes | int]:
    """The EVALSHA arguments that apply logged events of ONE thread, in log order (each with
    its entry id), to `views`: one script, positions read and recorded once. A batch of several
    events carries, per view, the ops that erase the thread from it: if the batch fails, the
    script erases instead of leaving the thread half-applied (see ``apply.lua``).

    Raises:
        InvalidInputError: no events, or events of more than one thread.
    """
    if not logged:
        raise InvalidInputError("apply_batch_call needs at least one event")
    thread = logged[0][0].thread_id
    args: list[str | bytes | int] = [len(logged)]
    for event, event_id in logged:
        if event.thread_id != thread:
            raise InvalidInputError("a batch applies the events of one thread")
        args.append(event_id)
        _add_view_blocks(args, event, keyspace, views)
    if len(logged) > 1:
        _add_view_blocks(args, ThreadDeleted(thread), keyspace, views)
    else:
        args.append(0)
        if isinstance(logged[0][0], ThreadDeleted):
            args.append("forget")  # the thread's positions go with it (apply.lua)
    keys = keyspace.thread(thread)
    # The log too: the keys the batch writes take its deadline, if it has one (apply.lua).
    return APPLY.evalsha_args([keys.positions, keys.log], args)


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
    """Validate a view name.

    Raises:
        InvalidInputError: for anything but "full" or "shallow".
    """
    if value == "full":
        return "full"
    if value == "shallow":
        return "shallow"
    raise InvalidInputError(f"view must be 'full' or 'shallow', not {value!r}")


def projections_of(values: Iterable[str], read_view: ViewName) -> tuple[ViewName, ...]:
    """Validate the views an append keeps current; the read view must be one of them."""
    views = tuple(dict.fromkeys(view_of(v) for v in values))
    if read_view not in views:
        raise InvalidInputError(f"the saver reads the {read_view!r} view, so projections must include it")
    return views

