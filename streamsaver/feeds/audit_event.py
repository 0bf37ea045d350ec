"""What a subscriber following the agent audit feeds (``Subscriber(..., domain="audit")``) hands
its handler: an `AuditFeedEvent`, one model or tool call of an agent (an audit and cost record).

An audit feed entry is the whole record (not a pointer to a log entry), so reading it costs
nothing more: `AuditFeedEvent.payload` is its fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamsaver.feeds.event import FeedEvent
from streamsaver.log.events import Event

__all__ = ["AuditFeedEvent"]


class AuditFeedEvent(FeedEvent):
    """One audited call (`FeedEvent`'s attributes: `type` ``ModelCalled`` or ``ToolCalled``,
    `thread_id`, `partition`, `id`, `time`; `log_id` is the feed entry's id).

    Attributes:
        fields: the record: ``name`` (model or tool), ``ms``, ``in`` (input digest), ``in_bytes``,
            ``out_bytes``, ``cache``, ``route``, ``memories``, ``error``, ``at`` (microseconds).
    """

    __slots__ = ("fields",)

    def __init__(self, *, fields: Mapping[bytes, bytes], **event: Any) -> None:
        super().__init__(checkpoint_ns=None, checkpoint_id=None, **event)
        self.fields = {k.decode("utf-8", "replace"): v.decode("utf-8", "replace") for k, v in fields.items()}

    def __repr__(self) -> str:
        return f"AuditFeedEvent({self.type} {self.thread_id!r} {self.fields.get('name')!r} #{self.id})"

    def record(self) -> Event | None:
        """None: an audited call is no event of the thread log."""
        return None

    async def arecord(self) -> Event | None:
        """None, as `record`."""
        return None

    def payload(self) -> dict[str, Any] | None:
        """The record's fields (read with the feed entry: no round trip)."""
        return dict(self.fields)

    async def apayload(self) -> dict[str, Any] | None:
        """`payload`."""
        return dict(self.fields)
