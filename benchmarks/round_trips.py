"""Round trips and commands per op, counted on the wire, for the Redis-based savers.

A round trip is one send on a connection followed by its replies: redis-py sends every command,
and every pipeline, through exactly one ``send_packed_command`` call, sync and asyncio alike, and
so do streamsaver's lanes (`streamsaver.drivers.lane`), which pack with hiredis themselves.
Commands are counted in what that call sends (the Redis protocol parsed back with hiredis), so a
pipeline of three is one round trip and three commands whichever path packed it; the commands a
Lua script runs on the server are not counted (they cost no trip). The counting methods are patched
onto redis-py's connection classes only while one saver call runs, outside any timed pass.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

import hiredis
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


def _commands_in(packed: Any) -> int:
    """How many commands the Redis protocol in `packed` (bytes, or a list of chunks) holds."""
    chunks = packed if isinstance(packed, (list, tuple)) else [packed]
    reader = hiredis.Reader()
    reader.feed(b"".join(chunk.encode() if isinstance(chunk, str) else bytes(chunk) for chunk in chunks))
    commands = 0
    while reader.gets() is not False:
        commands += 1
    return commands


def _patched(cls: type, count: Count) -> dict[str, Callable[..., Any]]:
    send = cls.send_packed_command  # type: ignore[attr-defined]

    if cls is redis.asyncio.connection.AbstractConnection:

        async def send_packed_async(self: Any, command: Any, check_health: bool = True) -> None:
            count.trips += 1
            count.commands += _commands_in(command)
            await send(self, command, check_health)

        return {"send_packed_command": send_packed_async}

    def send_packed(self: Any, command: Any, check_health: bool = True) -> None:
        count.trips += 1
        count.commands += _commands_in(command)
        send(self, command, check_health)

    return {"send_packed_command": send_packed}


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
