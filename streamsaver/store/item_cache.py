"""A store's client-side cache of item documents (``local_cache=N``), without I/O: what it
holds, when it may answer a get, and when a get's reply may enter it.

Coherence comes from Redis's server-assisted client-side caching in BCAST mode: the server
sends an invalidation naming every key under the store's item-document prefix that any client
modifies (written, deleted, expired, evicted, its TTL changed; a ``null`` one for a flush), to a
connection `streamsaver.drivers.invalidations` reads in a background thread. That listener calls
`invalidate`, `flush`, `go_live` and `go_dark`; the store's programs call `lookup`, `reading`
and `offer` (`LocalReads`).

The cache holds document *bytes* (JSON text as ``store_get.lua`` returns it, or None for an
item that does not exist) and a deadline, never decoded items: each hit decodes its own `Item`,
so a caller mutating ``Item.value`` changes nothing held.

Why a get's reply is never stale once inserted. A miss takes a `Reading` (the invalidation
sequence number) *before* its request is sent, and its reply is offered with it. A write W to
the key either ran on the server before the read did (the reply holds it: not stale), or after;
then the invalidation of W is generated after the read ran, so after the `Reading` was taken:
if it was applied before the reply is offered, `offer` sees it (the key's invalidation is newer
than the reading) and refuses the reply; if after, it evicts the inserted document. A flush, a
lost connection, going live again or forgetting old invalidations (`_FORGET_AFTER`) counts as
an invalidation of every key. While the listener is not live (not yet subscribed, or its
connection failed) nothing is served and nothing enters.

On Redis Cluster (`per_node`) each primary sends the invalidations of its own keys, so a reply
is held only if the primary that ran the read is one whose invalidations are received (the read
names it: ``CLUSTER MYID``; `go_live` names the tracked primaries), and a missing item is not held
at all: a key that does not exist leaves nothing on its primary to invalidate when its slot
moves to another (`streamsaver.memory.cluster_invalidations` argues the rest).

Expiry: Redis invalidates a key when it actually deletes it, and active expiry may lag the
key's deadline; so each document is held with a deadline computed from the ``PTTL`` its read
returned, counted from when the `Reading` was taken (before the request was sent, so never
later than the server's own deadline), and is not served after it.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = ["Cached", "ItemCache", "Reading"]

_FORGET_AFTER = 4096
"""Per-key invalidations remembered (beyond, they are forgotten as a flush of in-flight reads)."""


@dataclass(frozen=True, slots=True)
class Cached:
    """A held item document (None: the item does not exist) and when it stops being served
    (a ``time.monotonic()`` instant; None: it does not expire)."""

    document: bytes | None
    deadline: float | None


@dataclass(frozen=True, slots=True)
class Reading:
    """What a miss recorded before its request was sent: the invalidation sequence number
    then, and the instant (``time.monotonic()``)."""

    sequence: int
    started: float


class ItemCache:
    """At most `capacity` item documents, least recently used evicted first. Thread-safe: the
    invalidation listener and every caller share one lock.

    Attributes:
        capacity: the most documents held.
        hits: lookups answered; misses: lookups not answered (counted while live).
    """

    def __init__(self, capacity: int, clock: Callable[[], float] = time.monotonic, per_node: bool = False) -> None:
        self.capacity = capacity
        self.per_node = per_node
        self.on_untracked: Callable[[], None] | None = None
        """Called (outside the lock) when a reply came from a primary whose invalidations are not
        received (`per_node`): the cluster's listener then reads the slot map at once."""
        self.hits = 0
        self.misses = 0
        self._clock = clock
        self._changed = threading.Condition()
        self._entries: OrderedDict[bytes, Cached] = OrderedDict()
        self._sequence = 0
        self._flushed_at = 0
        self._invalidated: dict[bytes, int] = {}
        self._live = False
        self._nodes: frozenset[bytes] = frozenset()

    @property
    def live(self) -> bool:
        """Whether invalidations are being received (only then is anything served or held)."""
        return self._live

    @property
    def asks_node(self) -> bool:
        """Whether a get should name the primary that ran it (`per_node`, and live: only then
        may its reply be held; a runtime ACL user, whose listener is refused, never asks)."""
        return self.per_node and self._live

    @property
    def sequence(self) -> int:
        """How many invalidations (of keys, flushes, changes of the connection) were applied."""
        return self._sequence

    def changed_since(self, key: bytes, sequence: int) -> bool:
        """Whether an invalidation of `key` (or of everything) was applied after `sequence`."""
        return self._flushed_at > sequence or self._invalidated.get(key, 0) > sequence

    def __len__(self) -> int:
        return len(self._entries)

    def holds(self, key: bytes) -> bool:
        """Whether the document of `key` is held (expired or not)."""
        return key in self._entries

    def lookup(self, key: bytes, refresh: bool = False) -> Cached | None:
        """The held document of `key`, if it may answer a get now: not past its deadline and,
        for a get that renews TTLs (`refresh`), of an item without a TTL (renewing one writes,
        so that get goes to the server)."""
        with self._changed:
            entry = self._entries.get(key)
            if entry is not None and entry.deadline is not None and (refresh or self._clock() >= entry.deadline):
                entry = None
            if entry is None:
                if self._live:
                    self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry

    def reading(self) -> Reading | None:
        """What a miss takes before sending its request (None while not live: its reply will not
        be held)."""
        with self._changed:
            return Reading(self._sequence, self._clock()) if self._live else None

    def offer(self, key: bytes, document: bytes | None, pttl_ms: int, reading: Reading | None,
              node: bytes | None = None) -> bool:
        """Hold the `document` a get read for `key` (`pttl_ms`: the key's ``PTTL`` then, -1 for
        no TTL, -2 for no key) unless anything invalidated `key` since `reading` (see the
        module docstring), or it expires within a millisecond; with `per_node`, also unless the
        read ran on a primary (`node`, its id) that is not tracked, or found no item; whether it
        was held."""
        with self._changed:
            if reading is None or not self._live or self.changed_since(key, reading.sequence) or 0 <= pttl_ms <= 1:
                return False
            untracked = self.per_node and node not in self._nodes
            if self.per_node and (untracked or document is None):
                return self._refused(untracked)
            # PTTL counts whole milliseconds down: one less keeps the deadline no later than the server's.
            deadline = reading.started + (pttl_ms - 1) / 1000 if pttl_ms > 0 else None
            self._entries[key] = Cached(document, deadline)
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
            return True

    def _refused(self, untracked: bool) -> bool:
        if untracked and self.on_untracked is not None:
            self.on_untracked()  # only sets an event: safe under the lock
        return False

    def invalidate(self, keys: Iterable[bytes]) -> None:
        """Forget the documents of `keys` (the server said they changed, or this store writes
        them), and refuse the replies of reads in flight for them."""
        with self._changed:
            self._sequence += 1
            for key in keys:
                self._entries.pop(key, None)
                self._invalidated[key] = self._sequence
            if len(self._invalidated) > _FORGET_AFTER:
                self._flushed_at = self._sequence
                self._invalidated.clear()
            self._changed.notify_all()

    def flush(self) -> None:
        """Forget every document, and refuse the replies of every read in flight."""
        with self._changed:
            self._flush()

    def _flush(self) -> None:
        self._sequence += 1
        self._flushed_at = self._sequence
        self._entries.clear()
        self._invalidated.clear()
        self._changed.notify_all()

    def go_live(self, nodes: frozenset[bytes] = frozenset()) -> None:
        """Invalidations are received from now on (with `per_node`: from each primary of
        `nodes`, by id): serve and hold again (starting empty; reads sent before now are refused,
        they may predate the subscription)."""
        with self._changed:
            self._flush()
            self._nodes = nodes
            self._live = True

    def go_dark(self) -> None:
        """Invalidations may be missed from now on: forget everything, serve and hold nothing."""
        with self._changed:
            self._live = False
            self._nodes = frozenset()
            self._flush()

    def wait_for(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Block until `condition()` holds (checked whenever the cache changes), `timeout`
        seconds at most; whether it holds."""
        with self._changed:
            return self._changed.wait_for(condition, timeout)
