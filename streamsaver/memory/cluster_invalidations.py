"""The invalidation listeners of a store's item cache on Redis Cluster: one
`streamsaver.memory.invalidations.InvalidationListener` per primary (each tracking the item
documents in BCAST mode on its own primary, redirecting to itself), kept in step with the
cluster's slot map by a supervising thread.

Tracking is per node: a primary sends the invalidations of the keys written on it, and only to
connections on it. So the cache is live only while every primary of the slot map has its
listener subscribed (`streamsaver.store.tracked_nodes.TrackedNodes`), and:

* the supervisor reads ``CLUSTER SLOTS`` every `HEARTBEAT_S` (on a connection of its own, from
  any primary that answers) and at once when a get's reply came from a primary that is not
  tracked (a ``MOVED`` that redis-py followed); when any slot changed owner, or a primary joined
  or left, or the map cannot be read, the cache goes dark (empty), the old listeners are
  stopped, one is started on each primary of the new map, and the cache is live again (empty)
  once all are subscribed;
* any listener whose connection fails (killed, heartbeat unanswered, the address now serving
  another node) makes the cache dark until it is back;
* a flush on any primary empties the whole cache.

Why no stale document is served, although the map is read only now and then: a get's reply is
held only if the primary that ran the read is tracked (``store_get.lua`` names it), and a
missing item is never held (`streamsaver.store.item_cache.ItemCache.offer`). A held document was
then read on a tracked primary P after its listener subscribed. A later write of that key runs on
the key's owner then: P (P sends the invalidation), another tracked primary (BCAST there covers
every key under the prefix, read there or not), or a primary Q not tracked. For Q to own the key,
its slot must have left P: with ``MIGRATE`` (resharding), P deletes the key as it ships it (and
a slot given away with keys left behind has them deleted), and a deletion is invalidated like
any write, generated before any write of the key on Q; in a failover, P's connection fails (the
cache goes dark) or P, now a replica, applies the new primary's writes and invalidates them. A
missing item leaves nothing to delete on P when its slot moves, which is why it is not held. The
slot-map check is what starts tracking a new primary (so its items can be held at all) and stops
tracking one that left; emptying the cache on every change also covers a resharding tool that
moves keys without deleting them visibly (the new atomic slot migration's trim).
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable
from typing import Any

from redis.exceptions import RedisError

from streamsaver.memory.invalidations import HEARTBEAT_S, InvalidationListener, Outage
from streamsaver.store.item_cache import ItemCache
from streamsaver.store.tracked_nodes import Primary, SlotMap, TrackedNodes, primaries_of, slot_map_of

__all__ = ["ClusterInvalidations"]

log = logging.getLogger("streamsaver.store")

Connect = Callable[[str, int], Any]
"""A new sync RESP2 connection (not yet connected) to a node's address."""


class ClusterInvalidations:
    """Keeps `cache` (made with ``per_node=True``) fed with the invalidations of every primary
    of the cluster, from `seeds` (addresses to read the slot map from first) on; started by
    `start`, ended by `stop`.

    Attributes:
        listeners: the current listener of each primary, by id.
        slot_map: the slot map they were started for (None: not read yet, or unreadable).
        checks: how many times the slot map was read (or failed to be).
    """

    def __init__(self, connect: Connect, seeds: list[tuple[str, int]], cache: ItemCache, prefix: bytes) -> None:
        self.listeners: dict[bytes, InvalidationListener] = {}
        self.slot_map: SlotMap | None = None
        self.checks = 0
        self._connect, self._seeds, self._cache, self._prefix = connect, seeds, cache, prefix
        self._nodes = TrackedNodes(cache)
        self._outage = Outage()
        self._control: Any = None
        self._control_guard = threading.Lock()  # the control connection: the supervisor's, shut by `stop`
        self._stopping = threading.Event()
        self._recheck = threading.Event()
        self._guard = threading.Lock()
        cache.on_untracked = self._recheck.set
        self._thread = threading.Thread(target=self._run, name="streamsaver-invalidations-cluster", daemon=True)

    def start(self) -> None:
        """Start the supervisor (it starts the listeners; the cache goes live once all are subscribed)."""
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """End the supervisor and every listener, close their connections (idempotent); the cache
        goes dark."""
        self._stopping.set()
        self._recheck.set()
        with self._control_guard:
            sock = getattr(self._control, "_sock", None)
            if sock is not None:
                try:  # wakes a read of the slot map from a node that does not answer, at once
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    log.debug("the control connection was already closed")
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self._retrack(None)
        self._close_control()

    def recheck(self) -> None:
        """Read the slot map now rather than at the next heartbeat."""
        self._recheck.set()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._recheck.clear()
            current = self._read_slot_map()
            self.checks += 1
            if current != self.slot_map and not self._stopping.is_set():
                self._retrack(current)
            self._recheck.wait(HEARTBEAT_S)

    def _read_slot_map(self) -> SlotMap | None:
        """The slot map from the control connection, or from the first known node that answers
        (None when none does: the cache stays dark meanwhile)."""
        known = [(primary.host, primary.port) for primary in primaries_of(self.slot_map or ())]
        for address in [None, *known, *self._seeds]:
            if self._stopping.is_set():
                return None
            try:
                if address is not None:
                    self._close_control()
                    self._open_control(address)
                if self._control is None:
                    continue
                self._control.send_command("CLUSTER", "SLOTS")
                slot_map = slot_map_of(self._control.read_response())
                self._outage.end(self)
                return slot_map
            except (RedisError, OSError) as error:
                self._close_control()
                log.debug("the slot map could not be read from %s: %s", address or "the last node", error)
        if self._outage.claim_warning(self):
            log.warning("the store's local cache is off until a node of the cluster answers CLUSTER SLOTS")
        return None

    def _open_control(self, address: tuple[str, int]) -> None:
        """Connect the control connection to `address`, unless `stop` began meanwhile: it is then
        either connected before `stop` looks (which shuts it) or not kept."""
        control = self._connect(*address)
        control.connect()
        with self._control_guard:
            if not self._stopping.is_set():
                self._control, control = control, None
        if control is not None:
            control.disconnect()

    def _close_control(self) -> None:
        with self._control_guard:
            control, self._control = self._control, None
        if control is not None:
            control.disconnect()

    def _retrack(self, slot_map: SlotMap | None) -> None:
        """Go dark, stop every listener, and start one on each primary of `slot_map`."""
        with self._guard:
            primaries = primaries_of(slot_map or ())
            self._nodes.expect(primary.node for primary in primaries)
            old, self.listeners, self.slot_map = self.listeners, {}, slot_map
            for listener in old.values():
                listener.stop()
            if self._stopping.is_set():
                return
            for primary in primaries:
                self.listeners[primary.node] = self._listener(primary)

    def _listener(self, primary: Primary) -> InvalidationListener:
        listener = InvalidationListener(lambda: self._connect(primary.host, primary.port),
                                        self._nodes.sink(primary.node), self._prefix, primary.node, self._outage)
        listener.start()
        return listener
