"""What a subscriber following the memory store's feeds (``Subscriber(..., domain="store")``)
hands its handler: a `StoreFeedEvent`, a memory audit record (who wrote which fact, when: the
payload's ``writer``, ``run`` and ``at``).

A store feed pointer carries the event's type, its partition, the item's namespace (``labels``)
and key, so `StoreFeedEvent.namespace` and `key` cost nothing; the value is in the log entry,
read on demand (`StoreFeedEvent.value`, or with the batch under ``prefetch``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import orjson

from streamsaver.errors import EventDecodeError
from streamsaver.feeds.event import Entry, FeedEvent
from streamsaver.log.events import Event, ItemDeleted, ItemPut
from streamsaver.log.fields import ITEM_KEY, LABELS
from streamsaver.log.items import item_from_fields

__all__ = ["StoreFeedEvent", "item_address"]


def item_address(raw: Mapping[bytes, bytes]) -> tuple[tuple[str, ...] | None, str | None]:
    """The (namespace, key) a store feed pointer names; (None, None) when it names no item
    (a partition's erasure) or they cannot be read."""
    labels, key = raw.get(LABELS), raw.get(ITEM_KEY)
    if labels is None or key is None:
        return None, None
    try:
        namespace = orjson.loads(labels)
    except orjson.JSONDecodeError:
        return None, None
    if not isinstance(namespace, list) or not all(isinstance(label, str) for label in namespace):
        return None, None
    return tuple(namespace), key.decode("utf-8", "surrogatepass")


class StoreFeedEvent(FeedEvent):
    """One store event as a subscriber's handler sees it (`FeedEvent`'s attributes, with
    `thread_id` the store partition's log id).

    Attributes:
        namespace, key: the item written (``ItemPut``) or deleted (``ItemDeleted``), from the
            feed pointer; None for a partition's erasure.
    """

    __slots__ = ("key", "namespace")

    def __init__(self, *, namespace: tuple[str, ...] | None, key: str | None, **event: Any) -> None:
        super().__init__(checkpoint_ns=None, checkpoint_id=None, **event)
        self.namespace, self.key = namespace, key

    def __repr__(self) -> str:
        return f"StoreFeedEvent({self.type} {self.namespace!r} {self.key!r} #{self.id})"

    def _record(self, entry: Entry) -> Event | None:
        if not entry:
            return None
        if self._read is not None and self._read[0] is entry:
            return self._read[1]
        event = self._checked(item_from_fields(entry, self.log_id))
        if isinstance(event, (ItemPut, ItemDeleted)) and (event.namespace, event.key) != (self.namespace, self.key):
            raise EventDecodeError("the log entry holds another item than its feed pointer names", event_id=self.log_id)
        self._read = (entry, event)
        return event

    def _decoded(self, event: Event, links: Any) -> dict[str, Any]:
        """`payload` of a store event: namespace, key, value (None for a deletion), the
        writer's clock (``at``, microseconds), the TTL (``ttl_ms``, 0: none), who wrote it
        (``writer``: the store's writer name, "" for events logged before writers were) and the
        LangGraph run it was written in (``run``: a dict of ``thread_id``, ``checkpoint_ns``,
        ``run_id``, "" where the run's config named none; None outside a run)."""
        if not isinstance(event, (ItemPut, ItemDeleted)):
            return {}
        run = None if event.run is None else dataclasses.asdict(event.run)
        who = {"writer": event.writer, "run": run}
        if isinstance(event, ItemPut):
            return {"namespace": event.namespace, "key": event.key, "value": event.value, "at": event.at,
                    "ttl_ms": event.ttl_ms, **who}
        return {"namespace": event.namespace, "key": event.key, "value": None, "at": event.at, **who}

    def value(self) -> dict[str, Any] | None:
        """The value an ``ItemPut`` wrote (read from its log entry unless prefetched); None for
        a deletion, or when the entry is gone (erased since)."""
        payload = self.payload()
        return payload.get("value") if payload else None

    async def avalue(self) -> dict[str, Any] | None:
        """`value` with the async client."""
        payload = await self.apayload()
        return payload.get("value") if payload else None
