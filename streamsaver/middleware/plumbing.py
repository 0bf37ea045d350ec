"""What every middleware shares: its counters, the guarded calls to the store (a Redis failure is
logged and counted, never raised into the agent), and reading a request's text and context.

A middleware is given a store (`StreamStore` or `AsyncStreamStore`, the same client the saver or
the application already uses: no second pool). A sync store serves both hook flavours (the async
hooks run its calls in a worker thread, as ``BaseStore.abatch`` does); an async store serves the
async hooks (``agent.ainvoke``) only: under ``agent.invoke`` its calls are skipped and counted.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.store.base import BaseStore, SearchItem
from langgraph.store.base.batch import AsyncBatchedBaseStore
from redis.exceptions import RedisError

from streamsaver.errors import MiddlewareConfigError, StreamSaverError
from streamsaver.middleware.scope import ScopePolicy

__all__ = ["CALL_NOTES", "FAILURES", "Guard", "MiddlewareStats", "ScopePolicy", "checked_store", "context_of",
           "last_human_text", "note"]

log = logging.getLogger("streamsaver.middleware")

FAILURES: tuple[type[BaseException], ...] = (StreamSaverError, RedisError, OSError, ValueError)
"""What a middleware's Redis work may raise and the agent never sees: connection and timeout errors
(``ConnectionError`` and ``TimeoutError`` are ``OSError``s), a full server, a refused input."""

T = TypeVar("T")


@dataclass
class MiddlewareStats:
    """What a middleware did, counted since it was made (read them any time)."""

    hits: int = 0
    misses: int = 0
    stored: int = 0
    skipped: int = 0
    """Calls the middleware stayed out of: not cacheable, no scope in the context, an async store
    under a sync run."""
    errors: int = 0
    """Failed Redis calls: the agent's call went through without the middleware's help."""
    last_error: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count(self, what: str, n: int = 1) -> None:
        """Add `n` to the counter `what` (thread-safe)."""
        with self._lock:
            setattr(self, what, getattr(self, what) + n)


def checked_store(store: Any) -> BaseStore:
    """`store` if it is a LangGraph store.

    Raises:
        MiddlewareConfigError: anything else (a client, a URL, None).
    """
    if not isinstance(store, BaseStore):
        raise MiddlewareConfigError(
            f"a middleware needs a StreamStore or AsyncStreamStore (on the saver's client), not {type(store).__name__}")
    return store


class Guard:
    """Runs a middleware's store calls so that a failure is logged and counted, never raised."""

    def __init__(self, name: str, store: BaseStore, stats: MiddlewareStats) -> None:
        self.name, self.store, self.stats = name, store, stats
        self.async_only = isinstance(store, AsyncBatchedBaseStore)

    def _failed(self, exc: BaseException) -> None:
        self.stats.count("errors")
        self.stats.last_error = f"{type(exc).__name__}: {exc}"
        log.warning("%s: the store call failed, the agent goes on without it: %s", self.name, self.stats.last_error)

    def stays_out(self) -> bool:
        """Whether a sync hook must leave the call alone (an async-only store); counts it skipped."""
        if self.async_only:
            self.stats.count("skipped")
            log.debug("%s: an async store serves agent.ainvoke only; skipped under a sync run", self.name)
        return self.async_only

    def run(self, call: Callable[[BaseStore], T], default: T) -> T:
        """`call(store)`, or `default` when it fails or the store is async-only."""
        if self.async_only:
            self.stats.count("skipped")
            log.debug("%s: an async store serves agent.ainvoke only; skipped under a sync run", self.name)
            return default
        try:
            return call(self.store)
        except FAILURES as exc:
            self._failed(exc)
            return default

    async def arun(self, call: Callable[[BaseStore], Awaitable[T]], default: T) -> T:
        """`await call(store)` (the store's ``a*`` methods), or `default` when it fails."""
        try:
            return await call(self.store)
        except FAILURES as exc:
            self._failed(exc)
            return default


    def search(self, namespace: tuple[str, ...], query: str, limit: int) -> list[SearchItem]:
        """The `limit` items of `namespace` nearest `query` (no TTL renewal); [] on a failure."""
        return self.run(lambda s: s.search(namespace, query=query, limit=limit, refresh_ttl=False), [])

    async def asearch(self, namespace: tuple[str, ...], query: str, limit: int) -> list[SearchItem]:
        """`search` with the store's async methods."""
        return await self.arun(lambda s: s.asearch(namespace, query=query, limit=limit, refresh_ttl=False), [])

    def write(self, call: Callable[[BaseStore], object]) -> None:
        """Run the store write `call`; count it stored when it succeeded."""
        if self.run(lambda store: (call(store), True)[1], False):
            self.stats.count("stored")

    async def awrite(self, call: Callable[[BaseStore], Awaitable[object]]) -> None:
        """`write` with the store's async methods."""
        async def wrote(store: BaseStore) -> bool:
            await call(store)
            return True

        if await self.arun(wrote, False):
            self.stats.count("stored")


def last_human_text(messages: Sequence[AnyMessage]) -> str | None:
    """The text of the last human message, or None when there is none."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return str(message.text)
    return None


CALL_NOTES: ContextVar[dict[str, str] | None] = ContextVar("streamsaver_middleware_notes", default=None)
"""What inner middleware tell the audit about the call it wraps (``cache``: hit or miss, ``route``)."""


def note(key: str, value: str) -> None:
    """Tell an enclosing `AuditMiddleware` (if any) `key` = `value` about the current call."""
    notes = CALL_NOTES.get()
    if notes is not None:
        notes[key] = value


def context_of(runtime: Any) -> Any:
    """The runtime context of a model or tool request (None outside a graph)."""
    return getattr(runtime, "context", None)
