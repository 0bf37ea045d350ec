"""What every partition consumer (a subscriber, a projector worker) works with, without I/O.

* a `Lane`: the keys one unit of work touches (one partition feed read through one consumer
  group, under one lease, balanced through one roster), and `assignment` over lanes;
* a `Taken` feed entry, as ``lease.lua`` handed it out, and the `Pointer` it carries;
* the counts every consumer keeps (`ConsumerStats`) and the settings it shares
  (`ConsumerOptions`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol, TypeVar

from streamsaver.errors import InvalidInputError
from streamsaver.feeds.ownership import check_count, share
from streamsaver.log.fields import ENTRY_ID, THREAD, TYPE
from streamsaver.log.keys import Keyspace, partition_of

__all__ = ["ConsumerOptions", "ConsumerStats", "Lane", "Pointer", "Taken", "Unit", "assignment", "parse_pointer"]

_STREAM_ID = re.compile(r"^\d+-\d+$")
_ENTRY_ID = ENTRY_ID.encode()


class Orderable(Hashable, Protocol):
    """What a consumer's unit of work must be: hashable and ordered (releases go in order)."""

    def __lt__(self, other: Any, /) -> bool: ...


Unit = TypeVar("Unit", bound=Orderable)


@dataclass(frozen=True)
class Lane:
    """The keys of one unit of work: `group` reads the feed of `partition` under the lease
    `lease`, with failed attempts in `attempts` (None: not counted), balanced by `roster`."""

    group: str
    partition: int
    lease: str
    roster: str
    attempts: str | None = None


def assignment(units: Sequence[Unit], lanes: dict[Unit, Lane], rosters: dict[str, list[str]],
               name: str) -> list[Unit]:
    """The units `name` should own: in each roster, partition ``p`` goes to the ``p mod n``-th
    of its ``n`` live names (`name` included) in name order; `units` keep their order."""
    mine: set[Unit] = set()
    for roster in dict.fromkeys(lanes[u].roster for u in units):
        own = [u for u in units if lanes[u].roster == roster]
        kept = set(share([lanes[u].partition for u in own], rosters.get(roster, []), name))
        mine.update(u for u in own if lanes[u].partition in kept)
    return [u for u in units if u in mine]


@dataclass
class Taken:
    """One feed entry a lease read handed out."""

    entry: str
    raw: dict[bytes, bytes]
    """The pointer's fields (none for an entry trimmed from the feed)."""
    attempts: int = 0
    """Failed attempts counted before this read (lanes that count them)."""
    recovering: bool = False
    """Read from the pending entries of a lane that counts attempts: this read is counted."""


@dataclass(frozen=True)
class Pointer:
    """A partition-feed pointer: the log entry `log_id` of `thread` holds an event of `type`."""

    log_id: str
    type: str
    thread: str


def parse_pointer(
    raw: dict[bytes, bytes], keyspace: Keyspace, partition: int, owner: Callable[[str, int], int] = partition_of
) -> Pointer | str:
    """The pointer in a feed entry's fields, or why it is malformed; `owner` gives the partition
    of a pointer's thread (a store pointer's "thread" is its partition's log id)."""
    try:
        log_id, type_ = raw[_ENTRY_ID].decode(), raw[TYPE].decode()
        thread = raw[THREAD].decode("utf-8", "surrogatepass")
    except (KeyError, UnicodeDecodeError) as exc:
        return f"malformed pointer: {exc!r}"
    if not _STREAM_ID.match(log_id):
        return f"malformed pointer: log entry id {log_id!r}"
    if owner(thread, keyspace.partitions) != partition:
        return f"pointer to thread {thread!r} of another partition"
    return Pointer(log_id, type_, thread)


@dataclass
class ConsumerStats:
    """What a consumer did: entries `read` (each ends in one outcome its kind counts, or
    `dead`: moved to the dead letters), pending entries `claimed` from a lapsed owner, lease
    reads refused because another consumer held the lease (`busy`), and `cycles`."""

    read: int = 0
    dead: int = 0
    claimed: int = 0
    busy: int = 0
    cycles: int = 0

    def add(self, other: ConsumerStats) -> None:
        """Add `other`'s counts to these."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


@dataclass(kw_only=True)
class ConsumerOptions:
    """The settings every consumer has.

    Attributes:
        name: the consumer's name (lease value, consumer name, roster member).
        batch: entries read per unit per cycle.
        lease_ms: how long a lease outlives its last renewal (one renewal per cycle).
        poll_ms: the longest wait for new entries when a cycle read nothing (at most a third
            of `lease_ms`, so leases stay renewed).
        start: where a consumer group this consumer creates starts: ``"0"`` or ``"$"``.
    """

    name: str
    batch: int = 100
    lease_ms: int = 10_000
    poll_ms: int = 100
    start: str = "0"

    def check(self) -> None:
        """Raises: InvalidInputError: an option out of range or of the wrong type."""
        for what, minimum in (("batch", 1), ("lease_ms", 10), ("poll_ms", 0)):
            check_count(getattr(self, what), what, minimum)
        if self.start not in ("0", "$"):
            raise InvalidInputError(f"start must be '0' or '$', not {self.start!r}")

    @property
    def idle_ms(self) -> int:
        """The longest wait for new entries: `poll_ms`, at most a third of the lease."""
        return max(1, int(min(self.poll_ms, self.lease_ms / 3)))
