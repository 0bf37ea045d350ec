"""The projector worker's units of work and bookkeeping, without I/O: a view's partition (`Unit`)
and who owns it (`assignment`), a feed pointer (`parse_pointer`), a feed entry on its way
through a cycle (`Item`) and the counts of what a worker did (`WorkerStats`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, fields

from streamsaver.feeds.ownership import is_transient, share
from streamsaver.log.events import Event
from streamsaver.log.keys import Keyspace, ViewName, partition_of
from streamsaver.log.rewrite import Entry

__all__ = ["Item", "Pointer", "Unit", "WorkerStats", "assignment", "group_name", "parse_pointer"]

_STREAM_ID = re.compile(r"^\d+-\d+$")


def group_name(view: ViewName) -> str:
    """The consumer group of a view's projector workers on every partition feed."""
    return f"projector:{view}"


@dataclass(frozen=True, order=True)
class Unit:
    """One partition of one view: what a lease covers."""

    view: ViewName
    partition: int


@dataclass
class WorkerStats:
    """What a worker did. Every pointer read ends as exactly one of applied, skipped (its view
    had it already), gone (its log entry was erased) or dead (moved to the dead letters)."""

    read: int = 0
    applied: int = 0
    skipped: int = 0
    gone: int = 0
    dead: int = 0
    claimed: int = 0
    busy: int = 0
    cycles: int = 0

    def add(self, other: WorkerStats) -> None:
        """Add `other`'s counts to these."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


@dataclass(frozen=True)
class Pointer:
    """A partition-feed pointer: the log entry `log_id` of `thread` holds an event of `type`."""

    log_id: str
    type: str
    thread: str


def parse_pointer(raw: dict[bytes, bytes], keyspace: Keyspace, partition: int) -> Pointer | str:
    """The pointer in a feed entry's fields, or why it is malformed."""
    try:
        log_id, type_ = raw[b"id"].decode(), raw[b"type"].decode()
        thread = raw[b"thread"].decode("utf-8", "surrogatepass")
    except (KeyError, UnicodeDecodeError) as exc:
        return f"malformed pointer: {exc!r}"
    if not _STREAM_ID.match(log_id):
        return f"malformed pointer: log entry id {log_id!r}"
    if partition_of(thread, keyspace.partitions) != partition:
        return f"pointer to thread {thread!r} of another partition"
    return Pointer(log_id, type_, thread)


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


def assignment(units: Sequence[Unit], rosters: dict[ViewName, list[str]], name: str) -> list[Unit]:
    """The units `name` should own: partition ``p`` of a view goes to the ``p mod n``-th of the
    view's ``n`` live workers in name order."""
    mine = []
    for view in dict.fromkeys(u.view for u in units):
        own = set(share([u.partition for u in units if u.view == view], rosters.get(view, []), name))
        mine += [u for u in units if u.view == view and u.partition in own]
    return sorted(mine, key=units.index)
