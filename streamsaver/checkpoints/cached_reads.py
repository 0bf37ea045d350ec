"""`get_tuple`, and `list`'s pages of one thread, through the read cache, without I/O: one
``read_cached.lua`` call that names the log entries the saver holds of the thread
(`entry_cache.Claim`), and the tuples read from its reply, the payloads taken from the entries
held or shipped. Still one round trip, hit or miss.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple, DeltaChannelHistory
from langgraph.checkpoint.serde.base import SerializerProtocol

from projectors import full
from streamsaver.checkpoints import history
from streamsaver.checkpoints.append import namespace_of, thread_id_of
from streamsaver.checkpoints.entry_bytes import stored_type
from streamsaver.checkpoints.entry_cache import CLAIM_LIMIT, Claim, Entry, EntryCache, wire_bytes
from streamsaver.checkpoints.guesses import Guesses, expected, guessable
from streamsaver.checkpoints.listing import ListPager
from streamsaver.checkpoints.reads import Decoded, decode_row
from streamsaver.log.deltas import Expand
from streamsaver.log.fields import EMPTY_TYPE
from streamsaver.log.keys import Keyspace, ViewName
from streamsaver.log.routing import Command
from streamsaver.log.stored import channel_field
from streamsaver.scripts import READ_CACHED

__all__ = [
    "CachedGet", "CachedHistory", "CachedPages", "EntryLinks", "cached_get", "cached_history", "page_claim",
    "page_guess", "wire_bytes",
]

_BODY = b"body"
_EMPTY = EMPTY_TYPE.encode()


@dataclass(frozen=True)
class CachedGet:
    """One `get_tuple` through the cache: the command to send, what it claimed, and the
    checkpoint asked for (namespace, and id or b"" for the latest): `guess` decodes its
    expected values while the reply is on its way (`guesses`)."""

    command: Command
    claim: Claim
    ns: bytes = b""
    checkpoint_id: bytes = b""
    expand: Expand | None = None
    """How its compressed values expand (the cache's `compression.Expanded`)."""
    guesses: Guesses = field(default_factory=Guesses)

    def guess(self, serde: SerializerProtocol) -> None:
        """Decode the channel values the reply most likely names, from the entries claimed
        (run between the send and the reply: `streamsaver.log.program.Call.meanwhile`)."""
        entries = self.claim.entries
        if entries:
            stored = expected(entries, self.ns, self.checkpoint_id)
            self.guesses.decode(serde, stored, EntryLinks(entries), self.expand)

    def read(self, cache: EntryCache, serde: SerializerProtocol, reply: Sequence[Any]) -> CheckpointTuple | None:
        """The tuple of `reply` (None: no such checkpoint); the cache takes in what it shipped.

        Raises:
            PayloadDecodeError: a payload is missing, malformed or refused by the serde.
        """
        entries = cache.absorb(self.claim, bytes(reply[0]), reply[1])
        if len(reply) < 3:
            return None
        return _tuple(serde, entries, reply[2], cache.expanded.expand, self.guesses)


@dataclass
class CachedPages:
    """`list`'s pages of one thread (the full view's walk newest first, `listing.ListPager`)
    through the cache: each page's read names the newest entries held of the thread, as many as
    a page's checkpoints and their writes take (`page_claim`)."""

    cache: EntryCache
    keyspace: Keyspace
    claim: Claim | None = None

    def request(self, thread_id: str, ns: str, before: str, size: int) -> Command:
        """The read of the page of `size` checkpoints below `before` ("": the newest)."""
        keys = self.keyspace.thread(thread_id)
        self.claim = claim = self.cache.claim(keys.log, limit=page_claim(size))
        return READ_CACHED.evalsha_args(
            [keys.positions, keys.log, keys.in_ns(full.VIEW, "ids", ns), keys.in_ns(full.VIEW, "ptrs", ns)],
            [claim.incarnation, len(claim.ids), *claim.ids, "page", keys.doc_prefix(full.VIEW, "cp", ns),
             keys.doc_prefix(full.VIEW, "writes", ns), before, size],
        )

    def read(self, reply: Sequence[Any], serde: SerializerProtocol, decoded: Decoded | None) -> list[CheckpointTuple]:
        """The page's tuples, newest first (values `decoded` in flight taken from it); the cache
        takes in what was shipped.

        Raises:
            PayloadDecodeError: a payload is missing, malformed or refused by the serde.
        """
        assert self.claim is not None, "read follows request"
        entries = self.cache.absorb(self.claim, bytes(reply[0]), reply[1])
        expand = self.cache.expanded.expand
        return [_tuple(serde, entries, row, expand, decoded) for row in reply[2:]]


@dataclass(frozen=True)
class CachedHistory:
    """One `get_delta_channel_history` through the cache (`cached_history`)."""

    command: Command
    claim: Claim

    def read(
        self, cache: EntryCache, serde: SerializerProtocol, reply: Sequence[Any], channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """The per-channel history of `reply` (`history.read_history`); the cache takes in what
        was shipped.

        Raises:
            PayloadDecodeError: a seed or write the walk reached cannot be read.
        """
        entries = cache.absorb(self.claim, bytes(reply[0]), reply[1])
        rows = [(row[0], _seeds(entries, row[1]), _writes(entries, row[2])) for row in reply[2:]]
        return history.read_history(serde, rows, channels, EntryLinks(entries))


def cached_history(
    cache: EntryCache, keyspace: Keyspace, config: RunnableConfig, channels: Sequence[str]
) -> CachedHistory:
    """The one ``read_history.lua`` call of a `get_delta_channel_history` (full view) that names
    the entries `cache` holds of the thread (`claim`), with those of their walked channels'
    values that are of serde type "empty" (the walk goes past those; it reads no held entry).

    Raises:
        InvalidInputError: the config names no thread.
    """
    claim = cache.claim(keyspace.thread(thread_id_of(config)).log)
    fields = [channel_field(channel) for channel in dict.fromkeys(channels)]
    empty = [
        entry_id + b" " + name
        for entry_id, entry in claim.entries.items()
        for name in fields
        if (value := entry.get(name)) is not None and stored_type(value) == _EMPTY
    ]
    args: list[str | bytes | int] = [claim.incarnation, len(claim.ids), *claim.ids, len(empty), *empty]
    return CachedHistory(history.history_request(keyspace, config, channels, args), claim)


def _seeds(entries: Mapping[bytes, Entry], flat: Sequence[Any]) -> list[Any]:
    """A history row's flat seeds (channel, payload, entry id), payloads taken from `entries`."""
    out: list[Any] = []
    for i in range(0, len(flat), 3):
        name, entry_id = flat[i], flat[i + 2]
        entry = entries.get(entry_id)
        field_name = channel_field(name.decode("utf-8", "surrogatepass"))
        out += (name, None if entry is None else entry.get(field_name), entry_id)
    return out


def page_claim(size: int) -> int:
    """How many of the newest entries held a page of `size` checkpoints names: the read's usual
    `CLAIM_LIMIT`, and four a checkpoint (its own entry, its writes'), 256 at most."""
    return min(CLAIM_LIMIT + 4 * size, 256)


def _tuple(
    serde: SerializerProtocol, entries: Mapping[bytes, Entry], row: Sequence[Any], expand: Expand,
    decoded: Decoded | None,
) -> CheckpointTuple:
    """The tuple of one row of a ``read_cached.lua`` reply, its payloads found in `entries`."""
    raw_doc, markers, flat_writes, entry_ids = row[:4]
    doc = orjson.loads(raw_doc)
    payloads = _payloads(entries, doc.get("refs") or [], markers, entry_ids)
    writes = _writes(entries, flat_writes)
    return decode_row(serde, doc, payloads, writes, entry_ids, EntryLinks(entries), expand, decoded)


class EntryLinks:
    """The values deltas link to, looked up in the entries of one read (`reads.LinkSource`)."""

    __slots__ = ("entries",)

    def __init__(self, entries: Mapping[bytes, Entry]) -> None:
        self.entries = entries

    def get(self, key: tuple[bytes, bytes], /) -> bytes | None:
        entry = self.entries.get(key[0])
        return None if entry is None else entry.get(key[1])


def cached_get(cache: EntryCache, keyspace: Keyspace, view: ViewName, config: RunnableConfig) -> CachedGet:
    """The one script call of a `get_tuple` (the checkpoint `config` names, or the latest) that
    names the entries `cache` holds of the thread."""
    thread_id, ns = thread_id_of(config), namespace_of(config)
    checkpoint_id = config["configurable"].get("checkpoint_id") or ""
    keys = keyspace.thread(thread_id)
    claim = cache.claim(keys.log, wire_bytes(checkpoint_id))
    if view == full.VIEW:
        view_keys = [keys.in_ns(view, "ids", ns), keys.in_ns(view, "ptrs", ns)]
        view_args = [keys.doc_prefix(view, "cp", ns), keys.doc_prefix(view, "writes", ns), checkpoint_id]
    else:
        view_keys = [keys.in_ns(view, "cp", ns), keys.in_ns(view, "ptrs", ns), keys.in_ns(view, "writes", ns)]
        view_args = [checkpoint_id]
    command = READ_CACHED.evalsha_args(
        [keys.positions, keys.log, *view_keys],
        [claim.incarnation, len(claim.ids), *claim.ids, view, *view_args],
    )
    return CachedGet(command, claim, wire_bytes(ns), wire_bytes(checkpoint_id), cache.expanded.expand)


def page_guess(
    cache: EntryCache | None, keyspace: Keyspace, serde: SerializerProtocol, pager: ListPager
) -> Callable[[], None] | None:
    """Send `pager`'s pages of one thread through `cache` (`CachedPages`), and return what to run
    while its first page is read (`streamsaver.log.program.Call.meanwhile`): decode the values of
    the newest checkpoints `cache` holds of the thread; the page takes those of the same stored
    bytes (`guesses`). None: nothing to guess (no cache, not such a page)."""
    if cache is not None and pager.walks_ids:
        pager.cached = CachedPages(cache, keyspace)
    page = None if cache is None else pager.first_page()
    if cache is None or page is None:
        return None
    thread_id, ns, size = page
    guesses, expand = Guesses(), cache.expanded.expand
    pager.expand, pager.decoded = expand, guesses
    log, namespace = keyspace.thread(thread_id).log, wire_bytes(ns)

    def guess() -> None:
        entries, chain = cache.recent(log, namespace, size)
        stored = [value for entry_id in chain for value in guessable(entries[entry_id])]
        guesses.decode(serde, stored, EntryLinks(entries), expand)

    return guess


def _ref_field(ref: str) -> bytes:
    """The log entry field a ref names (``ref_field`` in ``_read.lua``)."""
    if ref.startswith("@body"):
        return _BODY
    return b"c:" + ref.split(":", 1)[0].encode("utf-8", "surrogatepass")


def _payloads(
    entries: Mapping[bytes, Entry], refs: Sequence[str], markers: Sequence[Any], entry_ids: Sequence[bytes]
) -> list[bytes | None]:
    payloads: list[bytes | None] = []
    for ref, marker, entry_id in zip(refs, markers, entry_ids, strict=True):
        entry = entries.get(entry_id) if marker else None
        payloads.append(None if entry is None else entry.get(_ref_field(ref)))
    return payloads


def _writes(entries: Mapping[bytes, Entry], flat: Sequence[Any]) -> list[bytes]:
    """`pending_writes`'s flat groups, the task, path and write taken from the entries."""
    out: list[bytes] = []
    for i in range(0, len(flat), 5):
        field, entry_id = flat[i], flat[i + 4]
        entry = entries.get(entry_id)
        write = None if entry is None else entry.get(b"w:" + field.rsplit(b":", 1)[1])
        if entry is not None and write is not None:
            out += (field, entry[b"task"], entry[b"path"], write, entry_id)
    return out
