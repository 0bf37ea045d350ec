"""Round trips and commands per op, counted on the wire, for the Redis-based savers.

A round trip is one send on a connection followed by its replies: redis-py sends every command,
and every pipeline, through exactly one ``send_packed_command`` call, sync and asyncio alike.
Commands are counted where redis-py packs them (``pack_command`` for one, ``pack_commands`` for
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
    _packing: int = 0


def _patched(cls: type, count: Count) -> dict[str, Callable[..., Any]]:
    send, pack, pack_many = cls.send_packed_command, cls.pack_command, cls.pack_commands  # type: ignore[attr-defined]
    is_async = cls is redis.asyncio.connection.AbstractConnection

    def pack_command(self: Any, *args: Any) -> Any:
        count.commands += count._packing == 0
        return pack(self, *args)

    def pack_commands(self: Any, commands: Any) -> Any:
        commands = list(commands)
        count.commands += len(commands)
        count._packing += 1
        try:
            return pack_many(self, commands)
        finally:
            count._packing -= 1

    if is_async:

        async def send_async(self: Any, command: Any, check_health: bool = True) -> None:
            count.trips += 1
            await send(self, command, check_health)

        sender: Callable[..., Any] = send_async
    else:

        def send_sync(self: Any, command: Any, check_health: bool = True) -> None:
            count.trips += 1
            send(self, command, check_health)

        sender = send_sync
    return {
        "send_packed_command": sender,
        "pack_command": pack_command,
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
