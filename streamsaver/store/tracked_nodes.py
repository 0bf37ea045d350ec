"""Which primaries of a Redis Cluster a store's item cache hears from, without I/O: the cache
is live only while every primary of the slot map its listener last read has a listener
subscribed (`streamsaver.memory.cluster_invalidations` runs them, one per primary).

`TrackedNodes.expect` starts a new *generation* (a new slot map, or none while it cannot be
read): the cache goes dark at once; each listener of the generation reports through its own
`NodeSink`; when the last of them is subscribed the cache goes live naming those primaries (and
starts empty); when any of them loses its connection the cache goes dark again. A listener of an
older generation (being stopped) can neither make the cache live nor dark: only its
invalidations still count, which can only evict.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from streamsaver.store.item_cache import ItemCache

__all__ = ["NodeSink", "Primary", "SlotMap", "TrackedNodes", "slot_map_of"]


@dataclass(frozen=True, slots=True, order=True)
class Primary:
    """A primary of the slot map: its id (``CLUSTER MYID``) and address."""

    node: bytes
    host: str
    port: int


SlotMap = tuple[tuple[int, int, Primary], ...]
"""Every slot range with its primary, sorted: two maps are equal when no slot changed owner."""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def slot_map_of(reply: Sequence[Any]) -> SlotMap:
    """The `SlotMap` of a ``CLUSTER SLOTS`` reply (each row: start, end, then the primary's
    host, port and id, then its replicas)."""
    rows = [(int(row[0]), int(row[1]), Primary(bytes(row[2][2]) if isinstance(row[2][2], bytes)
                                               else str(row[2][2]).encode(), _text(row[2][0]), int(row[2][1])))
            for row in reply]
    return tuple(sorted(rows))


def primaries_of(slot_map: SlotMap) -> list[Primary]:
    """The distinct primaries of `slot_map`, sorted."""
    return sorted({primary for _, _, primary in slot_map})


class TrackedNodes:
    """The liveness of one cache's listeners, one per primary (see the module docstring)."""

    def __init__(self, cache: ItemCache) -> None:
        self._cache = cache
        self._guard = threading.Lock()
        self._generation = 0
        self._expected: frozenset[bytes] = frozenset()
        self._live: set[bytes] = set()

    def expect(self, nodes: Iterable[bytes]) -> int:
        """A new generation tracking `nodes` (none: the cache stays dark): the cache goes dark
        until each has gone live; its number."""
        with self._guard:
            self._generation += 1
            self._expected = frozenset(nodes)
            self._live = set()
            self._cache.go_dark()
            return self._generation

    def sink(self, node: bytes) -> NodeSink:
        """What the listener of `node` in the current generation reports to."""
        with self._guard:
            return NodeSink(self, node, self._generation, self._cache)

    def live(self, node: bytes, generation: int) -> None:
        """`node`'s listener of `generation` is subscribed: the cache goes live when it is the last."""
        with self._guard:
            if generation != self._generation or node not in self._expected:
                return
            self._live.add(node)
            if self._live == self._expected:
                self._cache.go_live(self._expected)

    def dark(self, node: bytes, generation: int) -> None:
        """`node`'s listener of `generation` may miss invalidations: the cache goes dark."""
        with self._guard:
            if generation != self._generation:
                return
            self._live.discard(node)
            self._cache.go_dark()


@dataclass(frozen=True)
class NodeSink:
    """The cache as one primary's listener sees it (`streamsaver.memory.invalidations`):
    invalidations and flushes go to the cache, liveness to the `TrackedNodes`."""

    nodes: TrackedNodes
    node: bytes
    generation: int
    cache: ItemCache

    def go_live(self) -> None:
        self.nodes.live(self.node, self.generation)

    def go_dark(self) -> None:
        self.nodes.dark(self.node, self.generation)

    def flush(self) -> None:
        self.cache.flush()

    def invalidate(self, keys: Iterable[bytes]) -> None:
        self.cache.invalidate(keys)
