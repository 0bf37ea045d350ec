"""Partition ownership for feed consumers, without I/O: leases, rosters, shares, programs.

The projector worker (`streamsaver.feeds.worker_core`) and the subscribers
(`streamsaver.feeds.subscriber_core`) both read partition feeds through a consumer group with one owner
per partition, so that a partition is handled in feed order (per-thread order); their ownership
loop is written once, in `streamsaver.feeds.consumer`. This module holds its building blocks:

* ``lease.lua`` renews or takes a partition's lease and reads the group in one script, so only
  the owner ever takes entries; taking a free lease first claims every pending entry (a dead
  owner's) with XAUTOCLAIM.
* ``roster.lua`` is one live consumer's heartbeat (server time); `share` splits partitions among
  the live names: partition ``p`` goes to the ``p mod n``-th of ``n`` names in order.
* Their loops are programs (`streamsaver.log.program`: they yield a pipeline, a list of
  commands, or a `Wait`, and receive the replies); `call` sends a pipeline and reloads scripts
  on NOSCRIPT. The sync and async drivers (`streamsaver.drivers.programs`) only move bytes.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from redis import exceptions as rx
from redis.exceptions import NoScriptError

from streamsaver.errors import InvalidInputError
from streamsaver.log.program import Program, Wait
from streamsaver.log.routing import Command, Step
from streamsaver.scripts import Script

__all__ = ["LEASE", "ROSTER", "Program", "Wait", "call", "check_count", "check_partitions", "default_name",
           "is_transient", "lease_call", "roster_call", "share"]

T = TypeVar("T")
LEASE = Script.alone("lease")
ROSTER = Script.alone("roster")
_TRANSIENT = (rx.OutOfMemoryError, rx.BusyLoadingError, rx.ReadOnlyError, rx.TryAgainError,
              rx.ClusterDownError, rx.MasterDownError, rx.MovedError, rx.AskError)


def default_name() -> str:
    """A consumer name unique to this process: host, pid and a random suffix."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def is_transient(error: BaseException) -> bool:
    """Whether a failed reply may succeed when retried (the server was busy, not the data bad)."""
    return isinstance(error, _TRANSIENT) or str(error).startswith(("BUSY", "NOREPLICAS"))


def share(partitions: Iterable[int], live: Iterable[str], name: str) -> list[int]:
    """The partitions `name` should own: partition ``p`` goes to the ``p mod n``-th of the ``n``
    live names (`name` included) in name order."""
    names = sorted(set(live) | {name})
    return [p for p in partitions if names[p % len(names)] == name]


def lease_call(lease: str, feed: str, owner: str, lease_ms: int, group: str, count: int,
               attempts: str | None = None) -> Command:
    """A ``lease.lua`` call: renew or take `lease` and read up to `count` entries of `group`
    (count 0: release). With an `attempts` hash, the reply also holds the failed attempts of
    the pending entries read."""
    keys = [lease, feed] + ([attempts] if attempts else [])
    return LEASE.evalsha_args(keys, [owner, lease_ms, group, count])


def roster_call(roster: str, name: str, ttl_ms: int) -> Command:
    """A ``roster.lua`` heartbeat of `name` (ttl 0: leave); replies with the live names."""
    return ROSTER.evalsha_args([roster], [name, ttl_ms])


def call(commands: Sequence[Step], load: Sequence[Step]) -> Program[list[Any]]:
    """Send `commands` in one pipeline; on NOSCRIPT send `load` (``SCRIPT LOAD`` commands) and
    resend the commands that failed. Replies hold errors as exception objects."""
    replies = list((yield commands))
    missing = [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
    if missing:
        yield list(load)
        for i, reply in zip(missing, (yield [commands[i] for i in missing]), strict=True):
            replies[i] = reply
    return replies


def check_count(value: Any, what: str, minimum: int) -> int:
    """`value` when it is an int (not a bool) of at least `minimum`.

    Raises:
        InvalidInputError: anything else (a str, a float, a bool, a smaller int).
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidInputError(f"{what} must be an int >= {minimum}, not {value!r}")
    return value


def check_partitions(partitions: Any) -> list[int] | None:
    """A consumer's `partitions` option: None (all) or a non-empty collection of partition
    numbers (ints >= 0; whether each exists is known once the deployment is read).

    Raises:
        InvalidInputError: a str, a single int, an empty collection, or an item that is not an
            int >= 0.
    """
    if partitions is None:
        return None
    if isinstance(partitions, (str, bytes)) or not isinstance(partitions, Iterable):
        raise InvalidInputError(f"partitions must be a list of partition numbers, not {partitions!r}")
    chosen = list(partitions)
    if not chosen:
        raise InvalidInputError("partitions must name at least one partition (None: all)")
    return [check_count(p, "a partition number", 0) for p in chosen]
