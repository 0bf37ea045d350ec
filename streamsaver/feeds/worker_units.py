"""The projector worker's units of work and bookkeeping, without I/O: a view's partition (`Unit`),
a feed entry on its way through a cycle (`Item`) and the counts of what a worker did
(`WorkerStats`)."""

from __future__ import annotations

from dataclasses import dataclass

from streamsaver.feeds.consumer_data import ConsumerStats, Pointer
from streamsaver.feeds.ownership import is_transient
from streamsaver.log.events import Event
from streamsaver.log.keys import ViewName
from streamsaver.log.rewrite import Entry

__all__ = ["Item", "Unit", "WorkerStats"]


@dataclass(frozen=True, order=True)
class Unit:
    """One partition of one view: what a lease covers."""

    view: ViewName
    partition: int


@dataclass
class WorkerStats(ConsumerStats):
    """What a worker did. Every pointer read ends as exactly one of applied, skipped (its view
    had it already), gone (its log entry was erased) or dead (moved to the dead letters)."""

    applied: int = 0
    skipped: int = 0
    gone: int = 0


@dataclass
class Item:
    """One feed entry on its way through a cycle; `outcome` is set once it is decided."""

    unit: Unit
    entry: str
    raw: dict[bytes, bytes]
    pointer: Pointer | None = None
    event: Event | None = None
    outcome: str = ""
    error: str = ""
    refold: list[Entry] | None = None

    def fail(self, error: Exception | str) -> None:
        """Decide: retry a transient failure, dead-letter anything else."""
        transient = isinstance(error, Exception) and is_transient(error)
        self.outcome, self.error = ("retry" if transient else "dead"), str(error)
