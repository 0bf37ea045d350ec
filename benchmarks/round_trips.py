"""Round trips and commands per op, counted on the wire, for the Redis-based savers.

A round trip is one send on a connection followed by its replies: redis-py sends every command,
and every pipeline, through exactly one ``send_packed_command`` call, sync and asyncio alike.
Commands are counted where redis-py sends them (``send_command`` for one, ``pack_commands`` for
a pipeline), so a pipeline of three is one round trip and three commands; the commands a Lua
script runs on the server are not counted (they cost no trip). The counting methods are patched
onto redis-py's connection classes only while one saver call runs, outside any timed pass.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

import redis.asyncio.connection
import redis.connection

from benchmarks.measure import OpFn, Subject, Turn, iterate

__all__ = ["Count", "counting", "trips_per_op"]

_CLASSES = (redis.connection.AbstractConnection, redis.asyncio.connection.AbstractConnection)


@dataclass
class Count:
    """Round trips and commands sent while counting."""

    trips: int = 0
    commands: int = 0


def _patched(cls: type, count: Count) -> dict[str, Callable[..., Any]]:
    send, one, many = cls.send_packed_command, cls.send_command, cls.pack_commands  # type: ignore[attr-defined]

    def pack_commands(self: Any, commands: Any) -> Any:
        commands = list(commands)
        count.commands += len(commands)
        return many(self, commands)

    if cls is redis.asyncio.connection.AbstractConnection:

        async def send_packed_async(self: Any, command: Any, check_health: bool = True) -> None:
            count.trips += 1
            await send(self, command, check_health)

        async def send_async(self: Any, *args: Any, **kwargs: Any) -> None:
            count.commands += 1
            await one(self, *args, **kwargs)

        return {
            "send_packed_command": send_packed_async,
            "send_command": send_async,
            "pack_commands": pack_commands,
        }

    def send_packed(self: Any, command: Any, check_health: bool = True) -> None:
        count.trips += 1
        send(self, command, check_health)

    def send_sync(self: Any, *args: Any, **kwargs: Any) -> None:
        count.commands += 1
        one(self, *args, **kwargs)

    return {
        "send_packed_command": send_packed,
        "send_command": send_sync,
        "pack_commands": pack_commands,
    }


@contextmanager
def counting(count: Count) -> Iterator[Count]:
    """Count, into `count`, what every redis-py connection sends inside the block."""
    saved = [(cls, {name: cls.__dict__[name] for name in _patched(cls, count)}) for cls in _CLASSES]
    try:
        for cls in _CLASSES:
            for name, method in _patched(cls, count).items():
                setattr(cls, name, method)
        yield count
    finally:
        for cls, methods in saved:
            for name, method in methods.items():
                setattr(cls, name, method)


def trips_per_op(subject: Subject, iterations: int) -> dict[str, tuple[float, float]]:
    """Median round trips and commands of each op's saver calls over `iterations` iterations."""
    counts: dict[str, list[Count]] = {}

    def wrap(name: str, op: OpFn) -> OpFn:
        def run(subj: Subject, turn: Turn) -> tuple[float, bool]:
            count = Count()
            subj.around = lambda: counting(count)
            try:
                return op(subj, turn)
            finally:
                subj.around = nullcontext
                counts.setdefault(name, []).append(count)

        return run

    for _ in range(iterations):
        iterate(subject, wrap)
    return {
        name: (
            statistics.median(c.trips for c in found),
            statistics.median(c.commands for c in found),
        )
        for name, found in counts.items()
    }
