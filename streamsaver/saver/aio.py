"""`AsyncStreamSaver`: the asyncio saver. Only I/O; every decision is in `SaverCore`."""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import (
    AsyncIterator,
    Coroutine,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.exceptions import NoScriptError, ResponseError

from streamsaver.checkpoints import setup
from streamsaver.checkpoints.core import (
    CONNECTION_RETRIES,
    Command,
    CoreBinding,
    SaverCore,
    SetupProgram,
    check_client,
    failed_reply,
    retry_backoff,
)
from streamsaver.checkpoints.maintenance import Program
from streamsaver.drivers.cluster import (
    acluster_enabled,
    enqueue,
    execute,
    initialize,
    is_cluster,
    node_name,
)
from streamsaver.log.keys import DEFAULT_PREFIX
from streamsaver.log.routing import Step

__all__ = ["AsyncStreamSaver"]

T = TypeVar("T")


class AsyncStreamSaver(CoreBinding, BaseCheckpointSaver[str]):
    """The asyncio twin of `StreamSaver`; same arguments, with a ``redis.asyncio.Redis`` client
    (or a ``redis.asyncio.cluster.RedisCluster`` for Redis Cluster).

    Its sync methods (`get_tuple`, `put`, ...) work from threads other than the event loop's,
    as LangGraph's sync graph APIs need; called on the loop's own thread they raise
    `asyncio.InvalidStateError` instead of deadlocking.
    """

    def __init__(
        self,
        redis_client: Redis | RedisCluster,
        *,
        view: str = "full",
        projections: Iterable[str] = ("full", "shallow"),
        prefix: str = DEFAULT_PREFIX,
        partitions: int | None = None,
        serde: SerializerProtocol | None = None,
        durability: str = "memory",
        durability_timeout_ms: int = 5000,
        default_ttl: float | None = None,
        refresh_on_read: bool = False,
        compression: str | None = "zstd",
        deltas: bool = True,
    ) -> None:
        super().__init__(serde=serde)
        check_client(redis_client)
        self.redis = redis_client
        self.core = SaverCore.configure(
            self.serde,
            view=view,
            projections=projections,
            prefix=prefix,
            partitions=partitions,
            durability=durability,
            durability_timeout_ms=durability_timeout_ms,
            default_ttl=default_ttl,
            refresh_on_read=refresh_on_read,
            compression=compression,
            cluster=is_cluster(redis_client),
            deltas=deltas,
        )
        self._setup_lock = asyncio.Lock()
        # A plain redis.asyncio pool raises MaxConnectionsError past its size instead of
        # waiting; many graph tasks saving at once must queue here instead.
        # (A cluster client keeps a pool per node and has no `connection_pool`.)
        pool = getattr(redis_client, "connection_pool", None)
        self._slots = asyncio.Semaphore(max(1, int(getattr(pool, "max_connections", 100))))
        try:
            self.loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self.loop = None

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls, url: str, *, cluster: bool | None = None, **options: Any
    ) -> AsyncIterator[AsyncStreamSaver]:
        """A saver on a new client for `url`, closed on exit (`cluster` as in
        `StreamSaver.from_conn_string`: None asks the server whether it runs in cluster mode)."""
        retry = Retry(retry_backoff(), CONNECTION_RETRIES)
        if cluster is None:
            cluster = await acluster_enabled(url)
        client: Redis | RedisCluster = RedisCluster.from_url(url, retry=retry) if cluster else Redis.from_url(url, retry=retry)
        try:
            yield cls(client, **options)
        finally:
            await client.aclose()

    async def _send(self, commands: Sequence[Step]) -> builtins.list[Any]:
        """One round trip; on NOSCRIPT (a flushed or restarted server) load scripts and resend.
        At most the client pool's size of calls are in flight at once; the rest wait."""
        async with self._slots:
            try:
                return await self._send_once(commands)
            except NoScriptError:
                await self._send_raw(self.core.load_scripts())
                return await self._send_once(commands)

    async def _send_once(self, commands: Sequence[Step]) -> builtins.list[Any]:
        if len(commands) == 1:
            return [await execute(self.redis, commands[0])]
        replies = await self._send_raw(commands)
        if (error := failed_reply(replies)) is not None:
            raise error
        return replies

    async def _send_raw(self, commands: Sequence[Step]) -> builtins.list[Any]:
        pipe = self.redis.pipeline(transaction=False)
        enqueue(pipe, self.redis, commands)
        return await pipe.execute(raise_on_error=False)

    async def _send_durable(self, core: SaverCore, command: Command) -> Any:
        """An append and its durability wait in one round trip (the wait again, on the node the
        append ran on, when a cluster redirected it)."""
        steps = core.durable(command)
        key = core.wait_key(steps)
        sent_to = node_name(self.redis, key) if key else None
        replies = await self._send(steps)
        if key and (again := core.wait_again(steps, sent_to, node_name(self.redis, key))):
            replies = [replies[0], *(await self._send(again))]
        core.read_durable(replies)
        return replies[0]

    async def setup(self) -> None:
        """Check the modules, fix the partition count, create indexes (on a cluster: read the
        slot map, then on every primary). Idempotent."""
        self.loop = asyncio.get_running_loop()
        await self._setup()

    async def _setup(self, *, wait_indexed: bool = False) -> None:
        await initialize(self.redis)
        program: SetupProgram = self.core.setup_program(wait_indexed)
        try:
            request = next(program)
            while True:
                if isinstance(request, setup.Pause):
                    await asyncio.sleep(request.seconds)
                    request = program.send(None)
                else:
                    request = program.send(await self._send_raw(request))
        except StopIteration:
            return

    async def _ready(self) -> SaverCore:
        if self.core.keyspace is None:
            async with self._setup_lock:
                if self.core.keyspace is None:
                    await self.setup()
        return self.core

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        core = await self._ready()
        return core.read_get(await self._send(core.get_requests(config)))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        pager, moved = (await self._ready()).list_pager(config, filter, before, limit), False
        while (request := pager.next_request()) is not None:
            try:
                replies = await self._send(request)
            except ResponseError as exc:
                if moved or not self.core.index_moved(exc):
                    raise
                moved = True
                await self._setup(wait_indexed=True)
                pager = pager.resumed(self.core.index_targets(self.core.view))
                continue
            for item in pager.feed(replies):
                yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        core = await self._ready()
        call = core.put_call(config, checkpoint, metadata, new_versions)
        try:
            entry_id = await self._send_durable(core, call.command)
        except ResponseError as exc:
            # A delta whose link is not what this saver remembered: the full values (rare).
            entry_id = await self._send_durable(core, core.put_refused(call, exc))
        core.put_logged(call, entry_id)
        return call.saved

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        core = await self._ready()
        await self._send_durable(core, core.put_writes_request(config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        core = await self._ready()
        await self._send_durable(core, core.delete_request(thread_id))

    async def _drive(self, program: Program) -> None:
        """Run a maintenance program: send each request it yields, hand it the replies (or the
        Redis error) until it returns."""
        try:
            request = next(program)
            while True:
                try:
                    replies = await self._send(request)
                except ResponseError as exc:
                    request = program.throw(exc)
                else:
                    request = program.send(replies)
        except StopIteration:
            return

    async def acopy_thread(
        self, source_thread_id: str, target_thread_id: str, *, until: str | datetime | None = None
    ) -> None:
        """Copy a thread's whole log (or, with `until`, the thread as it was then) into a new
        thread; see `streamsaver.checkpoints.maintenance.copy_thread`."""
        await self._drive((await self._ready()).copy_program(source_thread_id, target_thread_id, until))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Remove the checkpoints and writes of `run_ids` from logs and views. On Redis Cluster,
        when slots moved since `setup()`, it reads the slot map again, indexes anew and runs
        again (what the first run deleted is not found twice)."""
        try:
            await self._drive((await self._ready()).runs_program(run_ids))
        except ResponseError as exc:
            if not self.core.index_moved(exc):
                raise
            await self._setup(wait_indexed=True)
            await self._drive(self.core.runs_program(run_ids))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune threads, DeltaChannel-safe; see `streamsaver.checkpoints.maintenance.prune`."""
        await self._drive((await self._ready()).prune_program(thread_ids, strategy))

    async def aretain(
        self, thread_ids: Sequence[str], *, keep_last: int | None = None, max_age: timedelta | None = None
    ) -> None:
        """Retention: compact each thread down to its newest `keep_last` checkpoints per
        namespace and those younger than `max_age` (DeltaChannel-safe, like `aprune`)."""
        await self._drive((await self._ready()).retain_program(thread_ids, keep_last, max_age))

    def retain(
        self, thread_ids: Sequence[str], *, keep_last: int | None = None, max_age: timedelta | None = None
    ) -> None:
        self._run(self.aretain(thread_ids, keep_last=keep_last, max_age=max_age))

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """The base class's ancestor walk, in one round trip on the full view."""
        if not channels:
            return {}
        request = (await self._ready()).history_request(config, channels)
        if request is None:
            return await super().aget_delta_channel_history(config=config, channels=channels)
        return self.core.read_history((await self._send([request]))[0], channels)

    async def apin_thread(self, thread_id: str) -> None:
        """Keep every key of the thread (now and after later appends) from expiring."""
        await self._send([(await self._ready()).pin_request(thread_id, True)])

    async def aunpin_thread(self, thread_id: str) -> None:
        """Let the thread expire again, `default_ttl` from now."""
        await self._send([(await self._ready()).pin_request(thread_id, False)])

    def get_next_version(self, current: str | None, channel: None = None) -> str:
        return SaverCore.next_version(current)

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        try:
            on_loop = asyncio.get_running_loop() is self.loop
        except RuntimeError:
            on_loop = False
        if self.loop is None or on_loop:
            coro.close()
            raise asyncio.InvalidStateError(
                "AsyncStreamSaver's sync methods must be called from a thread other than the event "
                "loop's, after the saver was created or set up inside a running loop; inside the "
                "loop, await the a-methods (aget_tuple, aput, ...) instead"
            )
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._run(self.aget_tuple(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        async def collect() -> builtins.list[CheckpointTuple]:
            return [t async for t in self.alist(config, filter=filter, before=before, limit=limit)]

        yield from self._run(collect())

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self._run(self.aput(config, checkpoint, metadata, new_versions))

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        self._run(self.aput_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        self._run(self.adelete_thread(thread_id))

    def copy_thread(
        self, source_thread_id: str, target_thread_id: str, *, until: str | datetime | None = None
    ) -> None:
        self._run(self.acopy_thread(source_thread_id, target_thread_id, until=until))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._run(self.adelete_for_runs(run_ids))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._run(self.aprune(thread_ids, strategy=strategy))

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return self._run(self.aget_delta_channel_history(config=config, channels=channels))

    def pin_thread(self, thread_id: str) -> None:
        self._run(self.apin_thread(thread_id))

    def unpin_thread(self, thread_id: str) -> None:
        self._run(self.aunpin_thread(thread_id))
