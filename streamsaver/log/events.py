"""The facts the log records, and their one stored form.

An event is immutable and named in the past tense. Payloads (checkpoint body, channel values,
write values) arrive here already serialized by the saver's serde as `Blob` (type name, bytes),
in their stored form (large ones compressed, see `streamsaver.log.compression`), so an
`EncryptedSerializer` protects them at rest; ids, namespaces, metadata and channel versions
stay readable because the views index them.

Stored form: a flat map of binary-safe stream fields. ``type`` and ``v`` (schema version) lead;
`to_fields` writes the current version and `from_fields` reads any known version, lifting old
ones through `UPCASTERS` one version at a time. Each payload has a field of its own, which the
views point at (``streamsaver/scripts/_read.lua`` reads them there):

* ``body``: the checkpoint body, packed ``(type, bytes)``;
* ``c:<escaped channel>``: one new channel value, packed ``(channel, version JSON, type, bytes)``;
* ``w:<idx>``: one write, packed ``(channel, type, bytes)``.

Maintenance events (copy, prune, runs deletion) record what happened to a thread's log:
`ThreadCopied`, `ThreadPruned` and `RunsDeleted` are markers without payloads, and
`ValuesRetained` keeps, at the log position of a checkpoint that was removed, only the channel
values that surviving checkpoints still point at (``c:`` fields, as in `CheckpointSaved`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import orjson

from streamsaver.errors import EventDecodeError
from streamsaver.log.codec import (
    escape,
    pack,
    strict_json,
    unpack,
    unpack_head_1_of_3,
    unpack_head_2_of_4,
    unpack_none_of_2,
)

__all__ = [
    "OMITTED",
    "Blob",
    "ChannelValue",
    "CheckpointSaved",
    "Event",
    "Marker",
    "PendingWrite",
    "RunsDeleted",
    "ThreadCopied",
    "ThreadDeleted",
    "ThreadPruned",
    "ValuesRetained",
    "WritesSaved",
    "channel_field",
    "decode_channel_value",
    "decode_write",
    "encode_channel_value",
    "from_fields",
    "to_fields",
    "write_field",
]

Fields = dict[bytes, bytes]
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


Event = (
    CheckpointSaved | WritesSaved | ThreadDeleted | ThreadCopied | ValuesRetained | ThreadPruned | RunsDeleted
)
Marker = ThreadCopied | ThreadPruned | RunsDeleted
"""Events that record a maintenance operation and project nothing."""


def _s(value: str) -> bytes:
    return value.encode("utf-8", "surrogatepass")


def _text(fields: Fields, name: bytes) -> str:
    return fields[name].decode("utf-8", "surrogatepass")


def to_fields(event: Event) -> Fields:
    """The stream fields of `event`, at its type's current schema version."""
    # One dict per event, filled in order (merging dicts made two more, on every append).
    fields: Fields
    if isinstance(event, CheckpointSaved):
        fields = {
            b"type": _s(event.TYPE),
            b"v": b"%d" % event.VERSION,
            b"thread": _s(event.thread_id),
            b"ns": _s(event.checkpoint_ns),
            b"cid": _s(event.checkpoint_id),
            b"parent": _s(event.parent_checkpoint_id or ""),
            b"meta": strict_json(event.metadata),
            b"versions": strict_json(event.channel_versions),
            b"body": pack([_s(event.body.type), event.body.data]),
        }
        for cv in event.values:
            fields[channel_field(cv.channel)] = encode_channel_value(cv)
        return fields
    if isinstance(event, WritesSaved):
        fields = {
            b"type": _s(event.TYPE),
            b"v": b"%d" % event.VERSION,
            b"thread": _s(event.thread_id),
            b"ns": _s(event.checkpoint_ns),
            b"cid": _s(event.checkpoint_id),
            b"task": _s(event.task_id),
            b"path": _s(event.task_path),
        }
        for w in event.writes:
            fields[write_field(w.idx)] = pack([_s(w.channel), _s(w.blob.type), w.blob.data])
        return fields
    head: Fields = {b"type": _s(event.TYPE), b"v": b"%d" % event.VERSION, b"thread": _s(event.thread_id)}
    return head | _maintenance_fields(event)


def _maintenance_fields(event: Event) -> Fields:
    if isinstance(event, ValuesRetained):
        return {b"ns": _s(event.checkpoint_ns), b"cid": _s(event.checkpoint_id)} | {
            channel_field(cv.channel): encode_channel_value(cv) for cv in event.values
        }
    if isinstance(event, ThreadCopied):
        return {b"source": _s(event.source_thread_id), b"until": _s(event.until)}
    if isinstance(event, ThreadPruned):
        return {b"strategy": _s(event.strategy), b"kept": b"%d" % event.kept}
    if isinstance(event, RunsDeleted):
        return {b"runs": orjson.dumps(list(event.run_ids))}
    return {}


@lru_cache(maxsize=65536)
def channel_field(channel: str) -> bytes:
    """The stream field of a channel value in a `CheckpointSaved` entry."""
    # Cached: the same channels recur in every event (and escaping runs a regex).
    return b"c:" + escape(channel).encode()


def write_field(idx: int) -> bytes:
    """The stream field of one write in a `WritesSaved` entry."""
    return b"w:%d" % idx


def encode_channel_value(cv: ChannelValue) -> bytes:
    """A channel value's stream field content."""
    return pack([_s(cv.channel), orjson.dumps(cv.version), _s(cv.blob.type), cv.blob.data])


def decode_channel_value(data: bytes, payload: bool = True) -> ChannelValue:
    """A channel value from its stream field content (its blob `OMITTED` unless `payload`).

    Raises:
        ValueError: a malformed packing.
    """
    if not payload:
        channel, version = unpack_head_2_of_4(data)
        return ChannelValue(channel.decode("utf-8", "surrogatepass"), orjson.loads(version), OMITTED)
    channel, version, type_, blob = unpack(data)
    return ChannelValue(channel.decode("utf-8", "surrogatepass"), orjson.loads(version), Blob(type_.decode(), blob))


def decode_write(idx: int, data: bytes, payload: bool = True) -> PendingWrite:
    """A write from its stream field content (the index comes from the field name; its blob
    `OMITTED` unless `payload`)."""
    if not payload:
        return PendingWrite(idx, unpack_head_1_of_3(data).decode("utf-8", "surrogatepass"), OMITTED)
    channel, type_, blob = unpack(data)
    return PendingWrite(idx, channel.decode("utf-8", "surrogatepass"), Blob(type_.decode(), blob))


def _checkpoint_saved(f: Fields, payloads: bool) -> CheckpointSaved:
    if payloads:
        body_type, body_data = unpack(f[b"body"])
        body = Blob(body_type.decode(), body_data)
    else:
        unpack_none_of_2(f[b"body"])
        body = OMITTED
    return CheckpointSaved(
        thread_id=f[b"thread"].decode("utf-8", "surrogatepass"),
        checkpoint_ns=f[b"ns"].decode("utf-8", "surrogatepass"),
        checkpoint_id=f[b"cid"].decode("utf-8", "surrogatepass"),
        parent_checkpoint_id=f[b"parent"].decode("utf-8", "surrogatepass") or None,
        metadata=orjson.loads(f[b"meta"]),
        channel_versions=orjson.loads(f[b"versions"]),
        body=body,
        values=tuple([decode_channel_value(v, payloads) for k, v in f.items() if k.startswith(b"c:")]),
    )


def _writes_saved(f: Fields, payloads: bool) -> WritesSaved:
    return WritesSaved(
        thread_id=f[b"thread"].decode("utf-8", "surrogatepass"),
        checkpoint_ns=f[b"ns"].decode("utf-8", "surrogatepass"),
        checkpoint_id=f[b"cid"].decode("utf-8", "surrogatepass"),
        task_id=f[b"task"].decode("utf-8", "surrogatepass"),
        task_path=f[b"path"].decode("utf-8", "surrogatepass"),
        writes=tuple([decode_write(int(k[2:]), v, payloads) for k, v in f.items() if k.startswith(b"w:")]),
    )


def _thread_deleted(f: Fields, payloads: bool) -> ThreadDeleted:
    return ThreadDeleted(thread_id=_text(f, b"thread"))


def _values_retained(f: Fields, payloads: bool) -> ValuesRetained:
    return ValuesRetained(
        thread_id=_text(f, b"thread"),
        checkpoint_ns=_text(f, b"ns"),
        checkpoint_id=_text(f, b"cid"),
        values=tuple(decode_channel_value(v, payloads) for k, v in f.items() if k.startswith(b"c:")),
    )


def _thread_copied(f: Fields, payloads: bool) -> ThreadCopied:
    return ThreadCopied(_text(f, b"thread"), _text(f, b"source"), _text(f, b"until"))


def _thread_pruned(f: Fields, payloads: bool) -> ThreadPruned:
    return ThreadPruned(_text(f, b"thread"), _text(f, b"strategy"), int(f[b"kept"]))


def _runs_deleted(f: Fields, payloads: bool) -> RunsDeleted:
    runs = orjson.loads(f[b"runs"])
    if not isinstance(runs, list) or not all(isinstance(r, str) for r in runs):
        raise ValueError("runs must be a JSON list of strings")
    return RunsDeleted(_text(f, b"thread"), tuple(runs))


_DECODERS: dict[str, tuple[int, Callable[[Fields, bool], Event]]] = {
    CheckpointSaved.TYPE: (CheckpointSaved.VERSION, _checkpoint_saved),
    WritesSaved.TYPE: (WritesSaved.VERSION, _writes_saved),
    ThreadDeleted.TYPE: (ThreadDeleted.VERSION, _thread_deleted),
    ThreadCopied.TYPE: (ThreadCopied.VERSION, _thread_copied),
    ValuesRetained.TYPE: (ValuesRetained.VERSION, _values_retained),
    ThreadPruned.TYPE: (ThreadPruned.VERSION, _thread_pruned),
    RunsDeleted.TYPE: (RunsDeleted.VERSION, _runs_deleted),
}

UPCASTERS: dict[tuple[str, int], Callable[[Fields], Fields]] = {}
"""``(type, version) -> f`` where ``f`` turns version ``n`` fields into version ``n + 1``
fields. Empty while every type is at version 1; a new version adds one entry per step."""


def from_fields(
    fields: Mapping[bytes, bytes] | Sequence[bytes], event_id: str | None = None, *, payloads: bool = True
) -> Event:
    """Read an event from its stream fields (a mapping, or a flat ``[field, value, ...]`` list
    as a raw ``XRANGE`` reply holds them), upcasting an older schema version. With
    ``payloads=False`` every `Blob` (body, channel value, write) is `OMITTED`: enough for the
    projectors, which never read payloads, without copying them (their packing is still checked).

    Raises:
        EventDecodeError: unknown type, a version newer than this code, or a malformed field.
    """
    # A raw XRANGE entry is a list: checked first, since an ABC check (Mapping) is slow.
    if isinstance(fields, (list, tuple)) or not isinstance(fields, Mapping):
        pairs = iter(fields)
        f = dict(zip(pairs, pairs))
    else:
        f = dict(fields)
    try:
        type_name = f[b"type"].decode()
        version = int(f[b"v"])
    except (KeyError, ValueError, UnicodeDecodeError) as exc:
        raise EventDecodeError(f"event without a readable type and version: {exc!r}", event_id=event_id) from exc
    if type_name not in _DECODERS:
        raise EventDecodeError(f"unknown event type {type_name!r}", event_id=event_id)
    current, decode = _DECODERS[type_name]
    if version > current:
        raise EventDecodeError(
            f"{type_name} v{version} is newer than this streamsaver reads (v{current})", event_id=event_id
        )
    while version < current:
        step = UPCASTERS.get((type_name, version))
        if step is None:
            raise EventDecodeError(f"no upcaster from {type_name} v{version}", event_id=event_id)
        f, version = step(f), version + 1
    try:
        return decode(f, payloads)
    except (KeyError, ValueError, TypeError, UnicodeDecodeError, orjson.JSONDecodeError) as exc:
        raise EventDecodeError(f"malformed {type_name} field: {exc!r}", event_id=event_id) from exc
