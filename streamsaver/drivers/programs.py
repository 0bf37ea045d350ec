"""The two drivers that run every program (`streamsaver.log.program`): `SyncDriver` with a
``redis.Redis`` (or ``RedisCluster``), `AsyncDriver` with their ``redis.asyncio`` twins.

A driver only moves bytes and keeps what belongs to the connection: the script reload on
``NOSCRIPT``, the `Lane` of a plain sync client (one write per round trip), the placement of
steps on a cluster (`streamsaver.drivers.cluster`), pauses and the stop flag. `CoreRunner` is
the shell of the projector worker and the subscribers on top of them.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Sequence
from typing import Any, Generic, Protocol, TypeVar, cast

from redis.exceptions import NoScriptError, RedisError, ResponseError

from streamsaver.drivers.cluster import enqueue, execute, index_moved, initialize, node_name
from streamsaver.drivers.lane import Lane
from streamsaver.drivers.wire import check_client, failed_reply
from streamsaver.log.program import Alone, Call, Emit, Owner, Program, Refused, Wait
from streamsaver.log.routing import Routed, Step
from streamsaver.scripts import ALL

__all__ = ["AsyncDriver", "CoreRunner", "SyncDriver", "in_thread", "pool_size", "round_trip", "send_raw"]

T = TypeVar("T")
S = TypeVar("S")
S_co = TypeVar("S_co", covariant=True)
_FAILED = (Refused, RedisError)


def _unknown(step: Any) -> Any:
    raise TypeError(f"unknown program step {step!r}")


async def _aunknown(step: Any) -> Any:
    raise TypeError(f"unknown program step {step!r}")


def _never() -> bool:
    return False


def _refused(error: ResponseError) -> Refused:
    return Refused(error, index_moved(error))


def pool_size(client: Any) -> int:
    """How many calls an asyncio saver keeps in flight: its pool's size. A plain redis.asyncio
    pool raises MaxConnectionsError past it instead of waiting; many graph tasks saving at once
    must queue in the driver instead. (A cluster client keeps a pool per node and has no
    ``connection_pool``: 100.)"""
    pool = getattr(client, "connection_pool", None)
    return max(1, int(getattr(pool, "max_connections", 100)))


async def in_thread(items: Callable[[], Iterator[T]]) -> AsyncIterator[T]:
    """The items of the sync iterator `items()` makes, gathered in a worker thread (a sync
    saver's `alist`)."""
    for item in await asyncio.to_thread(lambda: list(items())):
        yield item


def send_raw(client: Any, commands: Sequence[Step]) -> list[Any]:
    """Send `commands` in one pipelined round trip (on a cluster, one pipeline per node they go
    to, written to every node before any reply is read); errors come back as reply objects."""
    pipe = client.pipeline(transaction=False)
    enqueue(pipe, client, commands)
    return list(pipe.execute(raise_on_error=False))


class SyncDriver:
    """Runs programs with a sync client; `lane`, when given, carries every `Call` while open.

    Raises:
        ConfigurationError: a client that decodes responses.
    """

    def __init__(
        self, client: Any, *, lane: Lane | None = None, other: Callable[[Any], Any] = _unknown
    ) -> None:
        check_client(client)
        self.redis, self.lane, self._other = client, lane, other
        self._wake = threading.Event()
        self._alone = threading.Lock()

    def stop(self) -> None:
        """Cut the current and later `Wait` steps short until `resume` (thread-safe)."""
        self._wake.set()

    def resume(self) -> None:
        """Let `Wait` steps pause again."""
        self._wake.clear()

    def run(self, program: Program[T]) -> T:
        """Run `program` to its end; its result. `Emit` is not a step of `run` (see `stream`)."""
        try:
            step = next(program)
            while True:
                try:
                    result = self._perform(step)
                except _FAILED as error:
                    step = program.throw(error)
                    continue
                step = program.send(result)
        except StopIteration as done:
            return cast(T, done.value)
        except Refused as refused:
            raise refused.error from None

    def stream(self, program: Program[Any]) -> Iterator[Any]:
        """Run `program`, yielding the items of each `Emit` step as it comes."""
        try:
            step = next(program)
            while True:
                if type(step) is Emit:
                    yield from step.items
                    step = program.send(None)
                    continue
                try:
                    result = self._perform(step)
                except _FAILED as error:
                    step = program.throw(error)
                    continue
                step = program.send(result)
        except StopIteration:
            return
        except Refused as refused:
            raise refused.error from None

    def _perform(self, step: Any) -> Any:
        if type(step) is Call:
            return self._call(step)
        if isinstance(step, list):
            return send_raw(self.redis, step)
        if type(step) is Owner:
            return node_name(self.redis, step.key)
        if type(step) is Wait:
            return self._wake.wait(step.seconds)
        if type(step) is Alone:
            with self._alone:
                return self.run(step.program)
        return self._other(step)

    def _call(self, call: Call) -> list[Any]:
        try:
            try:
                return self._once(call.steps)
            except NoScriptError:  # a flushed or restarted server: the script ran nothing
                send_raw(self.redis, call.reload())
                return self._once(call.steps)
        except ResponseError as error:
            raise _refused(error) from None

    def _once(self, steps: Sequence[Step]) -> list[Any]:
        lane = self.lane
        if lane is not None and lane.open():
            # A plain client's steps need no routing: a `Routed` step is its command.
            replies = lane.send([step.command if isinstance(step, Routed) else step for step in steps])
        elif len(steps) == 1:
            return [execute(self.redis, steps[0])]
        else:
            replies = send_raw(self.redis, steps)
        if (error := failed_reply(replies)) is not None:
            raise error
        return replies


def round_trip(client: Any, commands: Sequence[Step], reload: Sequence[Step] = (), lane: Lane | None = None) -> list[Any]:
    """`commands` as one `Call` on `client` (tools that send prepared commands): the replies.

    Raises:
        RedisError: the first error among the replies (on NOSCRIPT, after sending `reload`, by
            default every script, and the commands again).
    """
    loads = list(reload) or [["SCRIPT", "LOAD", script.source] for script in ALL]

    def one_call() -> Program[list[Any]]:
        return list((yield Call(commands, lambda: loads)))

    return SyncDriver(client, lane=lane).run(one_call())


class AsyncDriver:
    """Runs programs with an asyncio client. At most `slots` `Call` steps are in flight at once
    (a plain redis.asyncio pool raises past its size instead of waiting); the rest wait.

    Raises:
        ConfigurationError: a client that decodes responses.
    """

    def __init__(
        self,
        client: Any,
        *,
        slots: int | None = None,
        other: Callable[[Any], Coroutine[Any, Any, Any]] = _aunknown,
        stopping: Callable[[], bool] = _never,
    ) -> None:
        check_client(client)
        self.redis, self._other, self._stopping = client, other, stopping
        self._slots = asyncio.Semaphore(slots) if slots else None
        self._alone = asyncio.Lock()
        self._wakes: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        try:
            self.loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self.loop = None

    def stop(self) -> None:
        """Cut the `Wait` steps under way short (thread-safe; later ones ask `stopping`)."""
        for loop, event in list(self._wakes):
            loop.call_soon_threadsafe(event.set)

    async def run(self, program: Program[T]) -> T:
        """Run `program` to its end; its result. `Emit` is not a step of `run` (see `stream`)."""
        self.loop = asyncio.get_running_loop()
        await initialize(self.redis)
        try:
            step = next(program)
            while True:
                try:
                    result = await self._perform(step)
                except _FAILED as error:
                    step = program.throw(error)
                    continue
                step = program.send(result)
        except StopIteration as done:
            return cast(T, done.value)
        except Refused as refused:
            raise refused.error from None

    async def stream(self, program: Program[Any]) -> AsyncIterator[Any]:
        """Run `program`, yielding the items of each `Emit` step as it comes."""
        self.loop = asyncio.get_running_loop()
        await initialize(self.redis)
        try:
            step = next(program)
            while True:
                if type(step) is Emit:
                    for item in step.items:
                        yield item
                    step = program.send(None)
                    continue
                try:
                    result = await self._perform(step)
                except _FAILED as error:
                    step = program.throw(error)
                    continue
                step = program.send(result)
        except StopIteration:
            return
        except Refused as refused:
            raise refused.error from None

    async def _perform(self, step: Any) -> Any:
        if type(step) is Call:
            if self._slots is None:
                return await self._call(step)
            async with self._slots:
                return await self._call(step)
        if isinstance(step, list):
            return await self._send_raw(step)
        if type(step) is Owner:
            return node_name(self.redis, step.key)
        if type(step) is Wait:
            return await self._wait(step.seconds)
        if type(step) is Alone:
            async with self._alone:
                return await self.run(step.program)
        return await self._other(step)

    async def _wait(self, seconds: float) -> None:
        wake = (asyncio.get_running_loop(), asyncio.Event())
        self._wakes.add(wake)
        try:
            if not self._stopping():
                await asyncio.wait_for(wake[1].wait(), seconds)
        except asyncio.TimeoutError:
            pass
        finally:
            self._wakes.discard(wake)

    async def _send_raw(self, commands: Sequence[Step]) -> list[Any]:
        pipe = self.redis.pipeline(transaction=False)
        enqueue(pipe, self.redis, commands)
        return list(await pipe.execute(raise_on_error=False))

    async def _call(self, call: Call) -> list[Any]:
        try:
            try:
                return await self._once(call.steps)
            except NoScriptError:  # a flushed or restarted server: the script ran nothing
                await self._send_raw(call.reload())
                return await self._once(call.steps)
        except ResponseError as error:
            raise _refused(error) from None

    async def _once(self, steps: Sequence[Step]) -> list[Any]:
        if len(steps) == 1:
            return [await execute(self.redis, steps[0])]
        replies = await self._send_raw(steps)
        if (error := failed_reply(replies)) is not None:
            raise error
        return replies

    def blocking_stream(self, program: Program[Any]) -> Iterator[Any]:
        """The items `program` emits, run on the driver's loop from another thread (as `blocking`)."""

        async def collect() -> list[Any]:
            return [item async for item in self.stream(program)]

        yield from self.blocking(collect())

    def blocking(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """`coroutine`'s result, run on the driver's loop from another thread (sync methods).

        Raises:
            asyncio.InvalidStateError: called on the loop's own thread, or before the driver
                saw a running loop (it would deadlock).
        """
        try:
            on_loop = asyncio.get_running_loop() is self.loop
        except RuntimeError:
            on_loop = False
        if self.loop is None or on_loop:
            coroutine.close()
            raise asyncio.InvalidStateError(
                "AsyncStreamSaver's sync methods must be called from a thread other than the event "
                "loop's, after the saver was created or set up inside a running loop; inside the "
                "loop, await the a-methods (aget_tuple, aput, ...) instead"
            )
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()


class RunnableCore(Protocol[S_co]):
    """What a partition-owning core offers: the programs `CoreRunner` drives."""

    def prepare(self) -> Program[None]: ...
    def once(self) -> Program[S_co]: ...
    def burst(self) -> Program[S_co]: ...
    def loop(self) -> Program[S_co]: ...
    def release(self) -> Program[None]: ...


class CoreRunner(Generic[S]):
    """The public run methods of a shell over a partition-owning core (`self.core`), sync and
    async; the projector worker and the subscribers share them. A shell's own steps go to
    `_other` / `_aother`; `_request_stop` and `_stopping` set and read its core's flag.

    Raises:
        ConfigurationError: a client that decodes responses.
    """

    core: RunnableCore[S]

    def __init__(self, client: Any) -> None:
        self.redis = client
        self._driver = SyncDriver(client, other=self._other)
        self._adriver = AsyncDriver(client, other=self._aother, stopping=self._stopping)

    def _request_stop(self) -> None:
        """Tell the running program to finish (subclasses set their core's flag)."""

    def _stopping(self) -> bool:
        """Whether a stop was requested (subclasses say)."""
        return False

    def _other(self, step: Any) -> Any:
        return _unknown(step)

    async def _aother(self, step: Any) -> Any:
        return await _aunknown(step)

    def stop(self) -> None:
        """Ask a running loop to finish its current cycle, release and return (thread-safe)."""
        self._request_stop()
        self._driver.stop()
        self._adriver.stop()

    def prepare(self) -> None:
        """Check the deployment and create what is missing (indexes, consumer groups)."""
        self._driver.run(self.core.prepare())

    def run_once(self) -> S:
        """Heartbeat, take this shell's share of the partitions, handle one batch on each."""
        return self._driver.run(self.core.once())

    def run_burst(self) -> S:
        """Drain every partition whose lease is free (pending and new entries), then release."""
        return self._driver.run(self.core.burst())

    def run(self) -> S:
        """Keep going until `stop`; returns what was done."""
        try:
            return self._driver.run(self.core.loop())
        finally:
            self._driver.resume()

    def release(self) -> None:
        """Send pending acknowledgements, give up every lease and leave the roster."""
        self._driver.run(self.core.release())

    async def async_prepare(self) -> None:
        """`prepare` with a ``redis.asyncio`` client."""
        await self._adriver.run(self.core.prepare())

    async def async_run_once(self) -> S:
        """`run_once` with a ``redis.asyncio`` client."""
        return await self._adriver.run(self.core.once())

    async def async_run_burst(self) -> S:
        """`run_burst` with a ``redis.asyncio`` client."""
        return await self._adriver.run(self.core.burst())

    async def async_run(self) -> S:
        """`run` with a ``redis.asyncio`` client."""
        return await self._adriver.run(self.core.loop())

    async def async_release(self) -> None:
        """`release` with a ``redis.asyncio`` client."""
        await self._adriver.run(self.core.release())
