"""Durability levels of an append, without I/O: what to send after it, and how to read the reply.

``memory``: the append is acknowledged when Redis applied it (Redis' own persistence settings
decide what a crash loses). ``aof``: the append is followed, in the same pipelined round trip,
by ``WAITAOF 1 0 <timeout>``, so the call returns only once the local AOF was fsynced with the
append in it. ``replica``: followed by ``WAIT 1 <timeout>``, so it returns only once a replica
acknowledged it. A wait that times out raises `DurabilityError`; the append itself was made, and
calling again is safe (a repeat of a logged event writes nothing).
"""

from __future__ import annotations

from typing import Any, Literal

from streamsaver.errors import DurabilityError, InvalidInputError

__all__ = ["DURABILITIES", "Durability", "check_waited", "durability_of", "wait_command"]

Durability = Literal["memory", "aof", "replica"]
DURABILITIES: tuple[Durability, ...] = ("memory", "aof", "replica")


def durability_of(value: str, timeout_ms: int) -> Durability:
    """Validate a durability level and its timeout.

    Raises:
        InvalidInputError: an unknown level, or a timeout that is not a positive integer.
    """
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms <= 0:
        raise InvalidInputError(f"durability_timeout_ms must be a positive integer, not {timeout_ms!r}")
    for level in DURABILITIES:
        if value == level:
            return level
    raise InvalidInputError(f"durability must be one of {', '.join(DURABILITIES)}, not {value!r}")


def wait_command(durability: Durability, timeout_ms: int) -> list[str | bytes | int] | None:
    """The command that waits for `durability` after an append, or None for ``memory``."""
    if durability == "aof":
        return ["WAITAOF", 1, 0, timeout_ms]
    if durability == "replica":
        return ["WAIT", 1, timeout_ms]
    return None


def check_waited(durability: Durability, timeout_ms: int, reply: Any) -> None:
    """Check the reply of `wait_command`.

    Raises:
        DurabilityError: the AOF was not fsynced, or no replica acknowledged, within the timeout.
    """
    if durability == "aof" and int(reply[0]) < 1:
        raise DurabilityError(f"the append was made but not fsynced to the AOF within {timeout_ms} ms")
    if durability == "replica" and int(reply) < 1:
        raise DurabilityError(f"the append was made but no replica acknowledged it within {timeout_ms} ms")
