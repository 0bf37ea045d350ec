"""`CoreRunner`: the public run methods of the projector worker and the subscribers, over the
sync and the asyncio driver (`streamsaver.drivers.sync`, `streamsaver.drivers.aio`)."""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar

from streamsaver.drivers.aio import AsyncDriver
from streamsaver.drivers.sync import SyncDriver, unknown_step
from streamsaver.log.program import Program

__all__ = ["CoreRunner", "RunnableCore"]

S = TypeVar("S")
S_co = TypeVar("S_co", covariant=True)


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
        return unknown_step(step)

    async def _aother(self, step: Any) -> Any:
        return unknown_step(step)

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
