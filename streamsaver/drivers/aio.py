"""`AsyncDriver`: runs programs (`streamsaver.log.program`) with a ``redis.asyncio.Redis`` or
its ``RedisCluster``; the asyncio twin of `streamsaver.drivers.sync.SyncDriver`, which says what a
driver keeps. It also bounds the calls in flight (`pool_size`) and runs a coroutine on its loop
for sync callers (`blocking`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Sequence
from typing import Any, TypeVar, cast

from redis.exceptions import BusyLoadingError, NoScriptError, RedisError, ResponseError

from streamsaver.drivers.alane import AsyncLane
from streamsaver.drivers.cluster import (
    enqueue,
    enqueue_everywhere,
    execute,
    initialize,
    is_cluster,
    loading_refused,
    node_name,
    refused,
)
from streamsaver.drivers.wire import (
    LOADING_PAUSE_S,
    LOADING_RETRIES,
    SERVER_ERRORS,
    check_client,
    failed_reply,
    final_error,
    named_server_error,
    not_run,
    still_loading,
)
from streamsaver.log.program import Alone, Call, Emit, Owner, Program, Refused, Wait
from streamsaver.log.routing import Routed, Step

__all__ = ["AsyncDriver", "pool_size"]

T = TypeVar("T")
log = logging.getLogger("streamsaver.drivers")
_FAILED = (Refused, RedisError)


async def _unknown(step: Any) -> Any:
    raise TypeError(f"unknown program step {step!r}")


def _never() -> bool:
    return False


def pool_size(client: Any) -> int:
    """How many calls an asyncio saver keeps in flight: its pool's size. A plain redis.asyncio
    pool raises MaxConnectionsError past it instead of waiting; many graph tasks saving at once
    must queue in the driver instead. (A cluster client keeps a pool per node and has no
    ``connection_pool``: 100.)"""
    pool = getattr(client, "connection_pool", None)
    return max(1, int(getattr(pool, "max_connections", 100)))


class AsyncDriver:
    """Runs programs with an asyncio client; `lane`, when given, carries every `Call` while open.
    At most `slots` `Call` steps are in flight at once (a plain redis.asyncio pool raises past
    its size instead of waiting); the rest wait.
    ``LOADING`` (of a `Call` or a pipeline step) and `name_errors` as in
    `streamsaver.drivers.sync.SyncDriver`.

    Raises:
        ConfigurationError: a client that decodes responses.
    """

    def __init__(
        self,
        client: Any,
        *,
        slots: int | None = None,
        other: Callable[[Any], Coroutine[Any, Any, Any]] = _unknown,
        stopping: Callable[[], bool] = _never,
        name_errors: bool = False,
        lane: AsyncLane | None = None,
    ) -> None:
        check_client(client)
        self.redis, self._other, self._stopping, self.lane = client, other, stopping, lane
        self._name_errors = name_errors
        self._slots = asyncio.Semaphore(slots) if slots else None
        self._cluster = is_cluster(client)
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
        if self._cluster:  # it reads the slot map lazily, and placing steps needs it first
            await initialize(self.redis)
        try:
            step = next(program)
            while True:
                try:
                    # a Call straight away: the hot paths are one or two of them
                    result = await (self._call(step) if type(step) is Call else self._perform(step))
                except _FAILED as error:
                    step = program.throw(error)
                    continue
                step = program.send(result)
        except StopIteration as done:
            return cast(T, done.value)
        except Refused as refused:
            raise refused.error from None
        except SERVER_ERRORS as error:
            if not self._name_errors:
                raise
            raise named_server_error(error) from error

    async def stream(self, program: Program[Any]) -> AsyncIterator[Any]:
        """Run `program`, yielding the items of each `Emit` step as it comes."""
        self.loop = asyncio.get_running_loop()
        if self._cluster:  # it reads the slot map lazily, and placing steps needs it first
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
        except SERVER_ERRORS as error:
            if not self._name_errors:
                raise
            raise named_server_error(error) from error

    async def _perform(self, step: Any) -> Any:
        if type(step) is Call:
            return await self._call(step)
        if isinstance(step, list):
            try:
                return await self._send_raw(step)
            except BusyLoadingError:  # the first refusal ended the pipeline: what ran before it may run again
                return await self._after_loading(lambda: self._send_raw(step))
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
        # One coroutine on the hot path: the first attempt is sent here, and only a rare end
        # (NOSCRIPT, LOADING, a refusal) goes on in `_settled`.
        slots = self._slots
        if slots is not None:
            await slots.acquire()
        try:
            steps, lane = call.steps, self.lane
            replies: list[Any] = []
            try:
                if lane is not None and lane.open():
                    # A plain client's steps need no routing: a `Routed` step is its command.
                    replies = await lane.send(
                        [step.command if isinstance(step, Routed) else step for step in steps], call.meanwhile
                    )
                else:
                    if lane is not None:  # execute_command was wrapped since: the pool needs them
                        await lane.release_idle()
                    if len(steps) == 1:
                        return [await execute(self.redis, steps[0])]
                    replies = await self._send_raw(steps)
                if (error := failed_reply(replies)) is not None:
                    raise error
                return replies
            except (BusyLoadingError, ResponseError) as error:
                return await self._settled(call, replies or [error] * len(steps))
        finally:
            if slots is not None:
                slots.release()

    @staticmethod
    async def _after_loading(send: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """`send()` again once the server has loaded its data (its first attempt was refused
        with ``LOADING``), `LOADING_RETRIES` times at most, `LOADING_PAUSE_S` apart."""
        for _ in range(LOADING_RETRIES - 1):
            await asyncio.sleep(LOADING_PAUSE_S)
            try:
                return await send()
            except BusyLoadingError:
                continue
        await asyncio.sleep(LOADING_PAUSE_S)
        return await send()

    async def _settled(self, call: Call, replies: list[Any]) -> list[Any]:
        """`replies` (to `call`, an error among them) once the steps that did not run are sent
        again, as `streamsaver.drivers.sync.SyncDriver._settled` says (NOSCRIPT: the scripts
        loaded again; LOADING: the server done loading, `LOADING_RETRIES` times at most).

        Raises:
            BusyLoadingError: a server still loading after the last wait.
            Refused: a refusal (NOSCRIPT again included), for the program.
        """
        waits, reloaded = 0, False
        while True:
            loading_refused(self.redis, call.steps, replies)
            if isinstance(failed_reply(replies), NoScriptError) and not reloaded:
                log.info("NOSCRIPT (a server was flushed or restarted, or joined the cluster): reloading the scripts "
                         "and sending again what did not run")
                pipe = self.redis.pipeline(transaction=False)
                enqueue_everywhere(pipe, self.redis, call.reload())  # every primary the client knows now
                try:
                    await pipe.execute(raise_on_error=False)
                    reloaded = True
                except BusyLoadingError:  # the resend meets LOADING too, and waits
                    waits += 1
                again = not_run(call.steps, replies)
            elif still_loading(replies) is not None and waits < LOADING_RETRIES:
                if not waits:
                    log.info("LOADING (a server is reading its data): sending again what it refused once it has "
                             "loaded")
                waits, reloaded = waits + 1, False  # a server done loading may have lost its scripts
                await asyncio.sleep(LOADING_PAUSE_S)
                again = not_run(call.steps, replies, BusyLoadingError)
            else:
                break
            for n, reply in zip(again, await self._once([call.steps[n] for n in again]), strict=True):
                replies[n] = reply
        error = final_error(replies)
        if error is None:
            return replies
        if isinstance(error, ResponseError):
            raise refused(error) from None
        raise error

    async def _once(self, steps: Sequence[Step]) -> list[Any]:
        """The replies to `steps`, sent in one round trip; error replies in place."""
        lane = self.lane
        try:
            if lane is not None and lane.open():
                return await lane.send([step.command if isinstance(step, Routed) else step for step in steps])
            if lane is not None:
                await lane.release_idle()
            if len(steps) == 1:
                return [await execute(self.redis, steps[0])]
            return await self._send_raw(steps)
        except (ResponseError, BusyLoadingError) as error:  # refused as a whole (see SyncDriver._once)
            return [error] * len(steps)

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
