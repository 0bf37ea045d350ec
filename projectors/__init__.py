"""Pure projectors: ``event -> list of Redis commands``, one module per view. No I/O.

The same functions run inline in the append, in the projector worker and in replay, so a view
rebuilt from the log is identical to the live one.
"""

from __future__ import annotations

from collections.abc import Callable

from projectors import full, shallow
from projectors.commands import Command
from streamsaver.log.events import Event
from streamsaver.log.keys import Keyspace, ViewName

__all__ = ["PROJECTORS", "Projector"]

Projector = Callable[[Event, Keyspace], list[Command]]

PROJECTORS: dict[ViewName, Projector] = {"full": full.project, "shallow": shallow.project}
