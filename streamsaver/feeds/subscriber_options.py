"""A subscriber's settings and results, and the step that hands events to its handler.

Pure data shared by `streamsaver.feeds.subscriber_core` (the decisions) and `streamsaver.feeds.subscriber`
(the shells).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field, fields

from streamsaver.errors import InvalidInputError
from streamsaver.feeds.event import EventFilter, FeedEvent
from streamsaver.feeds.ownership import check_count, check_partitions

__all__ = ["Deliver", "Options", "SubscriberStats", "check_group"]

_GROUP = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def check_group(group: str) -> str:
    """Validate a subscriber group name: 1-64 of ``[A-Za-z0-9._-]``.

    Raises:
        InvalidInputError: any other name.
    """
    if not isinstance(group, str) or not _GROUP.match(group):
        raise InvalidInputError(f"a subscriber group name is 1-64 of [A-Za-z0-9._-], not {group!r}")
    return group


@dataclass(frozen=True)
class Deliver:
    """A step: call the handler on `events` in order, until one raises or `deadline` (monotonic
    seconds, when the lease may lapse) passes. The reply is ``(handled, error)``."""

    events: list[FeedEvent]
    deadline: float


@dataclass
class SubscriberStats:
    """What a subscriber did. Every feed entry read ends as handled, filtered (acked without
    the handler), dead (moved to the dead letters) or left pending (after a failed attempt)."""

    read: int = 0
    handled: int = 0
    filtered: int = 0
    dead: int = 0
    failed: int = 0
    claimed: int = 0
    busy: int = 0
    cycles: int = 0

    def add(self, other: SubscriberStats) -> None:
        """Add `other`'s counts to these."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


@dataclass
class Options:
    """A subscriber's settings (see `streamsaver.feeds.subscriber.Subscriber`)."""

    group: str
    name: str
    partitions: Collection[int] | None = None
    event_filter: EventFilter = field(default_factory=EventFilter)
    batch: int = 100
    lease_ms: int = 10_000
    poll_ms: int = 100
    max_deliveries: int = 5
    start: str = "0"
    prefetch: bool = False
    load_metadata: bool = False
    retry_ms: int = 100
    trim_every_s: float | None = None

    def check(self) -> None:
        """Raises: InvalidInputError: an option out of range or of the wrong type."""
        check_group(self.group)
        self.partitions = check_partitions(self.partitions)
        for what, minimum in (("batch", 1), ("lease_ms", 10), ("poll_ms", 0), ("max_deliveries", 1), ("retry_ms", 0)):
            check_count(getattr(self, what), what, minimum)
        if self.start not in ("0", "$") or self.batch < 1 or self.lease_ms < 10 or self.max_deliveries < 1:
            raise InvalidInputError("need start '0' or '$', batch >= 1, lease_ms >= 10 and max_deliveries >= 1")
        trim = self.trim_every_s
        if trim is not None and (isinstance(trim, bool) or not isinstance(trim, (int, float))):
            raise InvalidInputError(f"trim_every_s must be a number of seconds > 0 or None, not {trim!r}")
        if self.retry_ms < 0 or (trim is not None and trim <= 0):
            raise InvalidInputError("need retry_ms >= 0 and trim_every_s > 0 (or None)")
