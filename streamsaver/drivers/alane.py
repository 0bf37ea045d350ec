"""`AsyncLane`: the asyncio saver's round trips on a plain ``redis.asyncio.Redis``, without the
per-command overhead of its ``execute_command``; the twin of `streamsaver.drivers.lane.Lane`,
whose module says what a lane keeps and why.

For every command, ``redis.asyncio.Redis.execute_command`` awaits the pool's ``get_connection``
(an ``asyncio.Lock``, a readiness check of the socket, four awaited metrics records) and its
``release`` (the lock again, an event dispatch, two more records), and packs the arguments in
Python, an ``isinstance`` and an ``encode`` per argument (the asyncio connection has no hiredis
packer; an append sends ~100 arguments): in a profile of ``aput_writes`` that packing alone was a
fifth of the call's client time. A lane packs a request with hiredis in one call and keeps the
connections it used between calls (at most `IDLE_MAX`, and an eighth of what the pool allows),
checking one that waited more than `STALE_S` as the pool checks every connection it hands out.
A connection whose call was cut short (a dropped socket, a cancelled task) is disconnected
before it goes back, so it is clean for the next call, which connects it again.

Only a client whose command path holds nothing else gets a lane (`AsyncLane.of`), as for the
sync lane: not a cluster client, a subclass or a patched ``execute_command`` (instrumentation
must see every command), a single-connection client, a pool that is not a plain
``ConnectionPool``, or redis-py's metrics enabled.
"""

from __future__ import annotations

import inspect
import os
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import redis.asyncio
import redis.asyncio.client
from redis.exceptions import BusyLoadingError, ResponseError

from streamsaver.drivers.lane import IDLE_MAX, STALE_S, metrics_enabled, pack

__all__ = ["AsyncLane"]


def _redis_own_execute() -> Callable[..., Any] | None:
    """redis-py's own ``redis.asyncio.Redis.execute_command``, or None when what is installed
    does not lead back to it (a tracer patched it before this module was imported)."""
    function: Callable[..., Any] = inspect.unwrap(redis.asyncio.Redis.__dict__["execute_command"])
    code = getattr(function, "__code__", None)
    if code is None or os.path.normcase(code.co_filename) != os.path.normcase(redis.asyncio.client.__file__):
        return None
    return function


_PLAIN_EXECUTE = _redis_own_execute()
# Not shared between pools' users by a lock: one event loop runs each lane's calls, and a
# lane's lists change only between awaits.
_lanes: weakref.WeakKeyDictionary[redis.asyncio.ConnectionPool, AsyncLane] = weakref.WeakKeyDictionary()


class AsyncLane:
    """Round trips on connections kept out of a plain asyncio client's pool (see the module)."""

    def __init__(self, pool: redis.asyncio.ConnectionPool) -> None:
        self._pool = weakref.ref(pool)
        self._keep = min(IDLE_MAX, pool.max_connections // 8)
        self._idle: list[tuple[Any, float]] = []  # (connection, when it was given back)
        self._pid = os.getpid()

    @classmethod
    def of(cls, client: Any) -> AsyncLane | None:
        """A lane for `client`, or None when its command path must be kept (see the module)."""
        if type(client) is not redis.asyncio.Redis or client.single_connection_client:
            return None
        pool = client.connection_pool
        if type(pool) is not redis.asyncio.ConnectionPool or getattr(pool, "cache", None) is not None:
            return None
        if metrics_enabled():
            return None
        lane = _lanes.get(pool)
        if lane is None:
            lane = _lanes[pool] = cls(pool)
        return lane

    @staticmethod
    def open() -> bool:
        """Whether ``redis.asyncio.Redis.execute_command`` is redis-py's own (not wrapped)."""
        return _PLAIN_EXECUTE is not None and redis.asyncio.Redis.execute_command is _PLAIN_EXECUTE

    async def send(
        self, commands: Sequence[Sequence[str | bytes | int]], meanwhile: Callable[[], object] | None = None
    ) -> list[Any]:
        """The replies to `commands`, sent together in one write; an error reply is returned as
        its exception (like a pipeline's ``raise_on_error=False``); from a ``LOADING`` reply on,
        every reply is that ``BusyLoadingError``. `meanwhile` runs once they
        are written, before the replies are awaited (`streamsaver.log.program.Call`).

        Raises:
            ConnectionError, TimeoutError: the connection failed more often than its ``Retry``
                allows.
            DataError: an argument hiredis cannot pack.
        """
        packed = [b"".join(pack(command) for command in commands)]
        connection = await self._take()
        try:
            return await connection.retry.call_with_retry(  # type: ignore[no-any-return]
                lambda: _exchange(connection, packed, len(commands), meanwhile), lambda _error: connection.disconnect()
            )
        except BaseException:
            # a reply may be left unread (a cancelled task too): the next call connects afresh
            await connection.disconnect(nowait=True)
            raise
        finally:
            await self._give_back(connection)

    async def release_idle(self) -> None:
        """Give the pool back every connection the lane keeps: while ``execute_command`` is
        wrapped the saver's calls go through the pool, whose size its driver's slots assume."""
        while self._idle:
            connection, _ = self._idle.pop()
            await self._alive_pool().release(connection)

    async def _take(self) -> Any:
        if os.getpid() != self._pid:  # a forked child shares the parent's sockets: forget them
            self._idle, self._pid = [], os.getpid()
        try:
            connection, since = self._idle.pop()
        except IndexError:
            pool: Any = self._alive_pool()  # redis-py leaves get_connection untyped
            return await pool.get_connection()
        if connection.should_reconnect():  # marked on a maintenance notice: the endpoint moves
            await connection.disconnect()
        elif time.monotonic() - since > STALE_S:
            await _check(connection)
        return connection

    async def _give_back(self, connection: Any) -> None:
        if len(self._idle) < self._keep:
            self._idle.append((connection, time.monotonic()))
        else:
            await self._alive_pool().release(connection)

    def _alive_pool(self) -> redis.asyncio.ConnectionPool:
        pool = self._pool()
        if pool is None:  # pragma: no cover - a saver's client keeps its pool alive
            raise redis.ConnectionError("the connection pool of this lane is gone")
        return pool


async def _check(connection: Any) -> None:
    """Disconnect `connection` when its socket is readable (closed by the server, or holding
    bytes no call asked for), as the pool's ``ensure_connection`` does."""
    try:
        await connection.connect()
        stale = await connection.can_read()
    except (redis.ConnectionError, OSError):
        stale = True
    if stale:
        await connection.disconnect()


async def _exchange(
    connection: Any, packed: list[bytes], count: int, meanwhile: Callable[[], object] | None
) -> list[Any]:
    await connection.re_auth()  # a token the pool was given meanwhile; nothing sent otherwise
    await connection.send_packed_command(packed)
    if meanwhile is not None:
        meanwhile()
    replies: list[Any] = []
    for _ in range(count):
        try:
            replies.append(await connection.read_response())
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
