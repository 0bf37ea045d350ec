"""`Lane`: the sync saver's round trips on a plain ``redis.Redis``, without the per-command
overhead of ``execute_command``.

For every command, ``redis.Redis.execute_command`` checks a connection out of the pool (which
``poll``s the socket for stale data: a system call that lets another thread take the GIL),
packs the arguments in Python (an ``isinstance`` per argument; a put sends ~100), records
metrics and checks the connection back in. On the hot paths that was ~20% of a put's client
instructions and ~35% of a put_writes' (callgrind, the benchmark's agent loop). LangGraph runs
puts and put_writes on background threads while the graph runs on the main one, so every
instruction and every release of the GIL there delays the chain of checkpoints it waits for.

A lane keeps the connections it used checked out of the client's pool and reuses them, one call
at a time each (``list.pop`` and ``append`` are atomic); every saver on one pool shares its lane,
which keeps at most `IDLE_MAX` idle connections and an eighth of those the pool allows. It packs
a request with hiredis in one
call (as redis-py does, minus its Python loop over the arguments), writes it with the
connection's ``send_packed_command`` and reads one reply per command with ``read_response``,
under the connection's own ``Retry`` (a dropped connection is reconnected and the request sent
again: appends are idempotent, see ``append.lua``). A connection is clean after every call: a
reply that is an error was read whole, and redis-py disconnects a connection whose send or read
was cut short (the next call connects it again), so it goes back to the lane either way. A
connection that waited in the lane for more than `STALE_S` is checked as the pool checks the ones
it hands out (readable means closed by the server, or holding stray bytes: it is reconnected),
so a client made without retries still gets through the first call after a server timeout.
What the pool does to connections it gets back is done before a lane's connection is used again:
re-authenticating with a token a streaming credential provider handed the pool meanwhile, and
reconnecting one the pool marked on a maintenance notice (the endpoint moves).

Only a client whose command path holds nothing else gets a lane (`Lane.of`); any other keeps
``execute_command`` and pipelines: a cluster client; a subclass of ``redis.Redis`` or a
patched ``execute_command`` (tracing instrumentations wrap it, before this module is imported
or after, and must see every command);
a single-connection client; a pool that is not a plain ``ConnectionPool`` (a blocking pool's
connections are few, a sentinel pool picks the primary when it hands one out); client-side
caching (RESP3 push messages: with no client tracking, a connection gets none, and RESP2 and
RESP3 replies read alike), or redis-py's metrics enabled.
"""

from __future__ import annotations

import inspect
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import hiredis
import redis
import redis.client
from redis.exceptions import BusyLoadingError, DataError, ResponseError

try:
    from redis.observability.providers import get_observability_instance

    def metrics_enabled() -> bool:
        """Whether redis-py records metrics (a lane would skip them)."""
        return bool(get_observability_instance().is_enabled())

except ImportError:  # pragma: no cover - redis-py before 8 records no metrics

    def metrics_enabled() -> bool:
        return False


__all__ = ["IDLE_MAX", "STALE_S", "Lane", "metrics_enabled", "pack"]

IDLE_MAX = 16
"""The most connections a lane keeps between calls (and at most an eighth of the pool's
``max_connections``, redis-py's default being 100); a call that ends while as many are idle
returns its connection to the pool. LangGraph's sync loop makes up to six calls at once."""

STALE_S = 1.0
"""How long a connection may wait in the lane before it is checked for a closed socket (the
pool checks every connection it hands out: a ``poll``, a system call releasing the GIL)."""


def _redis_own_execute() -> Callable[..., Any] | None:
    """redis-py's own ``Redis.execute_command``, or None when what is installed does not lead
    back to it: a tracer that patched it before this module was imported (``opentelemetry-instrument``,
    ``sentry_sdk.init`` at start-up) must not be taken for redis-py's and skipped."""
    function: Callable[..., Any] = inspect.unwrap(redis.Redis.__dict__["execute_command"])
    code = getattr(function, "__code__", None)
    if code is None or os.path.normcase(code.co_filename) != os.path.normcase(redis.client.__file__):
        return None
    return function


_PLAIN_EXECUTE = _redis_own_execute()
# hiredis's stub types the argument as a one-element tuple; it takes any number of arguments.
_pack_command: Callable[[tuple[Any, ...]], bytes] = hiredis.pack_command
_lanes: weakref.WeakKeyDictionary[redis.ConnectionPool, Lane] = weakref.WeakKeyDictionary()
_lanes_lock = threading.Lock()


class Lane:
    """Round trips on connections kept out of a plain client's pool (see the module)."""

    def __init__(self, pool: redis.ConnectionPool) -> None:
        # Weakly: the lane is the pool's value in `_lanes`, and must not keep it alive.
        self._pool = weakref.ref(pool)
        self._keep = min(IDLE_MAX, pool.max_connections // 8)
        self._idle: list[tuple[Any, float]] = []  # (connection, when it was given back)
        self._pid = os.getpid()

    @classmethod
    def of(cls, client: Any) -> Lane | None:
        """A lane for `client`, or None when its command path must be kept (see the module)."""
        if type(client) is not redis.Redis or client.connection is not None:
            return None
        pool = client.connection_pool
        if (
            type(pool) is not redis.ConnectionPool
            or getattr(pool, "cache", None) is not None
            or metrics_enabled()
        ):
            return None
        with _lanes_lock:  # one lane per pool, whichever savers share it
            lane = _lanes.get(pool)
            if lane is None:
                lane = _lanes[pool] = cls(pool)
        return lane

    @staticmethod
    def open() -> bool:
        """Whether ``redis.Redis.execute_command`` is redis-py's own (not wrapped, then or since)."""
        return _PLAIN_EXECUTE is not None and redis.Redis.execute_command is _PLAIN_EXECUTE

    def send(
        self, commands: Sequence[Sequence[str | bytes | int]], meanwhile: Callable[[], object] | None = None
    ) -> list[Any]:
        """The replies to `commands`, sent together in one write; an error reply is returned as
        its exception (like a pipeline's ``raise_on_error=False``); from a ``LOADING`` reply on,
        every reply is that ``BusyLoadingError``. `meanwhile` runs once they
        are written, before the replies are read (`streamsaver.log.program.Call`).

        Raises:
            ConnectionError, TimeoutError: the connection failed more often than its ``Retry``
                allows.
            DataError: an argument hiredis cannot pack.
        """
        packed = [b"".join(pack(command) for command in commands)]
        connection = self._take()
        try:
            return connection.retry.call_with_retry(  # type: ignore[no-any-return]
                lambda: _exchange(connection, packed, len(commands), meanwhile), lambda _error: connection.disconnect()
            )
        except BaseException:
            connection.disconnect()  # a reply may be left unread: the next call connects afresh
            raise
        finally:
            self._give_back(connection)

    def _take(self) -> Any:
        if os.getpid() != self._pid:
            # A forked child shares the parent's sockets: forget them (the pool does the same).
            self._idle, self._pid = [], os.getpid()
        try:
            connection, since = self._idle.pop()
        except IndexError:
            return self._alive_pool().get_connection()
        if connection.should_reconnect():
            # Marked by the pool on a maintenance notice (the endpoint moves), as the pool
            # and execute_command reconnect a connection after its command.
            connection.disconnect()
        elif time.monotonic() - since > STALE_S:
            _check(connection)
        return connection

    def _give_back(self, connection: Any) -> None:
        if len(self._idle) < self._keep and connection.pid == self._pid:
            self._idle.append((connection, time.monotonic()))
        else:
            self._alive_pool().release(connection)

    def _alive_pool(self) -> redis.ConnectionPool:
        pool = self._pool()
        if pool is None:  # pragma: no cover - a saver's client keeps its pool alive
            raise redis.ConnectionError("the connection pool of this lane is gone")
        return pool


def pack(command: Sequence[str | bytes | int]) -> bytes:
    """`command` in the Redis protocol, packed by hiredis (the asyncio lane's too).

    Raises:
        DataError: an argument hiredis cannot pack.
    """
    head = command[0]
    if isinstance(head, str) and " " in head:  # as redis-py: "SCRIPT LOAD" is two words
        command = [*head.split(), *command[1:]]
    try:
        packed = _pack_command(tuple(command))
    except TypeError as exc:
        raise DataError(str(exc)) from exc
    return packed


def _check(connection: Any) -> None:
    """Disconnect `connection` when its socket is readable (closed by the server, or holding
    bytes no call asked for), as ``ConnectionPool.get_connection`` does: the next send connects
    it again."""
    try:
        stale = connection.can_read()  # connects a disconnected one first
    except (redis.ConnectionError, OSError):
        stale = True
    if stale:
        connection.disconnect()


def _exchange(connection: Any, packed: list[bytes], count: int, meanwhile: Callable[[], object] | None) -> list[Any]:
    # A token the pool was given while the lane held `connection` (the pool re-authenticates
    # the connections it gets back); nothing to send otherwise.
    connection.re_auth()
    connection.send_packed_command(packed)
    if meanwhile is not None:
        meanwhile()
    replies: list[Any] = []
    for _ in range(count):
        try:
            replies.append(connection.read_response())
        except ResponseError as error:  # an error reply, read whole: the next reply follows
            replies.append(error)
        except BusyLoadingError as error:
            # The server is loading its data. It refused this command, and the ones after it
            # reached it while it loaded (unread: redis-py closed the connection on this reply);
            # a script call among them ran nothing. Not raised: the connection's ``Retry``
            # would send the whole request again, commands that ran before it began loading
            # included; the driver sends again what was refused once it has loaded.
            replies.extend([error] * (count - len(replies)))
            break
    return replies
