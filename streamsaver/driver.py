"""The sync and async shells that drive programs (`streamsaver.ownership.Program`).

A program yields steps: a list of commands (sent in one non-transactional pipeline; the replies
come back with errors as exception objects), a `Wait`, or a step of the subclass's own (handled
by `_other` / `_aother`). A `RedisError` from sending is thrown into the program. `stop` cuts a
`Wait` short, from any thread. The projector worker and the subscribers are such shells.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, TypeVar, cast

from redis.exceptions import RedisError

from streamsaver.ownership import Program, Wait
from streamsaver.saver.core import Command, check_client, enqueue

__all__ = ["ProgramDriver"]

T = TypeVar("T")


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

    def _pipeline(self, commands: list[Command]) -> list[Any]:
        pipe = self.redis.pipeline(transaction=False)
        enqueue(pipe, commands)
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

    async def _apipeline(self, commands: list[Command]) -> list[Any]:
        pipe = self.redis.pipeline(transaction=False)
        enqueue(pipe, commands)
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
