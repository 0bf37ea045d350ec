"""The savers under test: one table of factories, and drivers that time one call of either kind.

Every Redis-based saver gets its own `EmbeddedRedis` with the same settings, so no saver reads
another's keys or shares its server's CPU time. A factory opens its saver inside an `ExitStack`
that closes clients and stops servers when the section that opened it ends. Postgres savers
(`benchmarks.postgres`) join the line-up only when a Postgres URL is given.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, closing
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import TYPE_CHECKING, Any, Protocol

import redis
import redis.asyncio
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.redis import RedisSaver
from langgraph.checkpoint.redis.aio import AsyncRedisSaver
from langgraph.checkpoint.redis.ashallow import AsyncShallowRedisSaver
from langgraph.checkpoint.redis.shallow import ShallowRedisSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from streamsaver import AsyncStreamSaver, StreamSaver

if TYPE_CHECKING:  # imported where a server starts: `benchmarks.ab` loads this module against
    # older trees of streamsaver, whose embedded server lived elsewhere
    from streamsaver.server.embedded import EmbeddedRedis

__all__ = [
    "EXTRA_SAVERS",
    "SAVERS",
    "AsyncDriver",
    "Driver",
    "Environment",
    "Opened",
    "SaverSpec",
    "SyncDriver",
    "catalog",
]


class Driver(Protocol):
    """Calls one saver method by its sync name and times it."""

    def call(self, method: str, *args: Any, **kwargs: Any) -> tuple[Any, float]:
        """The method's result (a list for ``list``) and its wall time in seconds."""
        ...


@dataclass(frozen=True)
class SyncDriver:
    saver: BaseCheckpointSaver[Any]

    def call(self, method: str, *args: Any, **kwargs: Any) -> tuple[Any, float]:
        start = perf_counter()
        result = getattr(self.saver, method)(*args, **kwargs)
        if method == "list":
            result = list(result)
        return result, perf_counter() - start


@dataclass(frozen=True)
class AsyncDriver:
    """Runs the ``a``-twin of each method on one event loop; the clock runs inside the loop."""

    saver: BaseCheckpointSaver[Any]
    loop: asyncio.AbstractEventLoop

    def call(self, method: str, *args: Any, **kwargs: Any) -> tuple[Any, float]:
        return self.loop.run_until_complete(self._timed(method, args, kwargs))

    async def _timed(
        self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, float]:
        start = perf_counter()
        if method == "list":
            result: Any = [t async for t in self.saver.alist(*args, **kwargs)]
        else:
            result = await getattr(self.saver, "a" + method)(*args, **kwargs)
        return result, perf_counter() - start


@dataclass
class Environment:
    """What factories share: the exit stack, a temp dir, the event loop, the Postgres URL."""

    stack: ExitStack
    tmp: Path
    loop: asyncio.AbstractEventLoop
    servers: list[EmbeddedRedis] = field(default_factory=list)
    postgres_url: str | None = None

    def redis_server(self) -> EmbeddedRedis:
        """A new server, stopped when the environment closes."""
        if not self.servers:  # registered before any client, so it runs after they close
            self.stack.callback(self._stop_servers)
        from streamsaver.server.embedded import EmbeddedRedis

        server = EmbeddedRedis()
        server.start()
        self.servers.append(server)
        return server

    def _stop_servers(self) -> None:
        # One stop takes seconds (SHUTDOWN waits for the server); stop them side by side.
        with ThreadPoolExecutor(max_workers=len(self.servers)) as pool:
            list(pool.map(lambda server: server.stop(), self.servers))

    def settle(self, timeout_s: float = 300.0) -> float:
        """Wait until no server of this environment is rewriting its AOF (or saving a snapshot);
        returns the seconds waited. A large fill makes Redis rewrite its AOF in a forked child,
        which takes one of the machine's two cores: calls timed meanwhile measure the rewrite."""
        started = time.perf_counter()
        for server in self.servers:
            with closing(redis.Redis.from_url(server.url)) as client:
                while time.perf_counter() - started < timeout_s:
                    info = client.info("persistence")
                    busy = ("aof_rewrite_in_progress", "aof_rewrite_scheduled", "rdb_bgsave_in_progress")
                    if not any(int(info.get(key, 0)) for key in busy):
                        break
                    time.sleep(0.05)  # polling the server's state: nothing to wait on instead
        return time.perf_counter() - started

    def redis_client(self, server: EmbeddedRedis) -> redis.Redis:
        return self.stack.enter_context(closing(redis.Redis.from_url(server.url)))


@dataclass(frozen=True)
class Opened:
    """A saver ready to measure, its driver, and how to weigh what it stored."""

    saver: BaseCheckpointSaver[Any]
    driver: Driver
    stored_bytes: Callable[[], int | None]


Factory = Callable[[Environment], Opened]


@dataclass(frozen=True)
class SaverSpec:
    """One saver under test.

    Args:
        key: its name on the command line.
        name: its name in the report.
        open: the factory.
        keeps_history: False for savers that keep only the latest checkpoint of a thread.
        backend: ``redis``, ``sqlite``, ``postgres`` or ``memory`` (round trips are counted,
            and fills pipelined, on Redis only).
        api: ``sync``, ``async`` or ``both``: which graph APIs (``invoke``/``ainvoke``) it serves.
    """

    key: str
    name: str
    open: Factory
    keeps_history: bool = True
    backend: str = "redis"
    api: str = "sync"


_LUA_FULL_GC = "collectgarbage('collect') return 0"


def _redis_bytes(server: EmbeddedRedis) -> Callable[[], int | None]:
    """The server's ``used_memory``: everything (keys, module data such as indexes, overhead),
    weighed after a full collection of the server's Lua heap.

    The Lua heap counts in ``used_memory`` and keeps the strings of past script calls (for a
    script-based saver, every payload it was sent) until Lua's incremental collector reaches
    them; weighed without a collection, that garbage (~4 KiB per checkpoint after 40 puts of the
    growing conversation) would count as stored. Every Redis-based saver's server is weighed the
    same way."""

    def measure() -> int | None:
        with closing(redis.Redis.from_url(server.url)) as client:
            client.eval(_LUA_FULL_GC, 0)
            return int(client.info("memory")["used_memory"])

    return measure


def _stream_saver(
    view: str, projections: tuple[str, ...], compression: str | None = "zstd", deltas: bool = True
) -> Factory:
    def open_(env: Environment) -> Opened:
        server = env.redis_server()
        saver = StreamSaver(
            env.redis_client(server), view=view, projections=projections, compression=compression, deltas=deltas
        )
        saver.setup()
        return Opened(saver, SyncDriver(saver), _redis_bytes(server))

    return open_


def async_redis_client(env: Environment, url: str) -> redis.asyncio.Redis:
    """A default-settings asyncio client, closed on the run's loop when the section ends."""
    client = redis.asyncio.Redis.from_url(url)
    env.stack.callback(lambda: env.loop.run_until_complete(client.aclose()))
    return client


def _async_stream_saver(view: str, projections: tuple[str, ...]) -> Factory:
    def open_(env: Environment) -> Opened:
        server = env.redis_server()

        async def setup() -> AsyncStreamSaver:
            client = async_redis_client(env, server.url)
            saver = AsyncStreamSaver(client, view=view, projections=projections)
            await saver.setup()
            return saver

        saver = env.loop.run_until_complete(setup())
        return Opened(saver, AsyncDriver(saver, env.loop), _redis_bytes(server))

    return open_


def _async_peer(cls: type[AsyncRedisSaver | AsyncShallowRedisSaver]) -> Factory:
    def open_(env: Environment) -> Opened:
        server = env.redis_server()

        async def setup() -> AsyncRedisSaver | AsyncShallowRedisSaver:
            saver = cls(redis_client=async_redis_client(env, server.url))
            await saver.asetup()
            return saver

        saver = env.loop.run_until_complete(setup())
        return Opened(saver, AsyncDriver(saver, env.loop), _redis_bytes(server))

    return open_


def _peer(cls: type[RedisSaver | ShallowRedisSaver]) -> Factory:
    def open_(env: Environment) -> Opened:
        server = env.redis_server()
        saver = cls(redis_client=env.redis_client(server))
        saver.setup()
        return Opened(saver, SyncDriver(saver), _redis_bytes(server))

    return open_


def _file_bytes(path: Path) -> Callable[[], int | None]:
    """Bytes of the database file after its write-ahead log is folded into it."""

    def measure() -> int | None:
        with closing(sqlite3.connect(path)) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        files = [path, path.with_name(path.name + "-wal")]
        return sum(f.stat().st_size for f in files if f.exists())

    return measure


def _sqlite(env: Environment) -> Opened:
    path = env.tmp / "checkpoints.sqlite"
    conn = env.stack.enter_context(closing(sqlite3.connect(path, check_same_thread=False)))
    saver = SqliteSaver(conn)
    saver.setup()
    return Opened(saver, SyncDriver(saver), _file_bytes(path))


def _async_sqlite(env: Environment) -> Opened:
    import aiosqlite

    path = env.tmp / "checkpoints-async.sqlite"

    async def setup() -> AsyncSqliteSaver:
        conn = await aiosqlite.connect(path)
        env.stack.callback(lambda: env.loop.run_until_complete(conn.close()))
        saver = AsyncSqliteSaver(conn)
        await saver.setup()
        return saver

    saver = env.loop.run_until_complete(setup())
    return Opened(saver, AsyncDriver(saver, env.loop), _file_bytes(path))


def _memory(env: Environment) -> Opened:
    saver = InMemorySaver()
    return Opened(saver, SyncDriver(saver), lambda: None)


SAVERS: tuple[SaverSpec, ...] = (
    # ("full",): what a default StreamSaver projects on a new deployment, spelled out so that
    # `benchmarks.ab` can open it from trees whose default projected both views.
    SaverSpec("ss-full", "StreamSaver full", _stream_saver("full", ("full",))),
    SaverSpec(
        "ss-shallow",
        "StreamSaver shallow",
        _stream_saver("shallow", ("shallow",)),
        keeps_history=False,
    ),
    SaverSpec(
        "ss-async",
        "AsyncStreamSaver full",
        _async_stream_saver("full", ("full",)),
        api="async",
    ),
    SaverSpec(
        "ss-async-shallow",
        "AsyncStreamSaver shallow",
        _async_stream_saver("shallow", ("shallow",)),
        keeps_history=False,
        api="async",
    ),
    SaverSpec("redis", "RedisSaver 0.5.2", _peer(RedisSaver)),
    SaverSpec(
        "redis-shallow", "ShallowRedisSaver 0.5.2", _peer(ShallowRedisSaver), keeps_history=False
    ),
    SaverSpec("redis-async", "AsyncRedisSaver 0.5.2", _async_peer(AsyncRedisSaver), api="async"),
    SaverSpec(
        "redis-async-shallow",
        "AsyncShallowRedisSaver 0.5.2",
        _async_peer(AsyncShallowRedisSaver),
        keeps_history=False,
        api="async",
    ),
    SaverSpec("sqlite", "SqliteSaver (file)", _sqlite, backend="sqlite"),
    SaverSpec(
        "sqlite-async", "AsyncSqliteSaver (file)", _async_sqlite, backend="sqlite", api="async"
    ),
    SaverSpec("memory", "InMemorySaver", _memory, backend="memory", api="both"),
)
"""Every saver without a Postgres server, in report order; the first is the baseline of every
ratio. (``sqlite-async`` serves the async end-to-end runs; the default micro line-up leaves it
out.)"""

EXTRA_SAVERS: tuple[SaverSpec, ...] = (
    SaverSpec(
        "ss-full-both", "StreamSaver full (full and shallow inline)", _stream_saver("full", ("full", "shallow"))
    ),
    SaverSpec(
        "ss-full-plain",
        "StreamSaver full, compression=None",
        _stream_saver("full", ("full", "shallow"), None),
    ),
    SaverSpec(
        "ss-full-whole",
        "StreamSaver full, deltas=False",
        _stream_saver("full", ("full", "shallow"), deltas=False),
    ),
)
"""Variants measured only on request (``--savers``)."""


def catalog(postgres_url: str | None) -> dict[str, SaverSpec]:
    """Every saver by key; the Postgres ones only with a URL (their package is then imported)."""
    specs = [*SAVERS, *EXTRA_SAVERS]
    if postgres_url:
        from benchmarks.postgres import POSTGRES_SAVERS

        specs[len(SAVERS) - 1 : len(SAVERS) - 1] = POSTGRES_SAVERS
    return {s.key: s for s in specs}
