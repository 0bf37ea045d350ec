"""One batch's use of the store's item cache (`streamsaver.store.item_cache`), without I/O: the
gets it answers without a round trip, the `Reading` its misses take before they are sent, the
replies it holds afterwards, and the evictions of the batch's own writes.

A batch's writes evict their items before anything is looked up (so a get after a put of the
same item in one batch reads the put) and again once the server acknowledged them: a get of
another thread that read the old document before the write ran, but took its `Reading` after
the first eviction, is refused by the second, so once a put, delete or purge returns, no thread
of this process is served what it replaced (read your writes never waits for the server's
invalidation of the write, which also comes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langgraph.store.base import GetOp, Item, Op, PutOp, Result

from streamsaver.log.program import Program
from streamsaver.store.core import StoreCore
from streamsaver.store.item_cache import ItemCache, Reading
from streamsaver.store.queries import item_of
from streamsaver.store.validation import check_ops

__all__ = ["NOT_HELD", "LocalReads", "flushing", "held_get"]

T = TypeVar("T")
KeyOf = Callable[[tuple[str, ...], str], bytes]
"""The document key (bytes, as invalidations name it) of an item by namespace and key."""


@dataclass
class LocalReads:
    """What the cache does for one batch (a batch on a store without a cache: nothing).

    Attributes:
        hits: the results of the gets the cache answered, by op position.
        misses: the document key of every other get, by op position.
        written: the document keys of the batch's puts and deletes.
        reading: taken before the batch is sent (or embedded: so never later than the send;
            None: nothing read will be held).
    """

    cache: ItemCache | None = None
    hits: dict[int, Result] = field(default_factory=dict)
    misses: dict[int, bytes] = field(default_factory=dict)
    written: list[bytes] = field(default_factory=list)
    reading: Reading | None = None

    @classmethod
    def start(cls, cache: ItemCache | None, ops: Sequence[Op], key_of: KeyOf,
              decode: Callable[[bytes | None], Item | None]) -> LocalReads:
        """Evict the items `ops` write, answer the gets the cache holds (each decoded by
        `decode`), and take the misses' `Reading`."""
        if cache is None:
            return cls()
        reads = cls(cache, written=[key_of(tuple(op.namespace), op.key) for op in ops if isinstance(op, PutOp)])
        if reads.written:
            cache.invalidate(reads.written)
        for n, op in enumerate(ops):
            if isinstance(op, GetOp):
                key = key_of(tuple(op.namespace), op.key)
                if (held := cache.lookup(key, refresh=bool(op.refresh_ttl))) is not None:
                    reads.hits[n] = decode(held.document)
                else:
                    reads.misses[n] = key
        reads.reading = cache.reading() if reads.misses else None
        return reads

    def acknowledged(self) -> None:
        """The batch's writes ran (or failed): evict their items again (see the module docstring)."""
        if self.cache is not None and self.written:
            self.cache.invalidate(self.written)

    def remember(self, replies: Sequence[Sequence[Any]]) -> None:
        """Offer the cache each miss's reply (``store_get.lua``'s document, then its PTTL, then
        on a cluster the id of the primary that ran it), by op position in `replies`."""
        if self.cache is None:
            return
        for n, key in self.misses.items():
            reply = replies[n][0]
            self.cache.offer(key, reply[0], int(reply[1]), self.reading, reply[2] if len(reply) > 2 else None)


NOT_HELD: Any = object()
"""`held_get`'s answer for a get the cache cannot answer."""


def held_get(core: StoreCore, namespace: tuple[str, ...], key: str, refresh: bool) -> Item | None:
    """The answer of one get from the store's item cache, without building a batch (a held get
    is the cheapest call there is: this skips the batch's program and driver); `NOT_HELD` when
    it must be sent (no cache, or the item is not held or may not be served now).

    Raises:
        InvalidNamespaceError, InvalidInputError: as a batch holding the get would.
    """
    if core.cache is None or not core.cache.live:
        return NOT_HELD  # type: ignore[no-any-return]
    check_ops([GetOp(namespace, key, refresh)])
    held = core.cache.lookup(core.document_key(tuple(namespace), key).encode(), refresh=refresh)
    return NOT_HELD if held is None else item_of(held.document, core.serde)


def flushing(cache: ItemCache | None, program: Program[T]) -> Program[T]:
    """`program` (a purge or a re-embedding: writes of items not known in advance) with every
    held document forgotten before it runs and again once it has (as `LocalReads` evicts a
    batch's writes)."""
    if cache is not None:
        cache.flush()
    try:
        return (yield from program)
    finally:
        if cache is not None:
            cache.flush()
