"""Reading and rewriting a whole log, without I/O, for any domain.

`read_log` and `decode_log` read a log's entries; `rewrite_call` replaces (or extends) a log and
refolds its views from the new entries in one atomic ``rewrite.lua`` call; `whole_values` keeps
the entries it writes under new ids (or without the entries their deltas link to) readable.
What a rewrite keeps is the domain's decision (for checkpoints:
`streamsaver.checkpoints.compaction`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from streamsaver.errors import PayloadDecodeError
from streamsaver.log import compression, deltas
from streamsaver.log.append import view_blocks
from streamsaver.log.domain import Domain
from streamsaver.log.events import (
    Blob,
    ChannelValue,
    CheckpointSaved,
    Event,
    ValuesRetained,
    WritesSaved,
)
from streamsaver.log.keys import Keyspace, ViewName
from streamsaver.log.stored import encode_channel_value, feed_pointer, from_fields, to_fields

__all__ = ["Entry", "decode_log", "erase_call", "read_log", "rewrite_call", "whole_values"]

Entry = tuple[str, Event]
"""A log entry: its stream id and its event."""


def read_log(log: str, until: str = "+") -> list[str | bytes | int]:
    """The read of a whole log, or of its entries up to the inclusive bound `until`."""
    return ["XRANGE", log, "-", until]


def decode_log(reply: Sequence[Any], decode: Callable[..., Event] = from_fields) -> list[Entry]:
    """The entries of an ``XRANGE`` reply, decoded (by `decode`, a domain's `Domain.decode`).

    Raises:
        EventDecodeError: an entry this code cannot read.
    """
    entries: list[Entry] = []
    for raw_id, fields in reply:
        entry_id = raw_id.decode() if isinstance(raw_id, bytes) else str(raw_id)
        flat = fields if isinstance(fields, dict) else dict(zip(fields[::2], fields[1::2], strict=False))
        entries.append((entry_id, decode(flat, entry_id)))
    return entries


def rewrite_call(
    domain: Domain,
    keyspace: Keyspace,
    views: Sequence[ViewName],
    thread_id: str,
    *,
    guard: str,
    replace_log: bool | None,
    entries: Sequence[tuple[str, Event]],
    pointers: bool,
    ttl: Sequence[str | bytes | int] = (),
) -> list[str | bytes | int]:
    """The EVALSHA arguments of one ``rewrite.lua`` call on the log of `thread_id`.

    Args:
        guard: the last log entry id read ("" when no log was read); the call fails with a
            ``STALE`` error when the log changed since.
        replace_log: replace the log and refold the views; False: append after the log's end;
            None: only refold the views from `entries`, already logged under their ids (the
            projector worker, for a view it keeps).
        entries: (id, event): the id to add the entry under, ``"*"`` for a new one.
        pointers: give every entry a partition-feed pointer (else only ``"*"`` entries get one).
        ttl: the log's TTL block (`streamsaver.log.ttl.ttl_block`), empty for none.
    """
    keys = keyspace.thread(thread_id)
    mode = "refold" if replace_log is None else "replace" if replace_log else "append"
    args: list[str | bytes | int] = [guard, mode]
    declared: dict[str | bytes | int, None] = dict.fromkeys((keys.log, keys.feed, keys.positions))
    args += view_blocks(domain, domain.erase(thread_id), keyspace, views, declared)
    args.append(len(entries))
    for entry_id, event in entries:
        pointer = feed_pointer(event) if (pointers or entry_id == "*") and replace_log is not None else []
        fields = [x for pair in to_fields(event).items() for x in pair]
        args += [entry_id, len(pointer), *pointer, len(fields), *fields]
        args += view_blocks(domain, event, keyspace, views, declared)
    args += ttl
    # Every key the ops name is declared after the three the script reads (Redis Cluster).
    return domain.scripts.rewrite.evalsha_args(list(declared), args)


def erase_call(
    domain: Domain,
    keyspace: Keyspace,
    log_id: str,
    views: Sequence[ViewName],
    *,
    guard: str,
    kept: Sequence[Entry],
    erase: Sequence[Sequence[str | bytes]],
) -> list[str | bytes | int]:
    """The EVALSHA arguments of one ``rewrite.lua`` call that erases part of the log `log_id`
    (any domain's, `Domain.log_keys`): the log becomes `kept` (each entry under its own id, so
    a replay of what stays gives the views it had), and the commands `erase` run first, in the
    first of `views` (they delete what the erased entries made: documents, set members, feed
    pointers, every one a key of the log's partition). The kept entries are not refolded (the
    views already hold them) and get no new feed pointer; the positions of `views` become the
    last kept id. Fails with ``STALE`` when the log's last id is not `guard`."""
    keys = domain.log_keys(keyspace, log_id)
    args: list[str | bytes | int] = [guard, "replace", len(views)]
    for n, view in enumerate(views):
        ops = erase if n == 0 else ()
        args += [view, len(ops)]
        for command in ops:
            args += [len(command), *command]
    args.append(len(kept))
    for entry_id, event in kept:
        fields = [x for pair in domain.encode(event).items() for x in pair]
        args += [entry_id, 0, len(fields), *fields, len(views)]
        for view in views:
            args += [view, 0]
    named = [key for command in erase for key in (command[1:] if command[0] == "DEL" else command[1:2])]
    declared = dict.fromkeys([keys.log, keys.feed, keys.positions, *named])
    return domain.scripts.rewrite.evalsha_args(list(declared), args)


_E = TypeVar("_E", bound=Event)


def whole_values(source: Sequence[Entry], out: Sequence[tuple[str, _E]]) -> list[tuple[str, _E]]:
    """`out` (events of the log `source`, each under the id it is written with: its own, or
    ``"*"`` for a new one) with every delta (`streamsaver.log.deltas`) whose link `out` does not
    write unchanged under the same id replaced by its whole value: a rewrite that drops or
    renumbers entries never leaves a delta pointing at nothing (``append.lua`` would refuse
    it; a reader could not join it).

    Raises:
        PayloadDecodeError: a delta of `source` whose chain is already broken.
    """
    original = {
        (entry_id, cv.channel): encode_channel_value(cv)
        for entry_id, event in source
        if isinstance(event, (CheckpointSaved, ValuesRetained))
        for cv in event.values
    }
    written: dict[tuple[str, str], bytes] = {}
    result: list[tuple[str, _E]] = []
    store = compression.shrink if _writer_compresses(source) else compression.keep
    for entry_id, event in out:
        kept = event
        if isinstance(event, (CheckpointSaved, ValuesRetained)) and event.values:
            values = tuple(_whole(entry_id, cv, original, written, store) for cv in event.values)
            if values != event.values:
                kept = replace(event, values=values)
        result.append((entry_id, kept))
    return result


def _writer_compresses(source: Sequence[Entry]) -> bool:
    """Whether the writer of the log `source` compresses payloads: whether any payload in it
    (a body, a channel value, a delta's elements, a write) is stored compressed. A rewrite
    stores a re-joined value as that writer would store it whole: a saver made with
    ``compression=None`` never finds a compressed payload in its log after a rewrite. Not the
    base alone: a compressing writer leaves a base under `compression.MIN_BYTES` uncompressed
    while the values joined with it may be large (and an old chain's link is a delta)."""
    for _, event in source:
        if isinstance(event, CheckpointSaved) and compression.is_compressed(event.body):
            return True
        if isinstance(event, (CheckpointSaved, ValuesRetained)) and any(
            compression.is_compressed(cv.blob) for cv in event.values
        ):
            return True
        if isinstance(event, WritesSaved) and any(compression.is_compressed(w.blob) for w in event.writes):
            return True
    return False


def _whole(
    entry_id: str,
    cv: ChannelValue,
    original: Mapping[tuple[str, str], bytes],
    written: dict[tuple[str, str], bytes],
    store: Callable[[Blob], Blob],
) -> ChannelValue:
    if deltas.is_delta(cv.blob.type):
        try:
            link = deltas.split(cv.blob.type, cv.blob.data).link
            if entry_id == "*" or written.get((link, cv.channel)) != original.get((link, cv.channel)):
                whole = compression.joined(cv.blob, lambda at: original.get((at, cv.channel)))
                cv = ChannelValue(cv.channel, cv.version, store(whole))  # as its writer stores (see above)
        except ValueError as exc:
            message = f"cannot join the delta of channel {cv.channel!r}: {exc}"
            raise PayloadDecodeError(message, event_id=entry_id) from exc
    if entry_id != "*":
        written[(entry_id, cv.channel)] = encode_channel_value(cv)
    return cv
