"""The read cache's policy, without I/O: a bounded, least-recently-used store of the thread log
entries a saver wrote or read, as their stored bytes (never decoded objects: LangGraph mutates
what it reads, and an `EncryptedSerializer`'s entries stay encrypted here).

Log entries never change once written, but an entry id alone does not name one entry for ever:
a prune's rewrite adds entries back under their old ids, and a thread deleted and written again
within a millisecond reuses its first ids. So entries are held per thread *incarnation*: a value
the positions hash keeps (``@inc``), which the write scripts make new whenever a thread's log is
made anew or rewritten, and which goes with the log (deletion, TTL expiry). A read names the
incarnation its entries belong to; the server ignores the ids of another one (`read_cached.lua`).

A saver learns a thread's incarnation from its reads. Its own appends are held under the
incarnation it knows: were the thread made anew since, the next read names the old incarnation,
is shipped everything, and the thread's entries are dropped. Incarnations are never repeated,
so an entry can only be served under the incarnation its id was written in.
"""

from __future__ import annotations

import struct
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from streamsaver.log import deltas
from streamsaver.log.codec import unpack

__all__ = ["CLAIM_LIMIT", "DEFAULT_READ_CACHE_BYTES", "Claim", "Entry", "EntryCache", "links_of", "wire_bytes"]

DEFAULT_READ_CACHE_BYTES = 32 * 1024 * 1024
"""The default bound of a saver's read cache (``read_cache_bytes``)."""

CLAIM_LIMIT = 16
"""The newest held entries of a thread a read names (with those they link to): a read needs the
entries of its checkpoint and of the values it points at, mostly the thread's last ones."""

_OVERHEAD = 200
"""Bytes counted per entry beyond its fields (the dicts and tuples that hold it)."""

_LENGTH = struct.Struct(">I").unpack_from
_DELTA = deltas.MARK.encode()

Entry = dict[bytes, bytes]
"""A log entry: field -> stored value."""


Arg = str | bytes | int | float
"""An append's argument, as the saver sent it."""


class _Held:
    """One entry held: its size, and either its fields (read from a reply) or, until a read first
    names it, the flat field/value arguments of this saver's append that logged it: a put pays
    for holding its entry with a slice of its arguments, not a dict and a parse of its deltas.
    `links`: the entries its deltas link to (None: unreadable)."""

    __slots__ = ("_entry", "_flat", "_links", "size")

    def __init__(self, size: int, entry: Entry | None = None, flat: Sequence[Arg] | None = None) -> None:
        self.size, self._flat = size, flat
        self._entry: Entry = {} if entry is None else entry
        self._links = None if entry is None else links_of(entry)

    @property
    def entry(self) -> Entry:
        if self._flat is not None:
            self._read(self._flat)
        return self._entry

    @property
    def links(self) -> tuple[bytes, ...] | None:
        if self._flat is not None:
            self._read(self._flat)
        return self._links

    def _read(self, args: Sequence[Arg]) -> None:
        flat = [value if type(value) is bytes else wire_bytes(value) for value in args]
        self._entry = dict(zip(flat[::2], flat[1::2], strict=True))
        self._links, self._flat = links_of(self._entry), None


@dataclass
class _Thread:
    incarnation: bytes
    ids: dict[bytes, None] = field(default_factory=dict)
    """The thread's held entry ids, in the order they came (mostly log order)."""
    claim: Claim | None = None
    """What a read names, while the held ids do not change."""


@dataclass(frozen=True)
class Claim:
    """What one read tells the server it holds of a thread: `ids` of `incarnation`; `entries`
    keeps them for the reply whatever the cache evicts meanwhile."""

    log: str
    incarnation: bytes
    ids: list[bytes]
    entries: dict[bytes, Entry]


def links_of(entry: Entry) -> tuple[bytes, ...] | None:
    """The entries the deltas among `entry`'s channel values link to; None when a value cannot
    be read (such an entry is never named to the server, so a read ships it and the reader
    names it in its `PayloadDecodeError`)."""
    links = []
    try:
        for name, value in entry.items():
            if name[:2] == b"c:":
                # the stored type is the third part of the packing: found without copying the data
                at = 4 + _LENGTH(value, 0)[0]
                at += 4 + _LENGTH(value, at)[0]
                if value.startswith(_DELTA, at + 4):
                    _, _, type_, data = unpack(value)
                    links.append(deltas.split(type_.decode(), data).link.encode())
                elif at + 4 > len(value):
                    return None
    except (ValueError, UnicodeDecodeError, struct.error):
        return None
    return tuple(links)


class EntryCache:
    """Stored log entries by (thread log key, incarnation, entry id), at most `max_bytes` of
    them (least recently used go first). The log key carries the deployment's prefix. Safe to
    share between threads."""

    def __init__(self, max_bytes: int, claim_limit: int = CLAIM_LIMIT) -> None:
        self.max_bytes = max_bytes
        self.claim_limit = claim_limit
        self.size = 0
        self._lru: OrderedDict[tuple[str, bytes], _Held] = OrderedDict()
        self._threads: dict[str, _Thread] = {}
        self._lock = threading.Lock()

    def claim(self, log: str) -> Claim:
        """The entries of thread `log` a read may name: its newest `claim_limit` held ones whose
        delta links are held too, and those they link to."""
        with self._lock:
            thread = self._threads.get(log)
            if thread is None:
                return Claim(log, b"", [], {})
            claim = thread.claim
            if claim is None:
                claim = thread.claim = self._claimable(log, thread)
            touch = self._lru.move_to_end
            for entry_id in claim.ids:
                touch((log, entry_id))
            return claim

    def _claimable(self, log: str, thread: _Thread) -> Claim:
        lru, claimed = self._lru, dict[bytes, Entry]()
        for entry_id in reversed(thread.ids):
            if len(claimed) >= self.claim_limit:
                break
            if entry_id not in claimed:
                held = lru[(log, entry_id)]
                if held.links == ():  # most entries: no delta
                    claimed[entry_id] = held.entry
                elif held.links is not None:
                    self._claim_closure(log, entry_id, claimed)
        return Claim(log, thread.incarnation, list(claimed), claimed)

    def _claim_closure(self, log: str, entry_id: bytes, claimed: dict[bytes, Entry]) -> None:
        """Add `entry_id` and every entry its deltas link to (transitively) to `claimed`, or
        nothing when one of them is not held."""
        found: dict[bytes, Entry] = {}
        todo = [entry_id]
        while todo:
            current = todo.pop()
            if current in found or current in claimed:
                continue
            held = self._lru.get((log, current))
            if held is None or held.links is None or len(found) > deltas.READ_LIMIT:
                return
            found[current] = held.entry
            todo.extend(held.links)
        claimed.update(found)

    def absorb(self, claim: Claim, incarnation: bytes, shipped: Sequence[Any]) -> dict[bytes, Entry]:
        """Take in a read's reply: the thread's `incarnation` and the entries `shipped` (flat
        ``entry id, flat field/value``). Returns the entries the reply's rows name (those the
        claim named, when still of that incarnation, and those shipped)."""
        entries = claim.entries if incarnation == claim.incarnation else {}
        fresh = [(bytes(shipped[i]), _entry(shipped[i + 1])) for i in range(0, len(shipped), 2)]
        if fresh:
            entries = {**entries, **dict(fresh)}
        with self._lock:
            if not incarnation:
                self._drop(claim.log)
                return entries
            thread = self._threads.get(claim.log)
            if thread is None or thread.incarnation != incarnation:
                self._drop(claim.log)
                thread = self._threads[claim.log] = _Thread(incarnation)
            for entry_id, entry in fresh:
                self._add(claim.log, thread, entry_id, _Held(sum(len(k) + len(v) for k, v in entry.items()), entry))
            self._evict()
        return entries

    def wrote(self, log: str, entry_id: bytes, fields: Sequence[Arg], incarnation: bytes | None) -> None:
        """Hold the entry this saver appended (flat field/value `fields`, as sent: the server
        stores them as `wire_bytes`; kept as they are until a read names them) as `entry_id`, under
        `incarnation`: the one the cache knew of the thread when the append was sent, and only
        while it still does (a read between the send and the reply may have learnt a newer
        incarnation, which the append may not belong to). None: nothing is held."""
        with self._lock:
            thread = self._threads.get(log)
            if thread is None or incarnation is None or thread.incarnation != incarnation:
                return
            self._add(log, thread, entry_id, _Held(_stored(fields), flat=fields))
            self._evict()

    def incarnation(self, log: str) -> bytes | None:
        """The incarnation of thread `log` its held entries belong to; None: none held."""
        with self._lock:
            thread = self._threads.get(log)
            return None if thread is None else thread.incarnation

    def forget(self, log: str) -> None:
        """Drop every entry of thread `log` (this saver deleted it)."""
        with self._lock:
            self._drop(log)

    def _add(self, log: str, thread: _Thread, entry_id: bytes, held: _Held) -> None:
        """Hold `held` (its size: the bytes of its fields and values) unless held already."""
        key = (log, entry_id)
        if key in self._lru:
            self._lru.move_to_end(key)
            return
        held.size += _OVERHEAD + len(log) + len(entry_id)
        if held.size > self.max_bytes // 4:
            return  # it would push out much of what is held, for one entry
        self._lru[key] = held
        thread.ids[entry_id] = None
        thread.claim = None
        self.size += held.size

    def _evict(self) -> None:
        while self.size > self.max_bytes and self._lru:
            (log, entry_id), held = self._lru.popitem(last=False)
            self.size -= held.size
            thread = self._threads[log]
            del thread.ids[entry_id]
            thread.claim = None
            if not thread.ids:
                del self._threads[log]

    def _drop(self, log: str) -> None:
        thread = self._threads.pop(log, None)
        if thread is not None:
            for entry_id in thread.ids:
                self.size -= self._lru.pop((log, entry_id)).size


def wire_bytes(value: Arg) -> bytes:
    """An argument as the server stores it (as redis-py encodes it)."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return repr(value).encode() if isinstance(value, float) else str(value).encode()


def _stored(flat: Sequence[Arg]) -> int:
    """About the bytes the server stores of `flat` (a str's characters, not its UTF-8 bytes)."""
    try:
        return sum(map(len, flat))  # type: ignore[arg-type]
    except TypeError:  # a number among them
        return sum(len(wire_bytes(value)) for value in flat)


def _entry(flat: Sequence[bytes]) -> Entry:
    return dict(zip(flat[::2], flat[1::2], strict=True))
