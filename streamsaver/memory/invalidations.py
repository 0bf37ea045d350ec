"""The invalidation listener of a store's item cache (`streamsaver.store.item_cache`): a daemon
thread with one connection of its own that receives, from Redis's server-assisted client-side
caching, the name of every item document any client changes, and evicts it.

The connection (RESP2, whatever the store's client speaks) asks for ``CLIENT TRACKING ON
REDIRECT <its own id> BCAST PREFIX <the item-document prefix>`` and then subscribes to
``__redis__:invalidate``: BCAST mode needs no tracking of each read (the server keeps no table
of keys per client) and redirecting to itself means the tracking and the subscription live and
die together (tracking redirected to a second connection keeps going, silently unheard in RESP2,
when that one drops). The cache serves nothing until the subscription is confirmed (`go_live`),
and forgets everything whenever the connection fails, closes or stops answering a heartbeat
(`go_dark`); the thread then connects again, backing off, until `stop`.

A thread rather than an asyncio task, for both stores: one implementation; invalidations are
applied while an event loop is busy (a task would wait for the loop, and so would widen the
stale window exactly when gets run); and stopping needs no loop. The async store's listener
connects with a sync connection built from its client's connection settings.
"""

from __future__ import annotations

import inspect
import logging
import socket
import threading
import time
from typing import Any, Protocol

import redis
import redis.asyncio
import redis.asyncio.sentinel
import redis.sentinel
from redis.exceptions import RedisError

from streamsaver.errors import ConfigurationError
from streamsaver.store.item_cache import ItemCache

__all__ = ["CacheSink", "InvalidationListener", "Outage", "connection_class", "connection_factory",
           "connection_settings"]

log = logging.getLogger("streamsaver.store")

CHANNEL = b"__redis__:invalidate"
HEARTBEAT_S = 1.0
"""Silence after which the listener pings."""
LOST_AFTER_S = 5.0
"""How long a ping may go unanswered before the server counts as lost (a busy server, a long
script or an index build, answers late but answers: the cache need not be dropped for it)."""
_BACKOFF_S = (0.05, 2.0)
_SETTINGS = frozenset({
    "host", "port", "path", "db", "username", "password", "credential_provider", "socket_connect_timeout",
    "socket_keepalive", "socket_keepalive_options", "socket_type", "client_name",
})


def _accepted(kind: Any) -> set[str]:
    """The keyword arguments a connection class takes, its bases' included."""
    return {name for cls in kind.__mro__ if "__init__" in vars(cls)
            for name in inspect.signature(cls.__init__).parameters}


def connection_class(pool_class: Any) -> Any:
    """The sync connection class matching a pool's (sync or asyncio) `pool_class`."""
    if issubclass(pool_class, (redis.SSLConnection, redis.asyncio.SSLConnection)):
        return redis.SSLConnection
    if issubclass(pool_class, (redis.UnixDomainSocketConnection, redis.asyncio.UnixDomainSocketConnection)):
        return redis.UnixDomainSocketConnection
    return redis.Connection


def connection_settings(kind: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The address, credential and TLS settings among a client's connection `kwargs` that the
    connection class `kind` takes."""
    accepted = _accepted(kind)
    return {name: value for name, value in kwargs.items()
            if (name in _SETTINGS or name.startswith("ssl_")) and name in accepted}


def connection_factory(client: Any) -> Any:
    """A function making a new sync RESP2 connection to the server of `client` (a ``redis.Redis``
    or a ``redis.asyncio.Redis``) with its address, credentials and TLS settings, and a timeout of
    a few heartbeats for each read once a message has begun (the wait between messages is the
    listener's, see `HEARTBEAT_S`).

    Raises:
        ConfigurationError: a client whose pool finds its server otherwise than by address
            (Sentinel, or no host nor path in its settings): the listener could end up on
            another server than the client's.
    """
    pool = client.connection_pool
    if issubclass(pool.connection_class, (redis.sentinel.SentinelManagedConnection,
                                          redis.asyncio.sentinel.SentinelManagedConnection)):
        raise ConfigurationError("local_cache is not supported on a Sentinel-managed client: its invalidation "
                                 "connection must reach the very server the client reads")
    kind = connection_class(pool.connection_class)
    settings = connection_settings(kind, pool.connection_kwargs)
    if "path" not in settings and "host" not in settings:
        raise ConfigurationError("local_cache needs a client whose pool names its server (host or unix path): "
                                 f"{pool.connection_class.__name__} does not")
    return lambda: kind(**settings, protocol=2, socket_timeout=5 * HEARTBEAT_S)


class CacheSink(Protocol):
    """What a listener feeds: an `ItemCache`, or one primary's view of it on a cluster
    (`streamsaver.store.tracked_nodes.NodeSink`)."""

    def go_live(self) -> None: ...
    def go_dark(self) -> None: ...
    def flush(self) -> None: ...
    def invalidate(self, keys: Any) -> None: ...


class Outage:
    """Whether the listeners of one cache (and the cluster's supervisor) warned of the current
    outage: one warning for all of them (a cluster's runtime ACL user is refused by every primary
    alike). The outage lasts while any of them is failing: one coming back does not end it for
    the others. Shared by their threads, so each change is made under a lock."""

    def __init__(self) -> None:
        self._warned = False
        self._failing: set[object] = set()
        self._guard = threading.Lock()

    def claim_warning(self, member: object) -> bool:
        """`member` is failing: True for the first failure of this outage only (it logs the warning)."""
        with self._guard:
            self._failing.add(member)
            first, self._warned = not self._warned, True
            return first

    def end(self, member: object) -> None:
        """`member` is back (or gone): the outage is over once no member is failing, and the next
        one warns again."""
        with self._guard:
            self._failing.discard(member)
            if not self._failing:
                self._warned = False


class InvalidationListener:
    """Feeds `cache` the invalidations of every key under `prefix`, from a daemon thread started
    by `start` and ended by `stop`. With `node` (a cluster primary's id), each connection first
    checks that its server is that primary (``CLUSTER MYID``): an address now serving another
    node is a lost connection.

    Attributes:
        client_id: the server's id of the listener's current connection (None while it has none).
        lost_after: seconds a heartbeat may go unanswered (`LOST_AFTER_S`).
    """

    def __init__(self, connect: Any, cache: CacheSink | ItemCache, prefix: bytes, node: bytes | None = None,
                 outage: Outage | None = None) -> None:
        self.client_id: int | None = None
        self.lost_after = LOST_AFTER_S
        self._connect, self._cache, self._prefix, self._node = connect, cache, prefix, node
        self._stopping = threading.Event()
        self._guard = threading.Lock()
        self._connection: Any = None
        self._outage = outage or Outage()
        self._thread = threading.Thread(target=self._run, name="streamsaver-invalidations", daemon=True)

    def start(self) -> None:
        """Start the thread (the cache goes live once subscribed)."""
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """End the thread and close its connection (idempotent); the cache goes dark."""
        self._stopping.set()
        with self._guard:
            sock = getattr(self._connection, "_sock", None)
            if sock is not None:
                try:  # wakes the thread's blocking read at once
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    log.debug("the invalidation connection was already closed")
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self._cache.go_dark()
        self._outage.end(self)  # a listener gone no longer holds its outage open

    def _run(self) -> None:
        backoff = _BACKOFF_S[0]
        while not self._stopping.is_set():
            try:
                self._listen()
                backoff = _BACKOFF_S[0]
            except (RedisError, OSError) as error:
                if not self._stopping.is_set():
                    # once per outage: a server that refuses tracking would repeat it every backoff
                    log.log(logging.WARNING if self._outage.claim_warning(self) else logging.DEBUG,
                            "the store's local cache is off until its invalidation connection is back: %s", error)
            finally:
                self._cache.go_dark()
                self._close()
            self._stopping.wait(backoff)
            backoff = min(backoff * 2, _BACKOFF_S[1])

    def _listen(self) -> None:
        connection = self._connect()
        with self._guard:
            if self._stopping.is_set():
                return
            self._connection = connection
        connection.connect()
        if self._node is not None:
            connection.send_command("CLUSTER", "MYID")
            if (found := connection.read_response()) != self._node:
                raise redis.ConnectionError(f"{found!r} answers at the address of primary {self._node!r}")
        connection.send_command("CLIENT", "ID")
        self.client_id = int(connection.read_response())
        connection.send_command("CLIENT", "TRACKING", "ON", "REDIRECT", self.client_id, "BCAST",
                                "PREFIX", self._prefix)
        connection.send_command("SUBSCRIBE", CHANNEL)
        connection.read_response()
        connection.read_response()
        self._cache.go_live()
        self._outage.end(self)
        pinged: float | None = None
        while not self._stopping.is_set():
            if not connection.can_read(timeout=HEARTBEAT_S):
                if pinged is None:
                    connection.send_command("PING")
                    pinged = time.monotonic()
                elif time.monotonic() - pinged >= self.lost_after:
                    raise redis.ConnectionError(f"no answer to a heartbeat in {self.lost_after} s")
                continue
            if not self._apply(connection.read_response()):
                pinged = None

    def _apply(self, message: Any) -> bool:
        """Apply an invalidation `message`; False for the answer to a heartbeat."""
        if not isinstance(message, list) or len(message) < 2:
            return True
        if message[0] == b"message" and message[1] == CHANNEL and len(message) == 3:
            if message[2] is None:
                self._cache.flush()  # FLUSHALL, FLUSHDB, or tracking reset by the server
            else:
                self._cache.invalidate(message[2])
            return True
        return bool(message[0] != b"pong")

    def _close(self) -> None:
        with self._guard:
            connection, self._connection, self.client_id = self._connection, None, None
        if connection is not None:
            connection.disconnect()
