"""A subscriber's settings and results, and the step that hands events to its handler.

Pure data shared by `streamsaver.feeds.subscriber_core` (the decisions) and `streamsaver.feeds.subscriber`
(the shells).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field

from streamsaver.errors import InvalidInputError
from streamsaver.feeds.consumer_data import ConsumerOptions, ConsumerStats
from streamsaver.feeds.event import EventFilter, FeedEvent
from streamsaver.feeds.ownership import check_count, check_partitions

__all__ = ["DOMAINS", "Deliver", "Options", "SubscriberStats", "check_group"]

DOMAINS = ("checkpoints", "store", "audit")
"""The domains whose feeds a subscriber can follow."""
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
class SubscriberStats(ConsumerStats):
    """What a subscriber did. Every feed entry read ends as handled, filtered (acked without
    the handler), dead (moved to the dead letters) or left pending (after a `failed` attempt)."""

    handled: int = 0
    filtered: int = 0
    failed: int = 0


@dataclass(kw_only=True)
class Options(ConsumerOptions):
    """A subscriber's settings (see `streamsaver.feeds.subscriber.Subscriber`)."""

    group: str
    partitions: Collection[int] | None = None
    event_filter: EventFilter = field(default_factory=EventFilter)
    max_deliveries: int = 5
    prefetch: bool = False
    load_metadata: bool = False
    retry_ms: int = 100
    trim_every_s: float | None = None
    domain: str = "checkpoints"
    """Whose feeds: ``"checkpoints"`` (the thread logs'), ``"store"`` (the memory store's) or
    ``"audit"`` (the agent middleware's audit feeds)."""

    def check(self) -> None:
        """Raises: InvalidInputError: an option out of range or of the wrong type."""
        super().check()
        check_group(self.group)
        if self.domain not in DOMAINS:
            raise InvalidInputError(f"domain must be {' or '.join(map(repr, DOMAINS))}, not {self.domain!r}")
        self.partitions = check_partitions(self.partitions)
        for what, minimum in (("max_deliveries", 1), ("retry_ms", 0)):
            check_count(getattr(self, what), what, minimum)
        trim = self.trim_every_s
        if trim is not None and (isinstance(trim, bool) or not isinstance(trim, (int, float)) or trim <= 0):
            raise InvalidInputError(f"trim_every_s must be a number of seconds > 0 or None, not {trim!r}")
