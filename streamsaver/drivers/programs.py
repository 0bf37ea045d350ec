"""The sync and async shells that drive programs (`streamsaver.feeds.ownership.Program`).

A program yields steps: a list of commands (sent in one non-transactional pipeline; the replies
come back with errors as exception objects), a `Wait`, or a step of the subclass's own (handled
by `_other` / `_aother`). A `RedisError` from sending is thrown into the program. `stop` cuts a
`Wait` short, from any thread. The projector worker and the subscribers are such shells.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Generic, Protocol, TypeVar, cast

from redis.exceptions import RedisError

from streamsaver.checkpoints.core import check_client
from streamsaver.drivers.cluster import enqueue, initialize
from streamsaver.feeds.ownership import Program, Wait
from streamsaver.log.routing import Step

__all__ = ["CoreRunner", "ProgramDriver"]

T = TypeVar("T")
S = TypeVar("S")
S_co = TypeVar("S_co", covariant=True)


class ProgramDriver:
    """Drives programs with a ``redis.Redis`` (`_drive`) or a ``redis.asyncio.Redis`` (`_adrive`).

    Raises:
        ConfigurationError: a client that decodes responses.
    """

    def __init__(self, client: Any) -> None:
        check_client(client)
        self.redis = client
        self._wake = threading.Event()
        self._async_wake: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None

    def _request_stop(self) -> None:
        """Tell the running program to finish (subclasses set their core's flag)."""

    def stop(self) -> None:
        """Ask a running loop to finish its current cycle, release and return (thread-safe)."""
        self._request_stop()
        self._wake.set()
        if self._async_wake is not None:
            loop, event = self._async_wake
            loop.call_soon_threadsafe(event.set)

    def _other(self, step: Any) -> Any:
        raise TypeError(f"unknown program step {step!r}")

    async def _aother(self, step: Any) -> Any:
        raise TypeError(f"unknown program step {step!r}")

    def _pipeline(self, commands: list[Step]) -> list[Any]:
        pipe = self.redis.pipeline(transaction=False)
        enqueue(pipe, self.redis, commands)
        return list(pipe.execute(raise_on_error=False))

    def _step(self, step: Any) -> Any:
        if isinstance(step, Wait):
            return self._wake.wait(step.seconds)
        if isinstance(step, list):
            return self._pipeline(step)
        return self._other(step)

    def _drive(self, program: Program[T]) -> T:
        try:
            step = next(program)
            while True:
                try:
                    reply = self._step(step)
                except RedisError as exc:
                    step = program.throw(exc)
                    continue
                step = program.send(reply)
        except StopIteration as done:
            return cast(T, done.value)

    async def _apipeline(self, commands: list[Step]) -> list[Any]:
        pipe = self.redis.pipeline(transaction=False)
        enqueue(pipe, self.redis, commands)
        return list(await pipe.execute(raise_on_error=False))

    async def _astep(self, step: Any, event: asyncio.Event) -> Any:
        if isinstance(step, list):
            return await self._apipeline(step)
        if not isinstance(step, Wait):
            return await self._aother(step)
        try:
            await asyncio.wait_for(event.wait(), step.seconds)
        except asyncio.TimeoutError:
            pass
        return None

    def _stopping(self) -> bool:
        """Whether a stop was requested before the program started (subclasses say)."""
        return False

    async def _adrive(self, program: Program[T]) -> T:
        await initialize(self.redis)
        event = asyncio.Event()
        self._async_wake = (asyncio.get_running_loop(), event)
        if self._stopping():
            event.set()
        try:
            step = next(program)
            while True:
                try:
                    reply = await self._astep(step, event)
                except RedisError as exc:
                    step = program.throw(exc)
                    continue
                step = program.send(reply)
        except StopIteration as done:
            return cast(T, done.value)
        finally:
            self._async_wake = None


class RunnableCore(Protocol[S_co]):
    """What a partition-owning core offers: the programs `CoreRunner` drives."""

    def prepare(self) -> Program[None]: ...
    def once(self) -> Program[S_co]: ...
    def burst(self) -> Program[S_co]: ...
    def loop(self) -> Program[S_co]: ...
    def release(self) -> Program[None]: ...


class CoreRunner(ProgramDriver, Generic[S]):
    """The public run methods of a shell over a partition-owning core (`self.core`), sync and
    async; the projector worker and the subscribers share them."""

    core: RunnableCore[S]

    def prepare(self) -> None:
        """Check the deployment and create what is missing (indexes, consumer groups)."""
        self._drive(self.core.prepare())

    def run_once(self) -> S:
        """Heartbeat, take this shell's share of the partitions, handle one batch on each."""
        return self._drive(self.core.once())

    def run_burst(self) -> S:
        """Drain every partition whose lease is free (pending and new entries), then release."""
        return self._drive(self.core.burst())

    def run(self) -> S:
        """Keep going until `stop`; returns what was done."""
        try:
            return self._drive(self.core.loop())
        finally:
            self._wake.clear()

    def release(self) -> None:
        """Send pending acknowledgements, give up every lease and leave the roster."""
        self._drive(self.core.release())

    async def async_prepare(self) -> None:
        """`prepare` with a ``redis.asyncio`` client."""
        await self._adrive(self.core.prepare())

    async def async_run_once(self) -> S:
        """`run_once` with a ``redis.asyncio`` client."""
        return await self._adrive(self.core.once())

    async def async_run_burst(self) -> S:
        """`run_burst` with a ``redis.asyncio`` client."""
        return await self._adrive(self.core.burst())

    async def async_run(self) -> S:
        """`run` with a ``redis.asyncio`` client."""
        return await self._adrive(self.core.loop())

    async def async_release(self) -> None:
        """`release` with a ``redis.asyncio`` client."""
        await self._adrive(self.core.release())
