"""`StreamSaver`: the synchronous saver. It only picks the driver: every call is a program of
`streamsaver.checkpoints.programs`, run by `streamsaver.drivers.sync.SyncDriver`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from redis import Redis
from redis.cluster import RedisCluster

from streamsaver.checkpoints import programs
from streamsaver.checkpoints.ownership import claimed
from streamsaver.drivers.cluster import connect
from streamsaver.drivers.lane import Lane
from streamsaver.drivers.sync import SyncDriver, in_thread
from streamsaver.drivers.wire import client_options
from streamsaver.saver.dropin import conn_string_source
from streamsaver.saver.shell import SaverShell

__all__ = ["ShallowStreamSaver", "StreamSaver"]


class StreamSaver(SaverShell[Redis | RedisCluster]):
    """A LangGraph checkpointer whose history is a Redis Stream per thread.

    Args:
        redis_client: a ``redis.Redis``, or a ``redis.cluster.RedisCluster`` for Redis Cluster,
            made with ``decode_responses=False``; or a URL (as ``redis_url=``).
        redis_url, connection_args, ttl: langgraph-checkpoint-redis's spellings: a URL to connect
            to (a client the saver owns, closed by `close`), ``from_url`` options for it, and
            ``{"default_ttl": minutes, "refresh_on_read": bool}`` (instead of the two below).
        view: the view reads use: ``"full"`` (every checkpoint) or ``"shallow"`` (latest only).
        projections: the views each append keeps current (must include `view`); None (the
            default): the views the deployment's first `setup()` recorded, which on a new
            deployment is `view` alone, so each put indexes one document
            (`streamsaver.checkpoints.inline_views`; docs/worker.md). A deployment whose
            savers read both views declares ``("full", "shallow")`` at its first setup.
        prefix: the key prefix; deployments with different prefixes share a Redis safely.
        partitions: the partition count of a new deployment (an existing one keeps its own).
        serde: the serializer of checkpoint bodies, channel values and writes.
        durability: when an append returns: ``"memory"`` (applied by Redis), ``"aof"`` (also
            fsynced to the AOF: ``WAITAOF``) or ``"replica"`` (also acknowledged by a replica:
            ``WAIT``); the wait is pipelined with the append, still one round trip.
        durability_timeout_ms: how long to wait before raising `DurabilityError`.
        default_ttl: minutes after its last write (or refreshing read) when every key of a
            thread expires; None: never. Set in the same script as each append.
        refresh_on_read: `get_tuple` refreshes the thread's TTL (in the same round trip).
        compression: ``"zstd"`` stores payloads of 4 KiB or more (`streamsaver.log.compression.MIN_BYTES`)
            zstd-compressed when that saves an eighth or more (not with an `EncryptedSerializer`);
            None stores them as the serde wrote them. Either saver reads both forms.
        deltas: store a ``msgpack`` list that extends the value this saver last stored of its
            channel (LangGraph's ``messages``) as the elements added, with a full value every
            8 versions (`streamsaver.log.deltas`); False stores full values. Reading always
            understands deltas (readers older than this option do not: upgrade them first).
        allow_eviction: let setup (also the lazy one of a saver's first call) accept a server
            whose ``maxmemory-policy`` evicts keys (``allkeys-*``, ``volatile-*``), which loses
            checkpoints silently when memory is full; by default that is `EvictionPolicyError`.
        read_cache_bytes: the bound of the saver's read cache (32 MiB by default; 0: none): the
            stored log entries it wrote or read, so that `get_tuple` is shipped only the entries
            it lacks (`streamsaver.checkpoints.entry_cache`; docs/performance.md).

    `put`, `put_writes` and `get_tuple` make one round trip each; `list` makes one per page of
    a thread's history, or one query and one fetch per page across threads or with a filter.
    The async methods run the sync ones in a worker thread; prefer `AsyncStreamSaver` there.
    """

    def _bind(self, client: Redis | RedisCluster) -> None:
        self._driver = SyncDriver(client, lane=Lane.of(client), name_errors=True)

    def _connect(self, url: str, connection_args: dict[str, Any]) -> Redis | RedisCluster:
        return connect(url, **client_options(connection_args))

    @classmethod
    @contextmanager
    def from_conn_string(
        cls,
        url: str | None = None,
        *,
        redis_url: str | None = None,
        redis_client: Redis | RedisCluster | None = None,
        connection_args: Mapping[str, Any] | None = None,
        cluster: bool | None = None,
        **options: Any,
    ) -> Iterator[StreamSaver]:
        """A saver on a new client for `url` (``redis://``, ``rediss://``, ``unix://``), closed on exit.

        Args:
            cluster: True: `url` names a node of a Redis Cluster (a ``RedisCluster`` client
                discovers the others); False: a single server; None: ask the server
                (``HELLO``).
            redis_url, redis_client, connection_args: langgraph-checkpoint-redis's spellings
                (`redis_url` is `url`; a `redis_client` passed in is not closed on exit).
                `connection_args` (and the URL's query) override the client's defaults
                (`streamsaver.drivers.wire.client_options`): ``socket_connect_timeout`` 5 s,
                ``socket_timeout`` 10 s, and a ``Retry`` that resends a call whose connection
                dropped. A server that does not answer in time fails the call with
                `ServerTimeoutError`; one that cannot be reached with `ServerUnavailableError`.
        """
        source = conn_string_source(url, redis_url, redis_client, connection_args)
        if source.url is None:
            yield cls(source.client, **options)
            return
        client = connect(source.url, cluster=cluster, **client_options(source.connection_args))
        try:
            yield cls(client, **options)
        finally:
            client.close()

    def close(self) -> None:
        """Close the client this saver made from a URL (one passed in stays open)."""
        if self._owns_client:
            self.redis.close()

    def __enter__(self) -> StreamSaver:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def asetup(self) -> None:
        """`setup` from a coroutine (in a worker thread)."""
        await asyncio.to_thread(self.setup)

    def ping(self) -> float:
        """One ``PING`` round trip, for readiness probes: the seconds it took.

        Raises:
            ServerUnavailableError: the server did not answer (after the client's own retries).
        """
        return self._driver.run(programs.ping(self.core))

    def setup(self) -> None:
        """Check the modules, fix the partition count, create indexes (on a cluster: read the
        slot map, then on every primary). Idempotent."""
        self._driver.run(programs.set_up(self.core))

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._driver.run(programs.get_tuple(self.core, config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        return self._driver.stream(programs.list_checkpoints(self.core, config, filter, before, limit))

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self._driver.run(programs.put(self.core, config, checkpoint, metadata, new_versions, self._fence))

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        self._driver.run(programs.put_writes(self.core, config, writes, task_id, task_path, self._fence))

    def delete_thread(self, thread_id: str) -> None:
        self._driver.run(programs.delete_thread(self.core, thread_id))

    def claim_write_ownership(self, thread_id: str) -> StreamSaver:
        """Take write ownership of `thread_id`, superseding its current owner: a writer (this
        saver, fenced) whose put and put_writes of that thread are accepted only while this
        claim is the thread's newest. One round trip; its writes cost none more (the fence is
        checked inside the append's own script). A superseded writer's writes raise
        `StaleWriteOwnerError` and write nothing; its other calls (reads, delete_thread...) are
        the saver's. See docs/reliability.md, "Several workers on one thread".

        Raises:
            InvalidInputError: a thread id that is not a string of valid Unicode.
        """
        return self._fenced(self._driver.run(programs.claim_write_ownership(self.core, thread_id)))

    def check_write_ownership(self) -> None:
        """Raise `StaleWriteOwnerError` unless this writer's claim is still its thread's current
        one (one round trip; e.g. before an action outside the thread). A saver holding no
        claim raises `InvalidInputError`."""
        self._driver.run(programs.check_write_ownership(self.core, claimed(self._fence)))

    async def aclaim_write_ownership(self, thread_id: str) -> StreamSaver:
        return await asyncio.to_thread(self.claim_write_ownership, thread_id)

    async def acheck_write_ownership(self) -> None:
        await asyncio.to_thread(self.check_write_ownership)

    def copy_thread(
        self, source_thread_id: str, target_thread_id: str, *, until: str | datetime | None = None
    ) -> None:
        """Copy a thread's whole log (or, with `until`, the thread as it was then) into a new
        thread; see `streamsaver.checkpoints.maintenance.copy_thread`."""
        self._driver.run(programs.copy_thread(self.core, source_thread_id, target_thread_id, until))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Remove the checkpoints and writes of `run_ids` from logs and views (see
        `streamsaver.checkpoints.programs.delete_for_runs`)."""
        self._driver.run(programs.delete_for_runs(self.core, run_ids))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune threads, DeltaChannel-safe; see `streamsaver.checkpoints.maintenance.prune`."""
        self._driver.run(programs.prune(self.core, thread_ids, strategy))

    def retain(
        self, thread_ids: Sequence[str], *, keep_last: int | None = None, max_age: timedelta | None = None
    ) -> None:
        """Retention: compact each thread down to its newest `keep_last` checkpoints per
        namespace and those younger than `max_age` (DeltaChannel-safe, like `prune`)."""
        self._driver.run(programs.retain(self.core, thread_ids, keep_last, max_age))

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """The base class's ancestor walk, in one round trip on the full view."""
        return self._driver.run(programs.delta_channel_history(self.core, config, channels))

    def pin_thread(self, thread_id: str) -> None:
        """Keep every key of the thread (now and after later appends) from expiring."""
        self._driver.run(programs.pin_thread(self.core, thread_id, True))

    def unpin_thread(self, thread_id: str) -> None:
        """Let the thread expire again, `default_ttl` from now."""
        self._driver.run(programs.pin_thread(self.core, thread_id, False))

    async def aretain(
        self, thread_ids: Sequence[str], *, keep_last: int | None = None, max_age: timedelta | None = None
    ) -> None:
        await asyncio.to_thread(self.retain, thread_ids, keep_last=keep_last, max_age=max_age)

    async def acopy_thread(
        self, source_thread_id: str, target_thread_id: str, *, until: str | datetime | None = None
    ) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id, until=until)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await asyncio.to_thread(lambda: self.get_delta_channel_history(config=config, channels=channels))

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        return in_thread(lambda: self.list(config, filter=filter, before=before, limit=limit))

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def apin_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.pin_thread, thread_id)

    async def aunpin_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.unpin_thread, thread_id)


class ShallowStreamSaver(StreamSaver):
    """A `StreamSaver` that reads and keeps only the shallow view (the latest checkpoint per
    thread and namespace; the log still holds every event): ``view="shallow"``, and on a new
    deployment it projects the shallow view alone. The counterpart of langgraph-checkpoint-redis's
    ``ShallowRedisSaver``; every other argument as `StreamSaver`'s."""

    def __init__(
        self,
        redis_client: Redis | RedisCluster | str | None = None,
        *,
        view: str = "shallow",
        projections: Iterable[str] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(redis_client, view=view, projections=projections, **options)
