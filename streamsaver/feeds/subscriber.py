"""Subscribers: consumer groups on the partition feeds, for audit trails, analytics and alerts.

Every append also adds a small pointer to its partition's feed (``P:feed:{pN}``). A
`Subscriber` reads the feeds through a consumer group its user names (``audit``,
``analytics``...) and calls a handler with a `FeedEvent` for each event, in feed order.

* **At-least-once.** An entry is acknowledged (XACK) after the handler returned, on the next
  round trip; a subscriber killed before that leaves it pending, and the next owner of the
  partition handles it again. `FeedEvent.id` is stable across deliveries, for idempotent
  handlers.
* **One owner per partition, per-thread order.** A partition's entries are taken by one
  subscriber at a time, under a lease (``P:sub:lease:{pN}:<group>``, renewed every cycle, see
  ``scripts/lease.lua``), and handed to the handler in feed order, which is log order for each
  thread. Live subscribers heartbeat a roster (``P:sub:members:<group>``); partition ``p`` belongs
  to the ``p mod n``-th of ``n`` live subscribers in name order, so a subscriber joining the group
  takes its share, and the partitions of one that died move to the others when its lease lapses
  (``lease_ms``); taking a lapsed lease claims the dead owner's pending entries first. A handler
  is not given an event once 80 % of the lease since the last renewal has passed: the rest of
  the batch stays pending for the next cycle.
* **Failures and dead letters.** A handler that raises stops its partition at that event: it is
  tried again first on the next cycle (after ``retry_ms``) (`FeedEvent.deliveries` counts attempts, kept per entry in
  ``P:sub:tries:{pN}:<group>``, so they survive a change of owner). After ``max_deliveries``
  failed attempts the event goes to ``P:sub:dead:<group>`` (the pointer's fields plus
  ``partition``, ``entry``, ``error``, ``consumer``, ``attempts``), is acknowledged, and the
  partition flows on. Pending entries are read one at a time and counted before the handler
  runs, so an event that crashes its consumer every time is dead-lettered as well.
  ``streamsaver dead-letters`` lists and re-queues them
  (`streamsaver.feeds.admin`).
* **Filters** by event type and by top-level metadata equality run before the handler; a
  filtered event is acknowledged without it.
* **Payload on demand.** The pointer carries type, thread, namespace and checkpoint id; a
  checkpoint's metadata and the values (decoded with the saver's `serde`) come from the log
  entry, read only when the handler asks (`FeedEvent.metadata`, `FeedEvent.payload`: one round
  trip each) or, for handlers that always want them, with the whole batch in one round trip
  (``load_metadata=True`` or a metadata filter for checkpoints' metadata, ``prefetch=True`` for
  every entry).

Decisions live in `streamsaver.feeds.subscriber_core`; `Subscriber` only drives its programs with a
``redis.Redis`` (`run`, `run_burst`, `run_once`) or a ``redis.asyncio.Redis`` (``async_``
twins, whose handler may be a coroutine function). Lag and health: `streamsaver.feeds.admin`.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol
from redis.asyncio import Redis as AsyncRedis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster

from streamsaver.drivers.cluster import is_cluster
from streamsaver.drivers.programs import CoreRunner
from streamsaver.errors import ConfigurationError, InvalidInputError
from streamsaver.feeds.event import Entry, EventFilter, FeedEvent
from streamsaver.feeds.ownership import default_name
from streamsaver.feeds.subscriber_core import Deliver, Options, SubscriberCore, SubscriberStats
from streamsaver.log.keys import DEFAULT_PREFIX
from streamsaver.log.serde import SafeSerializer

__all__ = ["FeedEvent", "Handler", "Subscriber", "SubscriberStats"]

Handler = Callable[[FeedEvent], Any]
"""Called with each event; returns when done (an async subscriber may pass a coroutine function)."""


def _fields(raw: Any) -> dict[bytes, bytes]:
    return dict(raw) if isinstance(raw, Mapping) else dict(zip(raw[::2], raw[1::2], strict=True))


def _is_async_client(client: Any) -> bool:
    """Whether `client` is a ``redis.asyncio`` client."""
    return isinstance(client, (AsyncRedis, AsyncRedisCluster))


def _check_handler(handler: Any, async_client: bool) -> None:
    """Raises: InvalidInputError: `handler` is not callable, or is a coroutine function given
    with a sync client (`run` would call it and never await the coroutine)."""
    if not callable(handler):
        raise InvalidInputError(f"handler must be callable, not {type(handler).__name__}")
    is_coroutine = inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
        getattr(handler, "__call__", None)  # noqa: B004 - an object whose __call__ is async
    )
    if is_coroutine and not async_client:
        raise InvalidInputError(
            "a coroutine (async def) handler needs a redis.asyncio client and async_run / async_run_burst"
        )


class Subscriber(CoreRunner[SubscriberStats]):
    """One member of a consumer group on a deployment's partition feeds.

    Args:
        client: a ``redis.Redis`` (for `run`, `run_burst`, `run_once`, `release`) or a
            ``redis.asyncio.Redis`` (for the ``async_`` twins), with ``decode_responses=False``.
        group: the group's name, 1-64 of ``[A-Za-z0-9._-]``; every subscriber of one group
            shares the work.
        handler: called with each `FeedEvent` that passes the filters.
        prefix: the deployment's key prefix.
        name: this subscriber's name, unique among the group's live members (default:
            host-pid-random).
        partitions: the partitions to follow (default: all).
        types: event types to handle (default: all), e.g. ``["CheckpointSaved"]``.
        metadata: top-level metadata a checkpoint must carry to be handled, e.g.
            ``{"source": "input"}`` (then only checkpoints are handled).
        batch: entries read per partition per cycle.
        lease_ms: lease time-to-live; a dead subscriber's partitions move after this long.
        poll_ms: the longest wait for new entries when idle (blocking, so new entries are
            handled at once).
        max_deliveries: failed attempts after which an event goes to the dead letters.
        start: where the group starts when this subscriber creates it: ``"0"`` (everything the
            feeds hold) or ``"$"`` (only what comes next).
        prefetch: read every event's log entry with its batch (for handlers that always call
            `FeedEvent.payload`).
        load_metadata: read each checkpoint's log entry with its batch, so `FeedEvent.metadata`
            costs nothing more (on with a `metadata` filter; otherwise a handler reading
            `metadata` costs one round trip per checkpoint).
        retry_ms: `run`'s pause after a cycle in which a handler failed, before trying again.
        trim_every_s: with `run`, trim the owned partition feeds this often (below what every
            consumer group acknowledged; see `streamsaver.feeds.admin.trim_feeds`); None: never.
        serde: the saver's serializer (default: `streamsaver.log.serde.SafeSerializer`, LangGraph's
            strict msgpack mode: a stored value never names code that decoding runs); an
            ``EncryptedSerializer`` must be the saver's.
        domain: ``"store"`` follows the memory store's feeds instead (a memory audit feed):
            the handler gets `streamsaver.feeds.store_event.StoreFeedEvent`s (``ItemPut``,
            ``ItemDeleted``: `namespace`, `key`, and `value()` read on demand); the group's
            leases and dead letters are its own (``P:sub:*:store:<group>``). ``"audit"`` follows
            the agent audit feeds (`streamsaver.middleware.AuditMiddleware`): the handler gets
            `streamsaver.feeds.audit_event.AuditFeedEvent`s (``ModelCalled``, ``ToolCalled``,
            the record in `fields`); its keys are ``P:sub:*:audit:<group>``.

    Raises:
        ConfigurationError: a client that decodes responses.
        InvalidInputError: a bad group name or option; a filter that can match nothing (see
            `EventFilter.of`); a handler that is not callable, or a coroutine function with a
            sync client (it would never be awaited).
    """

    core: SubscriberCore

    def __init__(self, client: Any, group: str, handler: Handler, *, prefix: str = DEFAULT_PREFIX,
                 name: str | None = None, partitions: Collection[int] | None = None,
                 types: Collection[str] | None = None, metadata: Mapping[str, Any] | None = None,
                 batch: int = 100, lease_ms: int = 10_000, poll_ms: int = 100, max_deliveries: int = 5,
                 start: str = "0", prefetch: bool = False, load_metadata: bool = False, retry_ms: int = 100,
                 trim_every_s: float | None = None, serde: SerializerProtocol | None = None,
                 domain: str = "checkpoints") -> None:
        super().__init__(client)
        _check_handler(handler, _is_async_client(client))
        self.handler = handler
        options = Options(group=group, name=name or default_name(), partitions=partitions,
                          event_filter=EventFilter.of(types, metadata), batch=batch, lease_ms=lease_ms,
                          poll_ms=poll_ms, max_deliveries=max_deliveries, start=start, prefetch=prefetch,
                          load_metadata=load_metadata, retry_ms=retry_ms, trim_every_s=trim_every_s,
                          domain=domain)
        self.core = SubscriberCore(prefix, options, serde or SafeSerializer(), self, cluster=is_cluster(client))

    @property
    def name(self) -> str:
        """This subscriber's name: its lease value and consumer name."""
        return self.core.name

    @property
    def group(self) -> str:
        """The consumer group's name."""
        return self.core.o.group

    def _request_stop(self) -> None:
        self.core.stopping = True

    def _stopping(self) -> bool:
        return self.core.stopping

    def fetch_entry(self, log_key: str, log_id: str) -> Entry:
        """Read one log entry (sync client); empty when it is gone.

        Raises:
            ConfigurationError: the client is async (use the ``a``-prefixed `FeedEvent` methods).
        """
        if _is_async_client(self.redis):
            raise ConfigurationError("an async subscriber reads a log entry with await event.ametadata(), "
                                     "arecord() or apayload(), or loads it with the batch (load_metadata=True)")
        reply = self.redis.xrange(log_key, log_id, log_id)
        return _fields(reply[0][1]) if reply else {}

    async def afetch_entry(self, log_key: str, log_id: str) -> Entry:
        """Read one log entry (async client); empty when it is gone."""
        reply = await self.redis.xrange(log_key, log_id, log_id)
        return _fields(reply[0][1]) if reply else {}

    def _other(self, step: Any) -> Any:
        if not isinstance(step, Deliver):
            return super()._other(step)
        for n, event in enumerate(step.events):
            if time.monotonic() > step.deadline:
                return n, None
            try:
                result = self.handler(event)
            except Exception as exc:  # noqa: BLE001 - any handler failure is retried, then dead-lettered
                return n, exc
            if result is not None and inspect.isawaitable(result):
                raise TypeError("a coroutine handler needs an async client and async_run")
        return len(step.events), None

    async def _aother(self, step: Any) -> Any:
        if not isinstance(step, Deliver):
            return await super()._aother(step)
        for n, event in enumerate(step.events):
            if time.monotonic() > step.deadline:
                return n, None
            try:
                result = self.handler(event)
                if inspect.isawaitable(result):
                    await result
            except Exception as exc:  # noqa: BLE001 - any handler failure is retried, then dead-lettered
                return n, exc
        return len(step.events), None
