"""Programs: how every core talks to Redis without doing I/O.

A *program* is a generator: it yields a step, a driver (`streamsaver.drivers.sync` or
`streamsaver.drivers.aio`) performs it and sends back the result, and what the program returns is what
the driver's ``run`` returns. The same program runs on either driver, so the decisions it holds
are written once. The steps:

* a ``list`` of `streamsaver.log.routing.Step`: one pipelined round trip; the replies come back
  with error replies as exception objects (errors returned as values), scripts not reloaded;
* `Call`: one round trip (with the scripts loaded again and the steps that did not run sent
  again when a server has forgotten them: a refused script ran nothing); an error reply is raised into the program as
  `Refused`, and a `Refused` the program lets out is raised by the driver as the error itself;
* `Wait`: a pause, cut short when the driver is stopped;
* `Owner`: the name of the node that owns a key now (None on one server);
* `Emit`: items for whoever iterates the driver's ``stream`` (a listing hands out each page);
* `Alone`: run a program while no other `Alone` step of the same driver runs (setup, once).

An error of the connection (the server went away) is raised into the program as the driver's
client raised it.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from streamsaver.log.routing import Step

__all__ = ["Alone", "Call", "Emit", "Owner", "Program", "Refused", "Reload", "Wait"]

T = TypeVar("T")

Program = Generator[Any, Any, T]
"""A generator yielding steps (above, or a step its own driver knows) and receiving their
results; it returns its result."""

Reload = Callable[[], Sequence[Step]]
"""What makes the commands that load the scripts again (built only when needed)."""


@dataclass(slots=True)  # not frozen: made on every hot call, where a frozen __init__ costs
class Call:
    """Send `steps` in one round trip; the replies, or `Refused` raised into the program.

    On ``NOSCRIPT`` the driver sends what `reload` makes, then again, once, the script calls
    refused with ``NOSCRIPT`` and every step that is not a script call
    (`streamsaver.drivers.wire.not_run`): a script call that ran (on a cluster, on another
    primary) is not sent twice. So the steps that are not script calls must be harmless to
    repeat (reads, durability waits, ``TIME``).

    `meanwhile`: work a driver may run once `steps` are sent, before it reads the replies (the
    read cache decodes the values it expects while the server answers); it must not raise, and
    may run more than once (a send retried) or not at all (a driver that sends and reads in one
    call)."""

    steps: Sequence[Step]
    reload: Reload
    meanwhile: Callable[[], object] | None = None


@dataclass(frozen=True, slots=True)
class Wait:
    """Pause `seconds` (less when the driver is stopped)."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Owner:
    """The name of the node that owns `key` now; None for a single server."""

    key: str


@dataclass(frozen=True, slots=True)
class Emit:
    """Hand `items` to the iterator of the driver's ``stream``; the program gets None back."""

    items: Sequence[Any]


@dataclass(frozen=True, slots=True)
class Alone:
    """Run `program` (to its return value) while no other `Alone` step of the driver runs."""

    program: Program[Any]


class Refused(Exception):
    """An error reply to a `Call`, raised into the program.

    Attributes:
        error: the client's exception; a `Refused` the program does not handle is raised by the
            driver as this error, so callers see what the client raised.
        moved: whether the error says the cluster's slots moved since the slot map was read (an
            index a query named is on another node now, or gone).
        scripts_missing: whether a node still lacked a script after the driver loaded them again
            (on a cluster: a primary the slot map does not know, which the reload missed).
    """

    def __init__(self, error: Exception, moved: bool, scripts_missing: bool = False) -> None:
        super().__init__(str(error))
        self.error = error
        self.moved = moved
        self.scripts_missing = scripts_missing

    def starts(self, prefix: str) -> bool:
        """Whether the error reply starts with `prefix` (its code: ``STALE``, ``SSBASE``...)."""
        return str(self.error).startswith(prefix)
