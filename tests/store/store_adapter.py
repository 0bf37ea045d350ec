"""The store suite's helpers: `StoreAdapter` gives the sync and the async store one async face;
`TripCounter` counts the round trips a client makes (imported by tests, so not in conftest.py,
which pytest imports under a name other test directories share)."""

from __future__ import annotations

from typing import Any

import redis
import redis.asyncio

from streamsaver import AsyncStreamStore, StreamStore


class TripCounter:
    """Round trips a client made since `reset`: a send after a reply starts one."""

    def __init__(self) -> None:
        self.trips = 0
        self._answered = True

    def sent(self) -> None:
        if self._answered:
            self.trips += 1
            self._answered = False

    def answered(self) -> None:
        self._answered = True

    def reset(self) -> None:
        self.trips, self._answered = 0, True


def counting_connections(counter: TripCounter) -> tuple[type[Any], type[Any]]:
    """A sync and an asyncio connection class that report to `counter`."""

    class Sync(redis.Connection):
        def send_packed_command(self, command: Any, check_health: bool = True) -> None:
            counter.sent()
            super().send_packed_command(command, check_health)

        def read_response(self, *args: Any, **kwargs: Any) -> Any:
            reply = super().read_response(*args, **kwargs)
            counter.answered()
            return reply

    class Async(redis.asyncio.Connection):
        async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
            counter.sent()
            await super().send_packed_command(command, check_health)

        async def read_response(self, *args: Any, **kwargs: Any) -> Any:
            reply = await super().read_response(*args, **kwargs)
            counter.answered()
            return reply

    return Sync, Async


class StoreAdapter:
    """A sync or an async store behind async methods named as the async store's."""

    def __init__(self, store: StreamStore | AsyncStreamStore, counter: TripCounter) -> None:
        self.store, self.counter = store, counter
        self.is_async = isinstance(store, AsyncStreamStore)

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self.is_async:
            return await getattr(self.store, "a" + name)(*args, **kwargs)
        return getattr(self.store, name)(*args, **kwargs)

    async def setup(self) -> None:
        if isinstance(self.store, AsyncStreamStore):
            await self.store.setup()
        else:
            self.store.setup()
