"""The read cache's policy, without I/O: a bounded, least-recently-used store of the thread log
entries a saver wrote or read, as their stored bytes (never decoded objects: LangGraph mutates
what it reads, and an `EncryptedSerializer`'s entries stay encrypted here).

Log entries never change once written, but an entry id alone does not name one entry for ever:
a prune's rewrite adds entries back under their old ids, and a thread deleted and written again
within a millisecond reuses its first ids. So entries are held per thread *incarnation*: a value
the positions hash keeps (``@inc``), which the write scripts make new whenever a thread's log is
made anew or rewritten, and which goes with the log (deletion, TTL expiry). A read names the
incarnation its entries belong to; the server ignores the ids of another one (`read_cached.lua`).

A saver learns a thread's incarnation from its reads and from its own appends: ``append.lua``
replies with the entry id and the incarnation the entry was logged in, so a writer holds its
entries from its first put. An entry is held under the incarnation the server named with it;
when that is not the one held of the thread (the thread was made anew, or a read in between
learnt another), the thread's held entries are dropped and the last named wins: were it not
the current one, the next read names it, is shipped everything, and holds the current one.
Incarnations are never repeated, so an entry can only be served under the incarnation its id
was written in.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from streamsaver.checkpoints.entry_bytes import Arg, Entry, entry_of, id_order, links_of, wire_bytes
from streamsaver.log import compression, deltas
from streamsaver.log.fields import CHECKPOINT_ID, NAMESPACE, PARENT, TYPE

__all__ = [
    "CLAIM_LIMIT", "DEFAULT_READ_CACHE_BYTES", "SETTLE_AFTER", "Claim", "Entry", "EntryCache", "id_order", "links_of",
    "wire_bytes",
]

DEFAULT_READ_CACHE_BYTES = 32 * 1024 * 1024
"""The default bound of a saver's read cache (``read_cache_bytes``)."""

CLAIM_LIMIT = 16
"""The newest held entries of a thread a read names (with those they link to): a read needs the
entries of its checkpoint and of the values it points at, mostly the thread's last ones."""

SETTLE_AFTER = 32
"""Appends noted (`EntryCache.wrote`) at most before the cache takes them in without a read."""

_OVERHEAD = 200
"""Bytes counted per entry beyond its fields (the dicts and tuples that hold it)."""

_CID_AT = 9
"""Where an append's flat fields hold the checkpoint id (`streamsaver.log.stored`: ``type``,
``v``, ``thread`` and ``ns`` lead, then ``cid``), checked by its name at `_CID_AT` - 1."""
_CID_NAMES = (CHECKPOINT_ID, CHECKPOINT_ID.decode())

_CHECKPOINT = b"CheckpointSaved"
_CHANNEL = (b"c:", "c:")
"""How a channel value's field starts, as an append sends it (bytes or str) and as replies hold it."""
_RECENT_WALK = 4
"""Last held entries `EntryCache.recent` looks at per checkpoint (a step logs two or so)."""


_Note = tuple[str, bytes, bytes, Sequence[Arg] | None, int]
"""An append noted (`EntryCache._note`): log, entry id, incarnation, fields (None: too large to
hold), size."""


class _Held:
    """One entry held: its size, and either its fields (read from a reply) or, until a read first
    names it, the flat field/value arguments of this saver's append that logged it (`flat`;
    `read` makes them its fields): a put pays for holding its entry with a note of its
    arguments, not a dict and a parse of its deltas. `links`: the entries its deltas link to
    (None: unreadable)."""

    __slots__ = ("entry", "flat", "links", "size")

    def __init__(self, size: int, entry: Entry | None = None, flat: Sequence[Arg] | None = None) -> None:
        self.size, self.flat = size, flat
        self.entry: Entry = {} if entry is None else entry
        self.links = None if entry is None else links_of(entry)

    def read(self, args: Sequence[Arg]) -> None:
        """Make the append's arguments `args` (`flat`) the entry's fields."""
        flat = [value if type(value) is bytes else wire_bytes(value) for value in args]
        self.entry = dict(zip(flat[::2], flat[1::2], strict=True))
        self.links, self.flat = links_of(self.entry), None


@dataclass
class _Thread:
    incarnation: bytes
    ids: dict[bytes, None] = field(default_factory=dict)
    """The thread's held entry ids, in the order they came (mostly log order)."""
    claim: Claim | None = None
    """What a read names, while the held ids do not change."""
    checkpoints: dict[bytes, list[bytes]] = field(default_factory=dict)
    """Checkpoint id -> the held entries that name it (its own, its writes'): what a read by id
    names beside the newest (some may have been evicted since)."""
    channels: dict[bytes, bytes] = field(default_factory=dict)
    """Channel field (``c:...``) -> the newest held entry storing a value of it: a read names
    these too, for the newest checkpoint points at the last value of each channel, however old
    (a channel written once, at the first step)."""


@dataclass(frozen=True)
class Claim:
    """What one read tells the server it holds of a thread: `ids` of `incarnation`; `entries`
    keeps them for the reply whatever the cache evicts meanwhile."""

    log: str
    incarnation: bytes
    ids: list[bytes]
    entries: dict[bytes, Entry]


class EntryCache:
    """Stored log entries by (thread log key, incarnation, entry id), at most `max_bytes` of
    them (least recently used go first). The log key carries the deployment's prefix. Safe to
    share between threads."""

    def __init__(self, max_bytes: int, claim_limit: int = CLAIM_LIMIT) -> None:
        self.max_bytes = max_bytes
        self.claim_limit = claim_limit
        self.expanded = compression.Expanded(max_bytes // 8)
        """The expanded forms of the compressed values this saver's reads joined (an eighth of
        the bound beside it): a hit decompresses nothing."""
        self.size = 0
        self._lru: OrderedDict[tuple[str, bytes], _Held] = OrderedDict()
        self._threads: dict[str, _Thread] = {}
        self._lock = threading.Lock()
        self._pending: list[_Note] = []
        """This saver's appends not taken in yet: (log, entry id, incarnation, fields, size);
        fields None: too large to hold (its incarnation is still taken in)."""
        self._noted = 0
        """The size of the fields noted in `_pending`: they count against the bound too."""

    def claim(self, log: str, checkpoint_id: bytes = b"", limit: int = 0) -> Claim:
        """The entries of thread `log` a read may name: its newest `limit` (default
        `claim_limit`) held ones whose delta links are held too, and those they link to; with
        `checkpoint_id` (a read by id), also the held entries that name that checkpoint and
        those they link to."""
        with self._lock:
            if self._pending:
                self._settle()
            thread = self._threads.get(log)
            if thread is None:
                return Claim(log, b"", [], {})
            if limit and limit != self.claim_limit:
                claim = self._claimable(log, thread, limit)  # a page's: not kept
            else:
                claim = thread.claim or self._claimable(log, thread, self.claim_limit)
                thread.claim = claim
            if checkpoint_id:
                claim = self._with_checkpoint(log, thread, claim, checkpoint_id)
            touch = self._lru.move_to_end
            for entry_id in claim.ids:
                touch((log, entry_id))
            return claim

    def _claimable(self, log: str, thread: _Thread, limit: int) -> Claim:
        lru, claimed = self._lru, dict[bytes, Entry]()
        for entry_id in reversed(thread.ids):
            if len(claimed) >= limit:
                break
            if entry_id not in claimed:
                held = lru[(log, entry_id)]
                if held.flat is not None:
                    held.read(held.flat)
                if held.links == ():  # most entries: no delta
                    claimed[entry_id] = held.entry
                elif held.links is not None:
                    self._claim_closure(log, entry_id, claimed)
        for entry_id in thread.channels.values():
            if entry_id not in claimed and (log, entry_id) in lru:
                self._claim_closure(log, entry_id, claimed)
        return Claim(log, thread.incarnation, list(claimed), claimed)

    def recent(self, log: str, ns: bytes, count: int) -> tuple[dict[bytes, Entry], list[bytes]]:
        """The held entries of the newest checkpoint of thread `log` in `ns` and of its held
        ancestors, `count` at most (a guess of a first page of `list`: `guesses`), with those
        their deltas link to; and the ids of those checkpoints' entries, newest first."""
        found: dict[bytes, Entry] = {}
        chain: list[bytes] = []
        with self._lock:
            if self._pending:
                self._settle()
            thread = self._threads.get(log)
            newest = None if thread is None else self._newest_checkpoint(log, thread, ns, count)
            while thread is not None and newest is not None and len(chain) < count:
                held = self._lru[(log, newest)]
                self._claim_closure(log, newest, found)
                if newest not in found:
                    break
                chain.append(newest)
                parent = held.entry.get(PARENT, b"")
                newest = next((i for i in thread.checkpoints.get(parent, ()) if self._checkpoint(log, i, ns)), None)
        return found, chain

    def _newest_checkpoint(self, log: str, thread: _Thread, ns: bytes, count: int) -> bytes | None:
        # held in the order they came, not in log order (a read ships older entries late)
        newest: tuple[tuple[int, int], bytes] | None = None
        for walked, entry_id in enumerate(reversed(thread.ids)):
            if walked >= _RECENT_WALK * count + self.claim_limit:
                break
            if self._checkpoint(log, entry_id, ns) and (newest is None or id_order(entry_id) > newest[0]):
                newest = (id_order(entry_id), entry_id)
        return None if newest is None else newest[1]

    def _checkpoint(self, log: str, entry_id: bytes, ns: bytes) -> bool:
        """Whether `entry_id` is held, readable, and logs a checkpoint of namespace `ns`."""
        held = self._lru.get((log, entry_id))
        if held is None:
            return False
        if held.flat is not None:
            held.read(held.flat)
        entry = held.entry
        return held.links is not None and entry.get(TYPE) == _CHECKPOINT and entry.get(NAMESPACE) == ns

    def _with_checkpoint(self, log: str, thread: _Thread, claim: Claim, checkpoint_id: bytes) -> Claim:
        missing = [i for i in thread.checkpoints.get(checkpoint_id, ()) if i not in claim.entries]
        if not missing:
            return claim
        claimed = dict(claim.entries)
        for entry_id in missing:
            if (log, entry_id) in self._lru:  # else evicted since
                self._claim_closure(log, entry_id, claimed)
        return Claim(log, claim.incarnation, list(claimed), claimed)

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
            if held is not None and held.flat is not None:
                held.read(held.flat)
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
        fresh = [(bytes(shipped[i]), entry_of(shipped[i + 1])) for i in range(0, len(shipped), 2)]
        if fresh:
            entries = {**entries, **dict(fresh)}
        with self._lock:
            if self._pending:
                self._settle()
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

    def wrote(self, log: str, entry_id: bytes, fields: Sequence[Arg], incarnation: bytes) -> None:
        """Hold the entry this saver appended (flat field/value `fields`, as sent: the server
        stores them as `wire_bytes`; kept as they are until a read names them) as `entry_id`, under
        `incarnation`: the one the server named with the entry id (b"": nothing is held). Held
        entries of another incarnation of the thread are dropped (see the module).

        A put pays only for noting it: the entry is taken in (and counted in `size`) by the next
        read, or once `SETTLE_AFTER` appends are noted or what is noted and held would pass the
        bound."""
        if incarnation:
            self._note(log, entry_id, incarnation, fields)

    def appended(self, command: Sequence[Arg], reply: Any) -> None:
        """`wrote` the entry an ``append.lua`` `command` logged: `reply` is the script's (entry
        id, incarnation; None when it logged nothing); the entry's fields are the command's event
        fields (after the keys, the log first, and the field count)."""
        if reply and type(reply[0]) is bytes and reply[1]:
            at = 4 + int(command[2])
            self._note(str(command[3]), reply[0], bytes(reply[1]), command[at : at + int(command[at - 1])])

    def _note(self, log: str, entry_id: bytes, incarnation: bytes, fields: Sequence[Arg]) -> None:
        try:
            size = _OVERHEAD + len(log) + len(entry_id) + len(b"".join(fields))  # type: ignore[arg-type]
        except TypeError:  # a str or a number among them
            size = _OVERHEAD + len(log) + len(entry_id) + sum(len(wire_bytes(value)) for value in fields)
        held = size <= self.max_bytes // 4  # else it would push out much of what is held, for one entry
        pending = self._pending
        # atomic under the GIL, no lock on a put; a note racing a `_settle` may land in the list
        # it already read and be lost (or its size in `_noted`), which only means it is not held
        pending.append((log, entry_id, incarnation, fields if held else None, size))
        self._noted += size if held else 0
        if len(pending) >= SETTLE_AFTER or self.size + self._noted > self.max_bytes:
            with self._lock:
                self._settle()

    def _settle(self) -> None:
        """Take in the appends noted, each under the incarnation its reply named."""
        # `_add`, inlined: this runs for every entry a saver writes
        pending, self._pending, self._noted = self._pending, [], 0
        threads, lru = self._threads, self._lru
        for log, entry_id, incarnation, fields, size in pending:
            thread = threads.get(log)
            if thread is None or thread.incarnation != incarnation:
                self._drop(log)  # another life of the thread (see the module)
                thread = threads[log] = _Thread(incarnation)
            key = (log, entry_id)
            if key in lru:
                continue
            if fields is not None:
                lru[key] = _Held(size, None, fields)
                thread.ids[entry_id] = None
                thread.claim = None
                self.size += size
                if len(fields) > _CID_AT and fields[_CID_AT - 1] in _CID_NAMES:
                    thread.checkpoints.setdefault(wire_bytes(fields[_CID_AT]), []).append(entry_id)
                    for name in fields[_CID_AT + 1 :: 2]:  # an append is the newest entry
                        if name[:2] in _CHANNEL:  # type: ignore[index]
                            thread.channels[wire_bytes(name)] = entry_id
        self._evict()

    def incarnation(self, log: str) -> bytes | None:
        """The incarnation of thread `log` its held entries belong to; None: none held."""
        with self._lock:
            if self._pending:
                self._settle()
            thread = self._threads.get(log)
            return None if thread is None else thread.incarnation

    def forget(self, log: str) -> None:
        """Drop every entry of thread `log` (this saver deleted it), its appends noted too (not
        taken in first: a deletion does not pay for the notes of other threads)."""
        with self._lock:
            if self._pending:
                self._pending = [note for note in self._pending if note[0] != log]
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
        checkpoint_id = held.entry.get(CHECKPOINT_ID)
        if checkpoint_id is not None:
            thread.checkpoints.setdefault(checkpoint_id, []).append(entry_id)
        newest, order = thread.channels, id_order(entry_id)
        for name in held.entry:
            if name[:2] == b"c:" and (name not in newest or id_order(newest[name]) < order):
                newest[name] = entry_id

    def _evict(self) -> None:
        while self.size > self.max_bytes and self._lru:
            (log, entry_id), held = self._lru.popitem(last=False)
            self.size -= held.size
            thread = self._threads[log]
            del thread.ids[entry_id]
            thread.claim = None
            if not thread.ids:
                del self._threads[log]
            else:  # the index by checkpoint id would otherwise grow with every checkpoint ever held
                _unindex(thread, entry_id, held)

    def _drop(self, log: str) -> None:
        thread = self._threads.pop(log, None)
        if thread is not None:
            for entry_id in thread.ids:
                self.size -= self._lru.pop((log, entry_id)).size


def _unindex(thread: _Thread, entry_id: bytes, held: _Held) -> None:
    """Take `entry_id` (`held`, evicted) out of `thread`'s index by checkpoint id."""
    flat = held.flat
    if flat is None:
        named = held.entry.get(CHECKPOINT_ID)
    else:
        named = wire_bytes(flat[_CID_AT]) if len(flat) > _CID_AT and flat[_CID_AT - 1] in _CID_NAMES else None
    if named is None or entry_id not in (ids := thread.checkpoints.get(named, [])):
        return
    ids.remove(entry_id)
    if not ids:
        del thread.checkpoints[named]
