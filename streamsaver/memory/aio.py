"""`AsyncStreamStore`: the asyncio long-term memory store. Concurrent calls are coalesced into
one batch (LangGraph's ``AsyncBatchedBaseStore``), so many ``aput``/``aget`` of one tick are one
round trip; its sync methods work from other threads. Every call is a program of
`streamsaver.store.programs`, run by `streamsaver.drivers.aio.AsyncDriver`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Literal, TypeVar

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.store.base import (
    NOT_PROVIDED,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    NotProvided,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.base.batch import AsyncBatchedBaseStore
from redis.asyncio.retry import Retry

from streamsaver.drivers.aio import AsyncDriver
from streamsaver.drivers.alane import AsyncLane
from streamsaver.drivers.cluster import aconnect
from streamsaver.drivers.wire import client_options
from streamsaver.log.keys import DEFAULT_PREFIX
from streamsaver.memory.batch_queue import DrainWatchedQueue
from streamsaver.memory.options import async_embedder, store_core, ttl_config
from streamsaver.memory.options import local_cache as cache_of
from streamsaver.memory.runs import current_run, writer_name
from streamsaver.store import erasure, programs, reembed
from streamsaver.store.hybrid import search_op
from streamsaver.store.local_reads import NOT_HELD, flushing, held_get
from streamsaver.store.validation import check_ops
from streamsaver.store.values import encoded
from streamsaver.store.writers import with_run, with_runs

__all__ = ["AsyncStreamStore"]

T = TypeVar("T")


class AsyncStreamStore(AsyncBatchedBaseStore):
    """`streamsaver.memory.sync.StreamStore` on a ``redis.asyncio.Redis`` (same arguments);
    made inside a running event loop. Each call's op is checked before it joins a batch, so an
    invalid op fails its own call only. A put or delete takes the LangGraph run it is called in
    with it into the batch (which another task runs), also when called from another thread."""

    supports_ttl = True
    _aqueue: DrainWatchedQueue  # LangGraph's queue, swapped by `_ensure_task` before the task starts

    def __init__(
        self, redis_client: Any, *, prefix: str = DEFAULT_PREFIX, partitions: int | None = None,
        default_ttl: float | None = None, refresh_on_read: bool = True, index: IndexConfig | None = None,
        allow_eviction: bool = False, serde: SerializerProtocol | None = None, local_cache: int = 0,
        writer: str | None = None,
    ) -> None:
        super().__init__()
        self.ttl_config = ttl_config(default_ttl, refresh_on_read)
        self.core = store_core(redis_client, prefix, partitions, refresh_on_read, index, allow_eviction, serde,
                               writer_name(writer))
        self.index_config = index
        self._driver = AsyncDriver(redis_client, other=async_embedder(index), lane=AsyncLane.of(redis_client),
                                   name_errors=True)
        self.cache_listener = cache_of(self, redis_client, self.core, local_cache)

    def _ensure_task(self) -> None:
        if not isinstance(self._aqueue, DrainWatchedQueue):  # LangGraph's __init__ makes a plain one
            self._aqueue = DrainWatchedQueue()
        super()._ensure_task()

    def close(self) -> None:
        """As `StreamStore.close` (callable from any thread, the event loop's included)."""
        if self.cache_listener is not None:
            self.cache_listener.stop()

    async def aclose(self) -> None:
        """`close`, and the end of the batching task once the calls queued before it have run (each
        gets its result); a later call starts a new one. Without it the task is left pending when
        the event loop closes ("Task was destroyed but it is pending")."""
        task = self._task
        if task is not None and not task.done():
            # LangGraph's batch loop ends on a falsy item, but only where it waits for a batch's first
            # item (one met while gathering a batch is dropped): so the mark goes in behind an empty queue.
            while not self._aqueue.empty():
                await self._aqueue.emptied.wait()  # set when the task took the last item: no polling
            self._aqueue.put_nowait(None)
            await task
            if not self._aqueue.empty():  # calls made while it closed: a new task serves them
                self._ensure_task()
        await asyncio.to_thread(self.close)

    async def __aenter__(self) -> AsyncStreamStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @classmethod
    @asynccontextmanager
    async def from_conn_string(cls, url: str, **options: Any) -> AsyncIterator[AsyncStreamStore]:
        """A store on a new asyncio client for `url`, closed on exit."""
        client = await aconnect(url, cluster=None, **client_options(retry_class=Retry))
        try:
            async with cls(client, **options) as store:
                yield store
        finally:
            await client.aclose()

    async def setup(self) -> None:
        """As `StreamStore.setup`."""
        await self._driver.run(programs.set_up(self.core))

    @property
    def writer(self) -> str:
        """The name this store's puts and deletes are logged with."""
        return self.core.writer

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        run = current_run()
        return await self._driver.run(programs.batch(self.core, ops if run is None else with_runs(ops, run)))

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self._from_thread(self.abatch(with_runs(ops, current_run())))

    async def apurge(self, prefix: tuple[str, ...]) -> int:
        """As `StreamStore.purge`."""
        return await self._driver.run(flushing(self.core.cache, erasure.purge(self.core, prefix)))

    async def areembed(self, prefix: tuple[str, ...] = (), *, everything: bool = False, dry_run: bool = False,
                       progress: Callable[[int], None] | None = None) -> int:
        """As `StreamStore.reembed` (``aembed_documents``)."""
        return await self._driver.run(flushing(self.core.cache, reembed.reembed(
            self.core, prefix, everything, dry_run=dry_run, progress=progress)))

    async def aget(self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None) -> Item | None:
        """LangGraph's ``aget``; one the local cache holds is answered at once (no batch, no wait
        for the batching task) when no call waits in the queue (a put queued before it, of the
        same item, is read as the batch they would have shared reads it)."""
        refresh = self.core.refresh_on_read if refresh_ttl is None else refresh_ttl
        if self._aqueue.empty() and (held := held_get(self.core, namespace, key, refresh)) is not NOT_HELD:
            return held
        check_ops([GetOp(namespace, key)])
        return await super().aget(namespace, key, refresh_ttl=refresh)

    async def asearch(
        self, namespace_prefix: tuple[str, ...], /, *, query: str | None = None,
        filter: dict[str, Any] | None = None, limit: int = 10, offset: int = 0, refresh_ttl: bool | None = None,
        hybrid: bool | None = None,
    ) -> list[SearchItem]:
        """LangGraph's ``asearch``, with `StreamStore.search`'s `hybrid` switch (a call that
        sets it runs as a batch of its own)."""
        check_ops([SearchOp(namespace_prefix, filter, limit, offset, query)])
        if hybrid is not None:
            refresh = self.core.refresh_on_read if refresh_ttl is None else refresh_ttl
            op = search_op(SearchOp(namespace_prefix, filter, limit, offset, query, refresh), hybrid)
            return (await self.abatch([op]))[0]  # type: ignore[return-value]
        return await super().asearch(
            namespace_prefix, query=query, filter=filter, limit=limit, offset=offset, refresh_ttl=refresh_ttl
        )

    async def aput(
        self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None, *, ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> None:
        await self._queued(self._put(namespace, key, value, index, ttl))

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        await self._queued(self._delete(namespace, key))

    def put(
        self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None, *, ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> None:
        self._from_thread(self._queued(self._put(namespace, key, value, index, ttl)))

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        self._from_thread(self._queued(self._delete(namespace, key)))

    def _put(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any],
             index: Literal[False] | list[str] | None, ttl: float | NotProvided | None) -> PutOp:
        """The checked op of a put, with the caller's LangGraph run."""
        if isinstance(ttl, NotProvided):
            ttl = (self.ttl_config or {}).get("default_ttl")
        op = PutOp(namespace, key, value, index, ttl)
        check_ops([op])
        encoded(value, self.core.serde)  # a value the serde cannot encode fails this call alone
        return with_run(op, current_run())

    def _delete(self, namespace: tuple[str, ...], key: str) -> PutOp:
        op = PutOp(namespace, key, None)
        check_ops([op])
        return with_run(op, current_run())

    async def _queued(self, op: Op) -> Any:
        """`op`'s result, run in the next batch (as LangGraph's ``AsyncBatchedBaseStore`` queues
        its calls: the op is made here, so that it carries its caller's run)."""
        self._ensure_task()
        future = self._loop.create_future()
        self._aqueue.put_nowait((future, op))
        return await future

    def _from_thread(self, call: Coroutine[Any, Any, T]) -> T:
        """`call` run on the store's event loop, from another thread."""
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # no loop runs in this thread
            running = None
        if running is self._loop:
            call.close()
            raise asyncio.InvalidStateError(
                f"a synchronous call to {type(self).__name__} in its own event loop would deadlock: await its "
                "a* method instead")
        return asyncio.run_coroutine_threadsafe(call, self._loop).result()

    async def alist_namespaces(
        self, *, prefix: tuple[str, ...] | None = None, suffix: tuple[str, ...] | None = None,
        max_depth: int | None = None, limit: int = 100, offset: int = 0,
    ) -> list[tuple[str, ...]]:
        conditions = [MatchCondition("prefix", prefix)] if prefix else []
        conditions += [MatchCondition("suffix", suffix)] if suffix else []
        check_ops([ListNamespacesOp(tuple(conditions), max_depth, limit, offset)])
        return await super().alist_namespaces(
            prefix=prefix, suffix=suffix, max_depth=max_depth, limit=limit, offset=offset
        )
