"""`AsyncStreamSaver`: the asyncio saver. It only picks the driver: every call is a program of
`streamsaver.checkpoints.programs`, run by `streamsaver.drivers.aio.AsyncDriver`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
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
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry

from streamsaver.checkpoints import programs
from streamsaver.checkpoints.ownership import claimed
from streamsaver.drivers.aio import AsyncDriver, pool_size
from streamsaver.drivers.alane import AsyncLane
from streamsaver.drivers.cluster import aconnect, cluster_enabled
from streamsaver.drivers.wire import client_options
from streamsaver.saver.dropin import conn_string_source
from streamsaver.saver.shell import SaverShell

__all__ = ["AsyncShallowStreamSaver", "AsyncStreamSaver"]


class AsyncStreamSaver(SaverShell[Redis | RedisCluster]):
    """The asyncio twin of `StreamSaver`; same arguments, with a ``redis.asyncio.Redis`` client
    (or a ``redis.asyncio.cluster.RedisCluster`` for Redis Cluster).

    Its sync methods (`get_tuple`, `put`, ...) work from threads other than the event loop's,
    as LangGraph's sync graph APIs need; called on the loop's own thread they raise
    `asyncio.InvalidStateError` instead of deadlocking.
    """

    def _bind(self, client: Redis | RedisCluster) -> None:
        self._adriver = AsyncDriver(client, slots=pool_size(client), name_errors=True, lane=AsyncLane.of(client))

    def _connect(self, url: str, connection_args: dict[str, Any]) -> Redis | RedisCluster:
        options = client_options(connection_args, retry_class=Retry)
        if cluster_enabled(url, connection_args):  # one blocking round trip: a constructor cannot await
            return RedisCluster.from_url(url, **options)
        return Redis.from_url(url, **options)

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls,
        url: str | None = None,
        *,
        redis_url: str | None = None,
        redis_client: Redis | RedisCluster | None = None,
        connection_args: Mapping[str, Any] | None = None,
        cluster: bool | None = None,
        **options: Any,
    ) -> AsyncIterator[AsyncStreamSaver]:
        """A saver on a new client for `url`, closed on exit (`cluster` as in
        `StreamSaver.from_conn_string`: None asks the server whether it runs in cluster mode;
        `redis_url`, `redis_client`, `connection_args` and the client's timeouts as there)."""
        source = conn_string_source(url, redis_url, redis_client, connection_args)
        if source.url is None:
            yield cls(source.client, **options)
            return
        made = client_options(source.connection_args, retry_class=Retry)
        client = await aconnect(source.url, cluster=cluster, **made)
        try:
            yield cls(client, **options)
        finally:
            await client.aclose()

    async def aclose(self) -> None:
        """Close the client this saver made from a URL (one passed in stays open)."""
        if self._owns_client:
            await self.redis.aclose()

    async def __aenter__(self) -> AsyncStreamSaver:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def ping(self) -> float:
        """One ``PING`` round trip, for readiness probes: the seconds it took.

        Raises:
            ServerUnavailableError: the server did not answer (after the client's own retries).
        """
        return await self._adriver.run(programs.ping(self.core))

    async def setup(self) -> None:
        """Check the modules, fix the partition count, create indexes (on a cluster: read the
        slot map, then on every primary). Idempotent."""
        await self._adriver.run(programs.set_up(self.core))

    async def asetup(self) -> None:
        """`setup`, under langgraph-checkpoint-redis's name."""
        await self.setup()

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._adriver.run(programs.get_tuple(self.core, config))

    def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        return self._adriver.stream(programs.list_checkpoints(self.core, config, filter, before, limit))

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await self._adriver.run(programs.put(self.core, config, checkpoint, metadata, new_versions, self._fence))

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        await self._adriver.run(programs.put_writes(self.core, config, writes, task_id, task_path, self._fence))

    async def adelete_thread(self, thread_id: str) -> None:
        await self._adriver.run(programs.delete_thread(self.core, thread_id))

    async def aclaim_write_ownership(self, thread_id: str) -> AsyncStreamSaver:
        """Take write ownership of `thread_id`, superseding its current owner: a writer (this
        saver, fenced) whose put and put_writes of that thread are accepted only while this
        claim is the thread's newest. One round trip; its writes cost none more (the fence is
        checked inside the append's own script). A superseded writer's writes raise
        `StaleWriteOwnerError` and write nothing; its other calls (reads, delete_thread...) are
        the saver's. See docs/reliability.md, "Several workers on one thread".

        Raises:
            InvalidInputError: a thread id that is not a string of valid Unicode.
        """
        return self._fenced(await self._adriver.run(programs.claim_write_ownership(self.core, thread_id)))

    async def acheck_write_ownership(self) -> None:
        """Raise `StaleWriteOwnerError` unless this writer's claim is still its thread's current
        one (one round trip; e.g. before an action outside the thread). A saver holding no
        claim raises `InvalidInputError`."""
        await self._adriver.run(programs.check_write_ownership(self.core, claimed(self._fence)))

    async def acopy_thread(
        self, source_thread_id: str, target_thread_id: str, *, until: str | datetime | None = None
    ) -> None:
        """Copy a thread's whole log (or, with `until`, the thread as it was then) into a new
        thread; see `streamsaver.checkpoints.maintenance.copy_thread`."""
        await self._adriver.run(programs.copy_thread(self.core, source_thread_id, target_thread_id, until))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Remove the checkpoints and writes of `run_ids` from logs and views (see
        `streamsaver.checkpoints.programs.delete_for_runs`)."""
        await self._adriver.run(programs.delete_for_runs(self.core, run_ids))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune threads, DeltaChannel-safe; see `streamsaver.checkpoints.maintenance.prune`."""
        await self._adriver.run(programs.prune(self.core, thread_ids, strategy))

    async def aretain(
        self, thread_ids: Sequence[str], *, keep_last: int | None = None, max_age: timedelta | None = None
    ) -> None:
        """Retention: compact each thread down to its newest `keep_last` checkpoints per
        namespace and those younger than `max_age` (DeltaChannel-safe, like `aprune`)."""
        await self._adriver.run(programs.retain(self.core, thread_ids, keep_last, max_age))

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """The base class's ancestor walk, in one round trip on the full view."""
        return await self._adriver.run(programs.delta_channel_history(self.core, config, channels))

    async def apin_thread(self, thread_id: str) -> None:
        """Keep every key of the thread (now and after later appends) from expiring."""
        await self._adriver.run(programs.pin_thread(self.core, thread_id, True))

    async def aunpin_thread(self, thread_id: str) -> None:
        """Let the thread expire again, `default_ttl` from now."""
        await self._adriver.run(programs.pin_thread(self.core, thread_id, False))

    @property
    def loop(self) -> Any:
        """The event loop the sync methods run the async ones on (the last one the saver ran in)."""
        return self._adriver.loop

    def retain(
        self, thread_ids: Sequence[str], *, keep_last: int | None = None, max_age: timedelta | None = None
    ) -> None:
        self._adriver.blocking(self.aretain(thread_ids, keep_last=keep_last, max_age=max_age))

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._adriver.blocking(self.aget_tuple(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        return self._adriver.blocking_stream(programs.list_checkpoints(self.core, config, filter, before, limit))

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self._adriver.blocking(self.aput(config, checkpoint, metadata, new_versions))

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        self._adriver.blocking(self.aput_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        self._adriver.blocking(self.adelete_thread(thread_id))

    def claim_write_ownership(self, thread_id: str) -> AsyncStreamSaver:
        return self._adriver.blocking(self.aclaim_write_ownership(thread_id))

    def check_write_ownership(self) -> None:
        self._adriver.blocking(self.acheck_write_ownership())

    def copy_thread(
        self, source_thread_id: str, target_thread_id: str, *, until: str | datetime | None = None
    ) -> None:
        self._adriver.blocking(self.acopy_thread(source_thread_id, target_thread_id, until=until))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._adriver.blocking(self.adelete_for_runs(run_ids))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._adriver.blocking(self.aprune(thread_ids, strategy=strategy))

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return self._adriver.blocking(self.aget_delta_channel_history(config=config, channels=channels))

    def pin_thread(self, thread_id: str) -> None:
        self._adriver.blocking(self.apin_thread(thread_id))

    def unpin_thread(self, thread_id: str) -> None:
        self._adriver.blocking(self.aunpin_thread(thread_id))


class AsyncShallowStreamSaver(AsyncStreamSaver):
    """The asyncio twin of `ShallowStreamSaver` (langgraph-checkpoint-redis's
    ``AsyncShallowRedisSaver``): ``view="shallow"``, and on a new deployment it projects the
    shallow view alone."""

    def __init__(
        self,
        redis_client: Redis | RedisCluster | str | None = None,
        *,
        view: str = "shallow",
        projections: Iterable[str] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(redis_client, view=view, projections=projections, **options)
