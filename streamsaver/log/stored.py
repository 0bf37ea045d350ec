"""The stored form of events: stream fields, converted in one place, and feed pointers.

A log entry is a flat map of binary-safe stream fields (names in `streamsaver.log.fields`).
``type`` and ``v`` (schema version) lead; `to_fields` writes the current version and
`from_fields` reads any known version, lifting old ones through `UPCASTERS` one version at a
time. Each payload has a field of its own, which the views point at
(``streamsaver/scripts/_read.lua`` reads them there):

* ``body``: the checkpoint body, packed ``(type, bytes)``;
* ``c:<escaped channel>``: one new channel value, packed ``(channel, version JSON, type, bytes)``;
* ``w:<idx>``: one write, packed ``(channel, type, bytes)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache

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
from streamsaver.log.events import (
    OMITTED,
    Blob,
    ChannelValue,
    CheckpointSaved,
    Event,
    PendingWrite,
    RunsDeleted,
    ThreadCopied,
    ThreadDeleted,
    ThreadPruned,
    ValuesRetained,
    WritesSaved,
)
from streamsaver.log.fields import (
    BODY,
    CHANNEL_PREFIX,
    CHECKPOINT_ID,
    KEPT,
    METADATA,
    NAMESPACE,
    PARENT,
    RUNS,
    SOURCE,
    STRATEGY,
    TASK,
    TASK_PATH,
    THREAD,
    TYPE,
    UNTIL,
    VERSION,
    VERSIONS,
    WRITE_PREFIX,
)

__all__ = [
    "UPCASTERS",
    "channel_field",
    "decode_channel_value",
    "decode_write",
    "encode_channel_value",
    "feed_pointer",
    "from_fields",
    "to_fields",
    "write_field",
]

Fields = dict[bytes, bytes]

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
            TYPE: _s(event.TYPE),
            VERSION: b"%d" % event.VERSION,
            THREAD: _s(event.thread_id),
            NAMESPACE: _s(event.checkpoint_ns),
            CHECKPOINT_ID: _s(event.checkpoint_id),
            PARENT: _s(event.parent_checkpoint_id or ""),
            METADATA: strict_json(event.metadata),
            VERSIONS: strict_json(event.channel_versions),
            BODY: pack([_s(event.body.type), event.body.data]),
        }
        for cv in event.values:
            fields[channel_field(cv.channel)] = encode_channel_value(cv)
        return fields
    if isinstance(event, WritesSaved):
        fields = {
            TYPE: _s(event.TYPE),
            VERSION: b"%d" % event.VERSION,
            THREAD: _s(event.thread_id),
            NAMESPACE: _s(event.checkpoint_ns),
            CHECKPOINT_ID: _s(event.checkpoint_id),
            TASK: _s(event.task_id),
            TASK_PATH: _s(event.task_path),
        }
        for w in event.writes:
            fields[write_field(w.idx)] = pack([_s(w.channel), _s(w.blob.type), w.blob.data])
        return fields
    head: Fields = {TYPE: _s(event.TYPE), VERSION: b"%d" % event.VERSION, THREAD: _s(event.thread_id)}
    return head | _maintenance_fields(event)


def _maintenance_fields(event: Event) -> Fields:
    if isinstance(event, ValuesRetained):
        return {NAMESPACE: _s(event.checkpoint_ns), CHECKPOINT_ID: _s(event.checkpoint_id)} | {
            channel_field(cv.channel): encode_channel_value(cv) for cv in event.values
        }
    if isinstance(event, ThreadCopied):
        return {SOURCE: _s(event.source_thread_id), UNTIL: _s(event.until)}
    if isinstance(event, ThreadPruned):
        return {STRATEGY: _s(event.strategy), KEPT: b"%d" % event.kept}
    if isinstance(event, RunsDeleted):
        return {RUNS: orjson.dumps(list(event.run_ids))}
    return {}


@lru_cache(maxsize=65536)
def channel_field(channel: str) -> bytes:
    """The stream field of a channel value in a `CheckpointSaved` entry."""
    # Cached: the same channels recur in every event (and escaping runs a regex).
    return CHANNEL_PREFIX + escape(channel).encode()


def write_field(idx: int) -> bytes:
    """The stream field of one write in a `WritesSaved` entry."""
    return WRITE_PREFIX + b"%d" % idx


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
        body_type, body_data = unpack(f[BODY])
        body = Blob(body_type.decode(), body_data)
    else:
        unpack_none_of_2(f[BODY])
        body = OMITTED
    return CheckpointSaved(
        thread_id=f[THREAD].decode("utf-8", "surrogatepass"),
        checkpoint_ns=f[NAMESPACE].decode("utf-8", "surrogatepass"),
        checkpoint_id=f[CHECKPOINT_ID].decode("utf-8", "surrogatepass"),
        parent_checkpoint_id=f[PARENT].decode("utf-8", "surrogatepass") or None,
        metadata=orjson.loads(f[METADATA]),
        channel_versions=orjson.loads(f[VERSIONS]),
        body=body,
        values=tuple([decode_channel_value(v, payloads) for k, v in f.items() if k.startswith(CHANNEL_PREFIX)]),
    )


def _writes_saved(f: Fields, payloads: bool) -> WritesSaved:
    return WritesSaved(
        thread_id=f[THREAD].decode("utf-8", "surrogatepass"),
        checkpoint_ns=f[NAMESPACE].decode("utf-8", "surrogatepass"),
        checkpoint_id=f[CHECKPOINT_ID].decode("utf-8", "surrogatepass"),
        task_id=f[TASK].decode("utf-8", "surrogatepass"),
        task_path=f[TASK_PATH].decode("utf-8", "surrogatepass"),
        writes=tuple(
            [decode_write(int(k[len(WRITE_PREFIX):]), v, payloads) for k, v in f.items() if k.startswith(WRITE_PREFIX)]
        ),
    )


def _thread_deleted(f: Fields, payloads: bool) -> ThreadDeleted:
    return ThreadDeleted(thread_id=_text(f, THREAD))


def _values_retained(f: Fields, payloads: bool) -> ValuesRetained:
    return ValuesRetained(
        thread_id=_text(f, THREAD),
        checkpoint_ns=_text(f, NAMESPACE),
        checkpoint_id=_text(f, CHECKPOINT_ID),
        values=tuple(decode_channel_value(v, payloads) for k, v in f.items() if k.startswith(CHANNEL_PREFIX)),
    )


def _thread_copied(f: Fields, payloads: bool) -> ThreadCopied:
    return ThreadCopied(_text(f, THREAD), _text(f, SOURCE), _text(f, UNTIL))


def _thread_pruned(f: Fields, payloads: bool) -> ThreadPruned:
    return ThreadPruned(_text(f, THREAD), _text(f, STRATEGY), int(f[KEPT]))


def _runs_deleted(f: Fields, payloads: bool) -> RunsDeleted:
    runs = orjson.loads(f[RUNS])
    if not isinstance(runs, list) or not all(isinstance(r, str) for r in runs):
        raise ValueError("runs must be a JSON list of strings")
    return RunsDeleted(_text(f, THREAD), tuple(runs))


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
        f = dict(zip(pairs, pairs, strict=True))
    else:
        f = dict(fields)
    try:
        type_name = f[TYPE].decode()
        version = int(f[VERSION])
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


def feed_pointer(event: Event) -> list[str | bytes | int]:
    """The fields of the partition-feed pointer of `event`, after ``id`` (its log entry id)."""
    fields: list[str | bytes | int] = [TYPE, event.TYPE, THREAD, event.thread_id]
    if isinstance(event, (CheckpointSaved, WritesSaved, ValuesRetained)):
        fields += [NAMESPACE, event.checkpoint_ns, CHECKPOINT_ID, event.checkpoint_id]
    return fields
