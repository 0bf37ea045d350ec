"""What a subscriber's handler receives, and the filters applied before it; no I/O.

A partition-feed pointer names the log entry of one event and carries type, thread, namespace
and checkpoint id, nothing the thread's erasure would have to chase (``delete_thread`` erases
the log; the pointers stay). A `FeedEvent` is built from the pointer alone; the log entry (a
checkpoint's metadata, the event's payload) is read only when the subscriber loads it with its
batch (``load_metadata``, a metadata filter, ``prefetch``) or when the handler asks
(`metadata`, `record`, `payload`, or the ``a``-prefixed async twins), through the
`EntrySource` the subscriber's shell provides.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, get_args

import orjson
from langgraph.checkpoint.serde.base import SerializerProtocol

from streamsaver.errors import (
    ConfigurationError,
    EventDecodeError,
    InvalidInputError,
    PayloadDecodeError,
)
from streamsaver.log import compression, deltas
from streamsaver.log.audit import AUDIT_TYPES
from streamsaver.log.codec import escape, unpack, unpack_head
from streamsaver.log.events import (
    CheckpointSaved,
    Event,
    ThreadDeleted,
    ValuesRetained,
    WritesSaved,
)
from streamsaver.log.fields import CHANNEL_PREFIX, EMPTY_TYPE, METADATA
from streamsaver.log.stored import channel_field, from_fields

__all__ = ["EntrySource", "EventFilter", "FeedEvent", "decode_payload"]

Entry = Mapping[bytes, bytes]
EVENT_TYPES = frozenset(cls.TYPE for cls in get_args(Event)) | AUDIT_TYPES
"""The type names a feed entry can carry (the logs' events, and the agent audit's)."""


class EntrySource(Protocol):
    """Reads one log entry (its fields; empty when the entry is gone)."""

    def fetch_entry(self, log_key: str, log_id: str) -> Entry:
        """The entry, with a sync client."""

    async def afetch_entry(self, log_key: str, log_id: str) -> Entry:
        """The entry, with an async client."""


def _comparable(value: Any) -> tuple[str, Any]:
    if isinstance(value, bool):
        return "bool", value
    if isinstance(value, (int, float)):
        return "number", float(value)
    try:
        return "json", orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return "other", value


@dataclass(frozen=True)
class EventFilter:
    """Which events reach the handler: `types` (None: all) and `metadata`, top-level keys
    that must equal (``2 == 2.0``, ``True != 1``); only checkpoints have metadata, so a
    metadata filter passes checkpoints only."""

    types: frozenset[str] | None = None
    metadata: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, types: Collection[str] | None, metadata: Mapping[str, Any] | None) -> EventFilter:
        """A filter from a subscriber's options.

        Raises:
            InvalidInputError: a filter that can match nothing: no types, a name that is no
                event type (or a plain string: one "type" per character), metadata that is not
                a mapping, or a metadata filter (checkpoints only) without ``CheckpointSaved``.
        """
        if types is not None:
            if isinstance(types, (str, bytes)) or not all(isinstance(t, str) for t in types):
                raise InvalidInputError(f"types must be a list of event type names, not {types!r}")
            unknown = sorted(set(types) - EVENT_TYPES)
            if not types or unknown:
                raise InvalidInputError(
                    f"types {unknown or '(none)'} match no event; event types are {sorted(EVENT_TYPES)}"
                )
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidInputError(f"metadata must be a mapping, not {type(metadata).__name__}")
        if metadata and types is not None and CheckpointSaved.TYPE not in types:
            raise InvalidInputError("a metadata filter passes checkpoints only: types must include CheckpointSaved")
        return cls(frozenset(types) if types is not None else None, dict(metadata) if metadata else None)

    def admits_type(self, type_: str) -> bool:
        """Whether the event type passes (before metadata is known)."""
        return (self.types is None or type_ in self.types) and (
            not self.metadata or type_ == CheckpointSaved.TYPE
        )

    def admits(self, type_: str, metadata: Mapping[str, Any] | None) -> bool:
        """Whether an event of `type_` with `metadata` reaches the handler."""
        if not self.admits_type(type_):
            return False
        if not self.metadata:
            return True
        md = metadata or {}
        return all(k in md and _comparable(md[k]) == _comparable(v) for k, v in self.metadata.items())


Links = Mapping[tuple[str, str], bytes | None]
"""The values deltas extend: (log entry id, channel) -> that entry's stored channel value (None:
the entry or its value is gone)."""


def decode_payload(event: Event, serde: SerializerProtocol, links: Links | None = None) -> dict[str, Any]:
    """The values of a logged event, decoded with `serde`; a channel value stored as a delta
    (`streamsaver.log.deltas`) is joined with the values of its chain in `links`.

    Returns:
        For a checkpoint: ``checkpoint`` (the body, with ``channel_values`` holding the
        channels this checkpoint changed), ``metadata``, ``parent_checkpoint_id``; for writes:
        ``task_id``, ``task_path`` and ``writes``, a list of ``(channel, value)``; for a
        deletion: an empty dict.
    """
    if isinstance(event, CheckpointSaved):
        body = dict(compression.load(serde, event.body))
        body["channel_values"] = {
            cv.channel: compression.load_linked(serde, cv.blob.type, cv.blob.data, _lookup(links or {}, cv.channel))
            for cv in event.values if cv.blob.type != EMPTY_TYPE
        }
        return {"checkpoint": body, "metadata": dict(event.metadata),
                "parent_checkpoint_id": event.parent_checkpoint_id}
    if isinstance(event, WritesSaved):
        return {"task_id": event.task_id, "task_path": event.task_path,
                "writes": [(w.channel, compression.load(serde, w.blob)) for w in event.writes]}
    return {}


def _lookup(links: Links, channel: str) -> deltas.Lookup:
    return lambda link: links.get((link, channel))


class FeedEvent:
    """One event as a subscriber's handler sees it.

    Attributes:
        id: stable across re-deliveries (log entry id and escaped thread id): the key for
            idempotent handlers.
        type: ``CheckpointSaved``, ``WritesSaved`` or ``ThreadDeleted``.
        thread_id, checkpoint_ns, checkpoint_id: where it happened (the last two None for a
            deletion).
        metadata: a checkpoint's metadata (None for other events, and when the log entry is
            gone); read from the log entry on first use unless loaded with the batch (an async
            handler uses `ametadata` then).
        partition, feed_id, log_id: the feed entry and the log entry it points at.
        deliveries: 1 on the first attempt, n after n - 1 failed attempts.
    """

    __slots__ = ("_entry", "_links", "_read", "_serde", "_source", "checkpoint_id", "checkpoint_ns", "deliveries",
                 "feed_id",
                 "log_id", "log_key", "partition", "thread_id", "type")

    def __init__(self, *, type_: str, thread_id: str, checkpoint_ns: str | None, checkpoint_id: str | None,
                 partition: int, feed_id: str, log_id: str, log_key: str, deliveries: int,
                 serde: SerializerProtocol, source: EntrySource | None = None) -> None:
        self.type, self.thread_id = type_, thread_id
        self.checkpoint_ns, self.checkpoint_id = checkpoint_ns, checkpoint_id
        self.partition, self.feed_id, self.log_id = partition, feed_id, log_id
        self.log_key, self.deliveries, self._serde, self._source = log_key, deliveries, serde, source
        self._entry: Entry | None = None
        self._links: dict[tuple[str, str], bytes | None] = {}
        self._read: tuple[Entry, Event | None] | None = None

    def __repr__(self) -> str:
        where = f"ns={self.checkpoint_ns!r} cid={self.checkpoint_id}"
        return f"FeedEvent({self.type} {self.thread_id!r} {where} #{self.id})"

    @property
    def id(self) -> str:
        """A stable id: the same on every delivery of this event, unique per event."""
        return f"{self.log_id}/{escape(self.thread_id)}"

    @property
    def time(self) -> datetime:
        """When the event was appended (the log entry id's milliseconds, UTC)."""
        return datetime.fromtimestamp(int(self.log_id.split("-", 1)[0]) / 1000, tz=UTC)

    def set_entry(self, entry: Entry) -> None:
        """Hand over the log entry's fields read in the subscriber's batch (empty: gone)."""
        self._entry = entry

    def entry(self) -> Entry | None:
        """The log entry's fields, if read (empty: gone); None when not read yet."""
        return self._entry

    def links_wanted(self) -> list[tuple[str, str]]:
        """The (log entry id, channel) pairs `payload` would read next to join the deltas of
        this event's loaded entry with what they extend, given the links handed over so far;
        empty when nothing more is needed, the entry is not loaded, or it cannot be decoded
        (`payload` reports that)."""
        if self._entry is None or self.type != CheckpointSaved.TYPE or not _holds_delta(self._entry):
            return []
        try:
            event = self._record(self._entry)
        except EventDecodeError:
            return []
        if event is None:
            return []
        wanted, seen = [], dict(self._links)
        while (link := missing_link(event, seen)) is not None:
            wanted.append(link)
            seen[link] = None  # ends that chain here: the next call asks past it once it is held
        return wanted

    def set_link(self, link: tuple[str, str], entry: Entry) -> None:
        """Hand over the log entry (its fields; empty: gone) that `link` (from `links_wanted`)
        names, read in the subscriber's batch: `payload` then reads nothing for it."""
        self._links[link] = _held(entry, link[1])

    def _metadata(self) -> Mapping[str, Any] | None:
        return metadata_of((self._entry or {}).get(METADATA)) if self.type == CheckpointSaved.TYPE else None

    @property
    def metadata(self) -> Mapping[str, Any] | None:
        """A checkpoint's metadata; None for other events or when its log entry is gone.

        Raises:
            ConfigurationError: the entry was not loaded with the batch and the subscriber has
                an async client (use `ametadata`, or ``load_metadata=True``).
        """
        if self._entry is None and self.type == CheckpointSaved.TYPE:
            self._entry = self._source_or_fail().fetch_entry(self.log_key, self.log_id)
        return self._metadata()

    async def ametadata(self) -> Mapping[str, Any] | None:
        """`metadata` with the async client."""
        if self._entry is None and self.type == CheckpointSaved.TYPE:
            self._entry = await self._source_or_fail().afetch_entry(self.log_key, self.log_id)
        return self._metadata()

    def _record(self, entry: Entry) -> Event | None:
        if self.type == ThreadDeleted.TYPE:
            return ThreadDeleted(self.thread_id)
        if not entry:
            return None
        if self._read is not None and self._read[0] is entry:
            return self._read[1]  # events are immutable: decoded once (prefetch, then payload)
        event = self._checked(from_fields(entry, self.log_id))
        self._read = (entry, event)
        return event

    def _checked(self, event: Event) -> Event | None:
        retained = isinstance(event, ValuesRetained) and event.thread_id == self.thread_id
        if self.type == CheckpointSaved.TYPE and retained:
            return None  # the checkpoint was pruned since: its entry keeps only values others point at
        if event.thread_id != self.thread_id or self.type != event.TYPE:
            raise EventDecodeError(f"log entry holds a {event.TYPE} of {event.thread_id!r}, not this event",
                                   event_id=self.log_id)
        return event

    def _source_or_fail(self) -> EntrySource:
        if self._source is None:
            raise ConfigurationError("this event carries no way to read its log entry")
        return self._source

    def record(self) -> Event | None:
        """The logged event (`streamsaver.log.events`), its payloads in their stored form (decode
        them with `payload`, or `streamsaver.log.compression.load`); None when its log entry is gone (the
        thread was deleted since) or, for a checkpoint, was pruned since (its entry became a
        ``ValuesRetained``). Reads the entry unless prefetched.

        Raises:
            EventDecodeError: the entry cannot be read as this event.
        """
        if self._entry is None and self.type != ThreadDeleted.TYPE:
            self._entry = self._source_or_fail().fetch_entry(self.log_key, self.log_id)
        return self._record(self._entry or {})

    async def arecord(self) -> Event | None:
        """`record` with the async client."""
        if self._entry is None and self.type != ThreadDeleted.TYPE:
            self._entry = await self._source_or_fail().afetch_entry(self.log_key, self.log_id)
        return self._record(self._entry or {})

    def payload(self) -> dict[str, Any] | None:
        """The event's values decoded with the saver's serde (see `decode_payload`); None when
        the log entry is gone.

        Raises:
            PayloadDecodeError: a payload the serde refuses or a damaged compressed one;
                names the log entry.
        """
        event = self.record()
        if event is None:
            return None
        links = dict(self._links)  # those read with the batch (prefetch)
        while (wanted := missing_link(event, links)) is not None:  # one log read per link
            links[wanted] = _held(self._source_or_fail().fetch_entry(self.log_key, wanted[0]), wanted[1])
        return self._decoded(event, links)

    async def apayload(self) -> dict[str, Any] | None:
        """`payload` with the async client."""
        event = await self.arecord()
        if event is None:
            return None
        links = dict(self._links)  # those read with the batch (prefetch)
        while (wanted := missing_link(event, links)) is not None:
            links[wanted] = _held(await self._source_or_fail().afetch_entry(self.log_key, wanted[0]), wanted[1])
        return self._decoded(event, links)

    def _decoded(self, event: Event, links: Links) -> dict[str, Any]:
        try:
            return decode_payload(event, self._serde, links)
        except compression.LOAD_ERRORS as exc:
            raise PayloadDecodeError(f"cannot decode the payload of {event.TYPE}: {exc}", event_id=self.log_id) from exc


def missing_link(event: Event, links: Links) -> tuple[str, str] | None:
    """The next (log entry id, channel) a delta of `event` extends that `links` lacks; None
    when every chain is there (or broken: joining it then reports the break)."""
    if not isinstance(event, CheckpointSaved):
        return None
    for cv in event.values:
        type_name, data, hops = cv.blob.type, cv.blob.data, 0
        while deltas.is_delta(type_name) and hops < deltas.READ_LIMIT:
            try:
                link = deltas.split(type_name, data).link
            except ValueError:
                break
            if (link, cv.channel) not in links:
                return link, cv.channel
            held = links[(link, cv.channel)]
            if held is None:
                break
            try:
                type_bytes, data = unpack(held)[2:4]
                type_name = type_bytes.decode()
            except ValueError:  # UnicodeDecodeError too: the join reports a damaged link
                break
            hops += 1
    return None


_DELTA_MARK = deltas.MARK.encode()


def _holds_delta(entry: Entry) -> bool:
    """Whether a channel value of the log entry may be a delta (read from the packing's type
    part, without decoding the event); a malformed one counts, for the decode to report."""
    for key, value in entry.items():
        if key.startswith(CHANNEL_PREFIX):
            try:
                if unpack_head(value, 3, 4)[2].startswith(_DELTA_MARK):
                    return True
            except ValueError:
                return True
    return False


def _held(entry: Entry | None, channel: str) -> bytes | None:
    return entry.get(channel_field(channel)) if entry else None


def metadata_of(raw: bytes | None) -> Mapping[str, Any] | None:
    """The metadata a log entry's ``meta`` field holds (None when absent or not an object)."""
    if raw is None:
        return None
    value = orjson.loads(raw)
    return value if isinstance(value, dict) else None
