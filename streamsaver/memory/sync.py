"""`StreamStore`: the synchronous long-term memory store. It only picks the driver: every call
is a program of `streamsaver.store.programs`, run by `streamsaver.drivers.sync.SyncDriver`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.store.base import BaseStore, IndexConfig, Item, Op, Result, SearchItem, SearchOp
from redis import Redis

from streamsaver.drivers.cluster import connect
from streamsaver.drivers.lane import Lane
from streamsaver.drivers.sync import SyncDriver
from streamsaver.drivers.wire import client_options
from streamsaver.log.keys import DEFAULT_PREFIX
from streamsaver.memory.options import embedder, store_core, ttl_config
from streamsaver.memory.options import local_cache as cache_of
from streamsaver.memory.runs import current_run, writer_name
from streamsaver.store import erasure, programs, reembed
from streamsaver.store.hybrid import search_op
from streamsaver.store.local_reads import NOT_HELD, flushing, held_get
from streamsaver.store.writers import with_runs

__all__ = ["StreamStore"]


class StreamStore(BaseStore):
    """A LangGraph store whose every write is an event in a store partition log, projected in
    the same atomic call into a RedisJSON item and its RediSearch index.

    Args:
        redis_client: a ``redis.Redis`` made with ``decode_responses=False`` (a saver's client
            serves a store too).
        prefix: the key prefix (a saver and a store may share one).
        partitions: the partition count of a new deployment (an existing one keeps its own).
        default_ttl: minutes after its last write (or refreshing read) when an item expires;
            None: never. A put's own `ttl` wins.
        refresh_on_read: reads renew an item's TTL (a call's `refresh_ttl` says otherwise).
        index: LangGraph's ``IndexConfig`` for search by meaning (``dims``, ``embed``, ``fields``,
            None meaning ``["$"]``; ``distance_type`` cosine, l2 or inner_product;
            ``ann_index_config`` ``{"vector_type": "flat" | "hnsw", ...}``). The embeddings are
            computed here before the write is sent, and logged with it.
        allow_eviction: let setup accept a server whose ``maxmemory-policy`` evicts keys
            (``allkeys-*``, ``volatile-*``): an evicted item document or log entry is lost
            without an error. Refused by default (`EvictionPolicyError`), as by the savers.
        serde: what encodes the parts of a value that are not plain JSON (LangChain messages,
            datetimes, ...; `streamsaver.store.values`); default the savers' safe serializer.
            An ``EncryptedSerializer`` encrypts those parts at rest.
        local_cache: hold up to this many item documents in this object's memory, kept coherent
            by Redis's invalidations (`streamsaver.store.item_cache`): a get of one held costs no
            round trip. 0 (default): off. On Redis Cluster, a listener per primary. `close` stops
            its listeners.
        writer: who this store writes as: the name every put and delete logs with it (a
            service or agent name, printable, 1 to 128 characters; default: this process's
            ``host-pid``). A write made inside a LangGraph run also logs the run's
            ``thread_id``, ``checkpoint_ns`` and ``run_id`` (`streamsaver.memory.runs`): the
            memory audit feed's "who wrote which fact, when".

    `put`, `delete` and `get` make one round trip each; `batch` one for all its ops (an atomic
    append per partition written, then the reads); `search` and `list_namespaces` one.
    """

    supports_ttl = True

    def __init__(
        self, redis_client: Redis, *, prefix: str = DEFAULT_PREFIX, partitions: int | None = None,
        default_ttl: float | None = None, refresh_on_read: bool = True, index: IndexConfig | None = None,
        allow_eviction: bool = False, serde: SerializerProtocol | None = None, local_cache: int = 0,
        writer: str | None = None,
    ) -> None:
        self.ttl_config = ttl_config(default_ttl, refresh_on_read)
        self.core = store_core(redis_client, prefix, partitions, refresh_on_read, index, allow_eviction, serde,
                               writer_name(writer))
        self.index_config = index
        self._driver = SyncDriver(redis_client, lane=Lane.of(redis_client), other=embedder(index), name_errors=True)
        self.cache_listener = cache_of(self, redis_client, self.core, local_cache)

    def close(self) -> None:
        """Stop the local cache's invalidation listener, if any (its thread and connection); the
        client stays open. Idempotent."""
        if self.cache_listener is not None:
            self.cache_listener.stop()

    def __enter__(self) -> StreamStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @classmethod
    @contextmanager
    def from_conn_string(cls, url: str, **options: Any) -> Iterator[StreamStore]:
        """A store on a new client for `url` (``redis://``, ``rediss://``, ``unix://``), closed on exit."""
        client = connect(url, cluster=None, **client_options())
        try:
            with cls(client, **options) as store:
                yield store
        finally:
            client.close()

    def setup(self) -> None:
        """Check the modules, fix the partition count, create the items index, load the
        scripts. Idempotent."""
        self._driver.run(programs.set_up(self.core))

    @property
    def writer(self) -> str:
        """The name this store's puts and deletes are logged with."""
        return self.core.writer

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        run = current_run()
        return self._driver.run(programs.batch(self.core, ops if run is None else with_runs(ops, run)))

    def get(self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None) -> Item | None:
        """LangGraph's ``get``; one the local cache holds is answered without a batch."""
        refresh = self.core.refresh_on_read if refresh_ttl is None else refresh_ttl
        if (held := held_get(self.core, namespace, str(key), refresh)) is not NOT_HELD:
            return held
        return super().get(namespace, key, refresh_ttl=refresh)

    def search(
        self, namespace_prefix: tuple[str, ...], /, *, query: str | None = None,
        filter: dict[str, Any] | None = None, limit: int = 10, offset: int = 0, refresh_ttl: bool | None = None,
        hybrid: bool | None = None,
    ) -> list[SearchItem]:
        """LangGraph's ``search``; `hybrid` switches the BM25 ranking of a `query` on or off for
        this call (None: on when the index config declares ``text_fields``; see
        `streamsaver.store.hybrid`)."""
        refresh = self.core.refresh_on_read if refresh_ttl is None else refresh_ttl
        op = search_op(SearchOp(namespace_prefix, filter, limit, offset, query, refresh), hybrid)
        return self.batch([op])[0]  # type: ignore[return-value]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch` in a worker thread; prefer `AsyncStreamStore` in async code."""
        return await asyncio.to_thread(self.batch, list(ops))

    def purge(self, prefix: tuple[str, ...]) -> int:
        """Erase every item under the namespace `prefix` (labels matched whole) and every log
        entry and feed pointer that wrote one, in one atomic call on its partition
        (`streamsaver.store.erasure`); the count of log entries erased."""
        return self._driver.run(flushing(self.core.cache, erasure.purge(self.core, prefix)))

    async def apurge(self, prefix: tuple[str, ...]) -> int:
        """`purge` in a worker thread."""
        return await asyncio.to_thread(self.purge, prefix)

    def reembed(self, prefix: tuple[str, ...] = (), *, everything: bool = False, dry_run: bool = False,
                progress: Callable[[int], None] | None = None) -> int:
        """Embed again, with this store's embedding, every item under `prefix` whose embeddings
        another model computed (every embedded item with `everything`), each as a logged put that
        keeps its value, ``updated_at`` and deadline (`streamsaver.store.reembed`); how many.
        `dry_run`: how many are due, nothing embedded or written; `progress(n)` after each page."""
        return self._driver.run(flushing(self.core.cache, reembed.reembed(
            self.core, prefix, everything, dry_run=dry_run, progress=progress)))
