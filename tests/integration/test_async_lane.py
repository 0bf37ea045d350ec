"""The asyncio saver's round trips on a plain client skip ``execute_command``'s per-command work
(`streamsaver.drivers.alane`) without taking from the client what it promises others: the
connections its pool allows, the commands its instrumentation sees, a server that closed an idle
connection, a clean connection after a call that was cancelled half-way."""

from __future__ import annotations

import asyncio
import functools
import threading
from typing import Any

import pytest
import redis.asyncio
from helpers import config, new_checkpoint
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from streamsaver import AsyncStreamSaver
from streamsaver.drivers import alane
from streamsaver.server.embedded import EmbeddedRedis


async def _steps(saver: AsyncStreamSaver, thread: str, steps: int = 3) -> None:
    parent = config(thread)
    previous = None
    for step in range(steps):
        checkpoint, versions = new_checkpoint({"step": step}, previous)
        saved = await saver.aput(parent, checkpoint, {"source": "loop", "step": step}, versions)
        await saver.aput_writes(saved, [("step", step + 1)], f"task-{step}")
        parent, previous = saved, checkpoint
    latest = await saver.aget_tuple(config(thread))
    assert latest is not None and latest.checkpoint["channel_values"] == {"step": steps - 1}
    assert latest.pending_writes == [(f"task-{steps - 1}", "step", steps)]


async def _busy(saver: AsyncStreamSaver, prefix: str, threads: int) -> None:
    await asyncio.gather(*(_steps(saver, f"{prefix}-{i}") for i in range(threads)))


def _lane_of(saver: AsyncStreamSaver) -> alane.AsyncLane:
    lane = saver._adriver.lane
    assert lane is not None
    return lane


async def test_savers_sharing_a_client_keep_few_of_its_connections(redis_url: str, prefix: str) -> None:
    """The lane keeps at most an eighth of what the pool allows: the client's other users still
    get the rest, and every saver on the pool shares the one lane."""
    client = redis.asyncio.Redis.from_url(redis_url, max_connections=16)
    try:
        savers = [AsyncStreamSaver(client, prefix=prefix) for _ in range(4)]
        assert len({id(_lane_of(saver)) for saver in savers}) == 1
        for n, saver in enumerate(savers):
            await _busy(saver, f"s{n}", 8)
        assert len(_lane_of(savers[0])._idle) <= 2
        pool = client.connection_pool
        taken = [await pool.get_connection() for _ in range(14)]  # MaxConnectionsError if not
        for connection in taken:
            await pool.release(connection)
    finally:
        await client.aclose()


async def test_a_wrapped_execute_command_sees_every_command(
    redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tracing instrumentations wrap ``execute_command``, also after the saver was made."""
    client = redis.asyncio.Redis.from_url(redis_url)
    try:
        saver = AsyncStreamSaver(client, prefix=prefix)
        await _steps(saver, "before")
        seen: list[Any] = []
        plain = redis.asyncio.Redis.execute_command

        @functools.wraps(plain)
        async def traced(self: redis.asyncio.Redis, *args: Any, **options: Any) -> Any:
            seen.append(args[0])
            return await plain(self, *args, **options)

        monkeypatch.setattr(redis.asyncio.Redis, "execute_command", traced)
        await _steps(saver, "after", steps=2)
        assert seen.count("EVALSHA") == 5  # two puts, two put_writes, one get_tuple
    finally:
        await client.aclose()


async def test_a_connection_the_server_closed_while_idle_is_replaced_without_retries(
    redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the pool does for the connections it hands out: a client made without retries gets
    through the first call after the server dropped its idle connections."""
    monkeypatch.setattr(alane, "STALE_S", 0.0)  # every idle connection counts as having waited
    no_retries = redis.asyncio.Redis.from_url(redis_url, retry=Retry(NoBackoff(), 0))
    killer = redis.asyncio.Redis.from_url(redis_url)
    try:
        saver = AsyncStreamSaver(no_retries, prefix=prefix)
        await _busy(saver, "before", 3)
        assert _lane_of(saver)._idle
        killed = await killer.client_kill_filter(_type="normal", skipme=True)
        assert killed >= 1
        await _busy(saver, "after", 3)
    finally:
        await no_retries.aclose()
        await killer.aclose()


async def test_a_call_cancelled_while_waiting_for_its_reply_leaves_no_reply_behind(
    redis_url: str, prefix: str
) -> None:
    """A task cancelled between its request and its reply (a timeout around ``aget_tuple``)
    must not leave the reply on a kept connection, where the next call would read it as its own."""
    client = redis.asyncio.Redis.from_url(redis_url)
    pauser = redis.asyncio.Redis.from_url(redis_url)
    try:
        saver = AsyncStreamSaver(client, prefix=prefix)
        await _steps(saver, "a")
        await _steps(saver, "b", steps=2)
        lane = _lane_of(saver)
        for _ in range(3):
            assert len(lane._idle) == 1
            # the server holds every request for a while: the task's reply cannot come before
            # the cancel, and comes after it
            await pauser.execute_command("CLIENT", "PAUSE", 300, "ALL")
            task = asyncio.create_task(saver.aget_tuple(config("a")))
            while lane._idle:
                await asyncio.sleep(0)  # until the task took the kept connection
            for _ in range(5):
                await asyncio.sleep(0)  # and sent its request (no await in between suspends)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            other = await saver.aget_tuple(config("b"))  # waits out the pause
            assert other is not None and other.checkpoint["channel_values"] == {"step": 1}
    finally:
        await client.aclose()
        await pauser.aclose()


@pytest.mark.parametrize("protocol", [2, 3])
async def test_clients_of_either_protocol_get_a_lane_and_read_alike(redis_url: str, prefix: str, protocol: int) -> None:
    client = redis.asyncio.Redis.from_url(redis_url, protocol=protocol)
    try:
        assert alane.AsyncLane.of(client) is not None
        saver = AsyncStreamSaver(client, prefix=f"{prefix}-{protocol}")
        await saver.setup()
        await _steps(saver, "t")
        listed = [item async for item in saver.alist(config("t"))]
        assert [item.metadata["step"] for item in listed] == [2, 1, 0]
    finally:
        await client.aclose()


async def test_clients_with_a_command_path_of_their_own_get_no_lane(redis_url: str) -> None:
    single = redis.asyncio.Redis.from_url(redis_url, single_connection_client=True)
    subclass = _Traced.from_url(redis_url)
    blocking = redis.asyncio.Redis(connection_pool=redis.asyncio.BlockingConnectionPool.from_url(redis_url))
    try:
        assert [alane.AsyncLane.of(c) for c in (single, subclass, blocking)] == [None, None, None]
    finally:
        for c in (single, subclass, blocking):
            await c.aclose()


async def test_a_server_loading_its_data_delays_an_async_call_instead_of_failing_it(prefix: str) -> None:
    """``LOADING`` from a restarting server is waited out (the driver's rare path, off the lane's
    one coroutine), for a saver with a lane and for one whose client keeps ``execute_command``."""
    debug = ["--enable-debug-command", "yes", "--key-load-delay", "200",
             "--loading-process-events-interval-bytes", "1024"]
    with EmbeddedRedis(extra_args=debug) as loading, redis.Redis.from_url(loading.url) as admin:
        plain = redis.asyncio.Redis.from_url(loading.url, retry=Retry(NoBackoff(), 0))
        traced = _Traced.from_url(loading.url, retry=Retry(NoBackoff(), 0))
        try:
            savers = [AsyncStreamSaver(client, prefix=prefix) for client in (plain, traced)]
            assert [saver._adriver.lane is not None for saver in savers] == [True, False]
            for saver in savers:
                await saver.setup()
            admin.execute_command("DEBUG", "POPULATE", 5000, "filler")
            for n, saver in enumerate(savers):
                reload = threading.Thread(target=admin.execute_command, args=("DEBUG", "RELOAD"))
                reload.start()
                with redis.Redis.from_url(loading.url) as probe:
                    for _ in range(100_000):  # until the server says it is loading
                        try:
                            probe.ping()
                        except redis.BusyLoadingError:
                            break
                    else:
                        pytest.fail("the server never reported LOADING")
                checkpoint, versions = new_checkpoint({"step": n})
                await saver.aput(config(f"t{n}"), checkpoint, {}, versions)
                reload.join()
                latest = await saver.aget_tuple(config(f"t{n}"))
                assert latest is not None and latest.checkpoint["id"] == checkpoint["id"]
        finally:
            await plain.aclose()
            await traced.aclose()


class _Traced(redis.asyncio.Redis):
    """A client subclass: no lane (its command path may hold more than redis-py's)."""


async def test_a_full_pool_of_calls_succeeds_after_execute_command_is_wrapped(
    redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver lets as many calls run as the pool holds connections; once a tracer wraps
    ``execute_command`` they go through the pool, so the lane must give back what it kept."""
    client = redis.asyncio.Redis.from_url(redis_url, max_connections=16)
    try:
        saver = AsyncStreamSaver(client, prefix=prefix)
        await _busy(saver, "kept", 4)
        assert _lane_of(saver)._idle  # the lane holds connections out of the pool now
        plain = redis.asyncio.Redis.execute_command

        @functools.wraps(plain)
        async def traced(self: redis.asyncio.Redis, *args: Any, **options: Any) -> Any:
            return await plain(self, *args, **options)

        monkeypatch.setattr(redis.asyncio.Redis, "execute_command", traced)
        found = await asyncio.gather(*(saver.aget_tuple(config(f"kept-{i % 4}")) for i in range(16)))
        assert all(item is not None for item in found)
    finally:
        await client.aclose()
