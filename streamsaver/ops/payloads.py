"""Check that every payload the thread logs hold still decodes (part of `verify`).

Views hold pointers into the logs, not payloads, so comparing views with a fold of the logs says
nothing of a payload damaged in a log (a flipped byte, a truncated field): its checkpoint fails
only when read. `check_payloads` reads every log and loads each payload (a checkpoint's body,
its channel values, joined with the values a delta extends, and its writes) with the serde, as a
read would, and reports each that does not load, naming the log entry.

A damage that leaves a valid encoding of another value (a byte flipped inside a string) is not
seen: payloads carry no digest. An `EncryptedSerializer` (pass it as `serde`) checks its MAC;
without it, encrypted payloads are counted, not checked.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol

from streamsaver.errors import EventDecodeError
from streamsaver.log import compression
from streamsaver.log.events import OMITTED, Blob, CheckpointSaved, WritesSaved
from streamsaver.log.fields import EMPTY_TYPE
from streamsaver.log.keys import Keyspace
from streamsaver.log.serde import SafeSerializer
from streamsaver.log.stored import channel_field, from_fields

__all__ = ["CorruptPayload", "PayloadCheck", "check_payloads"]

_PAGE = 500


@dataclass(frozen=True)
class CorruptPayload:
    """A payload that does not load: its log, entry id, which payload, and why."""

    log: str
    entry: str
    payload: str
    error: str


@dataclass
class PayloadCheck:
    """What `check_payloads` found: payloads loaded, and those that did not (the first few kept)."""

    checked: int = 0
    corrupt: int = 0
    encrypted: int = 0
    """Payloads left unchecked: encrypted (a serde type ``...+aes``) while no `serde` was given."""
    details: list[CorruptPayload] = field(default_factory=list)


def _entries(client: Any, log: bytes) -> Iterator[tuple[str, list[bytes]]]:
    start = "-"
    while True:
        page = client.xrange(log, start, "+", count=_PAGE)
        for raw_id, fields in page:
            yield raw_id.decode(), [x for pair in fields.items() for x in pair] if isinstance(fields, dict) else fields
        if len(page) < _PAGE:
            return
        start = "(" + page[-1][0].decode()


def _payloads(event: Any) -> Iterator[tuple[str, Blob, str | None]]:
    """(what, blob, channel when a delta of it may link elsewhere) of each payload of `event`."""
    if isinstance(event, CheckpointSaved):
        yield "checkpoint body", event.body, None
        for value in event.values:
            yield f"channel {value.channel!r}", value.blob, value.channel
    elif isinstance(event, WritesSaved):
        for write in event.writes:
            yield f"write {write.idx} to {write.channel!r}", write.blob, None


def _load(loader: SerializerProtocol, held: dict[str, dict[bytes, bytes]], blob: Blob, channel: str | None) -> None:
    """Load `blob` as a read would (a channel value joined with what its delta extends, found in
    the entries `held` of its log)."""
    if channel is None:
        compression.load(loader, blob)
        return
    name = channel_field(channel)
    compression.load_linked(loader, blob.type, blob.data, lambda link: held.get(link, {}).get(name))


def check_payloads(
    client: Any, prefix: str, serde: SerializerProtocol | None = None, *, limit: int = 20
) -> PayloadCheck:
    """Load every payload of every thread log under `prefix` with `serde` (default: the savers'
    `SafeSerializer`); one XRANGE per 500 entries of a log. Each payload that does not load
    (the serde or the decompression raises a ValueError, TypeError, KeyError or IndexError) is
    counted, the first `limit` detailed.

    Raises:
        redis.exceptions.RedisError: the server failed a command.
    """
    loader = serde or SafeSerializer()
    check = PayloadCheck()
    for log in client.scan_iter(match=Keyspace(prefix).logs_pattern(), count=1000, _type="stream"):
        held: dict[str, dict[bytes, bytes]] = {}
        for entry, fields in _entries(client, log):
            held[entry] = dict(zip(fields[::2], fields[1::2], strict=True))
            try:
                event = from_fields(fields, entry)
            except EventDecodeError:
                continue  # an event this code cannot read: the replay of verify reports it
            for what, blob, channel in _payloads(event):
                if blob is OMITTED or blob.type == EMPTY_TYPE:
                    continue
                if serde is None and "+" in blob.type:
                    check.encrypted += 1
                    continue
                check.checked += 1
                try:
                    _load(loader, held, blob, channel)
                except (ValueError, TypeError, KeyError, IndexError) as exc:
                    check.corrupt += 1
                    if len(check.details) < limit:
                        check.details.append(CorruptPayload(log.decode(), entry, what, f"{type(exc).__name__}: {exc}"))
    return check
