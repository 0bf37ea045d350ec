"""`StreamSaver`: the synchronous saver. Only I/O; every decision is in `SaverCore`."""

from __future__ import annotations

import asyncio
import builtins
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

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
from redis import Redis
from redis.cluster import RedisCluster
from redis.exceptions import NoScriptError, ResponseError
from redis.retry import Retry

from streamsaver.checkpoints import setup
from streamsaver.checkpoints.core import (
    CONNECTION_RETRIES,
    LOAD_SCRIPTS,
    Command,
    CoreBinding,
    SaverCore,
    SetupProgram,
    check_client,
    failed_reply,
    retry_backoff,
)
from streamsaver.checkpoints.maintenance import Program
from streamsaver.drivers.cluster import connect, enqueue, execute, is_cluster, node_name
from streamsaver.drivers.lane import Lane
from streamsaver.log.keys import DEFAULT_PREFIX
from streamsaver.log.routing import Routed, Step

__all__ = ["StreamSaver", "round_trip", "send_raw"]


def send_raw(client: Redis | RedisCluster, commands: Sequence[Step]) -> list[Any]:
    """Send `commands` in one pipelined round trip (on a cluster, one pipeline per node they
    go to, written to every node before any reply is read); errors come back as reply objects."""
    pipe = client.pipeline(transaction=False)
    enqueue(pipe, client, commands)
    replies: list[Any] = pipe.execute(raise_on_error=False)
    return replies


def _send_once(client: Redis | RedisCluster, commands: Sequence[Step], lane: Lane | None = None) -> list[Any]:
    if lane is not None and lane.open():
        # A plain client's steps need no routing: a `Routed` step is its command.
        replies = lane.send([step.command if isinstance(step, Routed) else step for step in commands])
    elif len(commands) == 1:
        return [execute(client, commands[0])]
    else:
        replies = send_raw(client, commands)
    if (error := failed_reply(replies)) is not None:
        raise error
    return replies


def round_trip(
    client: Redis | RedisCluster,
    commands: Sequence[Step],
    reload: Sequence[Step] | Callable[[], Sequence[Step]] = LOAD_SCRIPTS,
    lane: Lane | None = None,
) -> list[Any]:
    """One round trip (a pipeline when there are several commands; on `lane`, while it is
    open, one write of them all); on NOSCRIPT (a flushed or restarted server) send `reload`
    (the scripts, or what makes them: only built then) and send again: a refused script ran
    nothing.

    Raises:
        RedisError: the first error among the replies.
    """
    try:
        return _send_once(client, commands, lane)
    except NoScriptError:
        send_raw(client, reload() if callable(reload) else reload)
        return _send_once(client, commands, lane)


class StreamSaver(CoreBinding, BaseCheckpointSaver[str]):
    """A LangGraph checkpointer whose history is a Redis Stream per thread.

    Args:
        redis_client: a ``redis.Redis``, or a ``redis.cluster.RedisCluster`` for Redis Cluster,
            made with ``decode_responses=False``.
        view: the view reads use: ``"full"`` (every checkpoint) or ``"shallow"`` (latest only).
        projections: the views each append keeps current (must include `view`).
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
        compression: ``"zstd"`` stores payloads of 512 bytes or more zstd-compressed when that saves
            an eighth or more (not with an `EncryptedSerializer`); None stores them as the serde
            wrote them. Either saver reads both forms.
        deltas: store a ``msgpack`` list that extends the value this saver last stored of its
            channel (LangGraph's ``messages``) as the elements added, with a full value every
            8 versions (`streamsaver.log.deltas`); False stores full values. Reading always
            understands deltas (readers older than this option do not: upgrade them first).

    `put`, `put_writes` and `get_tuple` make one round trip each; `list` makes one per page of
    a thread's history, or one query and one fetch per page across threads or with a filter.
    The async methods run the sync ones in a worker thread; prefer `AsyncStreamSaver` there.
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
        self._lane = Lane.of(redis_client)
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

    @classmethod
    @contextmanager
    def from_conn_string(cls, url: str, *, cluster: bool | None = None, **options: Any) -> Iterator[StreamSaver]:
        """A saver on a new client for `url` (``redis://``, ``rediss://``, ``unix://``), closed on exit.

        Args:
            cluster: True: `url` names a node of a Redis Cluster (a ``RedisCluster`` client
                discovers the others); False: a single server; None: ask the server
                (``INFO cluster``).
        """
        retry = Retry(retry_backoff(), CONNECTION_RETRIES)
        client = connect(url, cluster=cluster, retry=retry)
        try:
            yield cls(client, **options)
        finally:
            client.close()

    def _send(self, commands: Sequence[Step]) -> builtins.list[Any]:
        return round_trip(self.redis, commands, self.core.load_scripts, self._lane)

    def _send_raw(self, commands: Sequence[Step]) -> builtins.list[Any]:
        return send_raw(self.redis, commands)

    def _send_durable(self, core: SaverCore, command: Command) -> Any:
        """An append and its durability wait in one round trip (the wait again, on the node the
        append ran on, when a cluster redirected it)."""
        steps = core.durable(command)
        key = core.wait_key(steps)
        sent_to = node_name(self.redis, key) if key else None
        replies = self._send(steps)
        if key and (again := core.wait_again(steps, sent_to, node_name(self.redis, key))):
            replies = [replies[0], *self._send(again)]
        core.read_durable(replies)
        return replies[0]

    def setup(self) -> None:
        """Check the modules, fix the partition count, create indexes (on a cluster: read the
        slot map, then on every primary). Idempotent."""
        self._setup()

    def _setup(self, *, wait_indexed: bool = False) -> None:
        program: SetupProgram = self.core.setup_program(wait_indexed)
        try:
            request = next(program)
            while True:
                if isinstance(request, setup.Pause):
                    time.sleep(request.seconds)
                    request = program.send(None)
                else:
                    request = program.send(self._send_raw(request))
        except StopIteration:
            return

    def _ready(self) -> SaverCore:
        if self.core.keyspace is None:
            self.setup()
        return self.core

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        core = self._ready()
        return core.read_get(self._send(core.get_requests(config)))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        pager, moved = self._ready().list_pager(config, filter, before, limit), False
        while (request := pager.next_request()) is not None:
            try:
                replies = self._send(request)
            except ResponseError as exc:
                if moved or not self.core.index_moved(exc):
                    raise
                moved = True
                self._setup(wait_indexed=True)
                pager = pager.resumed(self.core.index_targets(self.core.view))
                continue
            yield from pager.feed(replies)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        core = self._ready()
        call = core.put_call(config, checkpoint, metadata, new_versions)
        try:
            entry_id = self._send_durable(core, call.command)
        except ResponseError as exc:
            # A delta whose link is not what this saver remembered: the full values (rare).
            entry_id = self._send_durable(core, core.put_refused(call, exc))
        core.put_logged(call, entry_id)
        return call.saved

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        core = self._ready()
        self._send_durable(core, core.put_writes_request(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        core = self._ready()
        self._send_durable(core, core.delete_request(thread_id))

    def _drive(self, program: Program) -> None:
        """Run a maintenance program: send each request it yields, hand it the replies (or the
        Redis error) until it returns."""
        try:
            request = next(program)
            while True:
                try:
                    replies = self._send(request)
                except ResponseError as exc:
                    request = program.throw(exc)
                else:
                    request = program.send(replies)
        except StopIteration:
            return

    def copy_thread(
        self, source_thread_id: str, target_thread_id: str, *, until: str | datetime | None = None
    ) -> None:
        """Copy a thread's whole log (or, with `until`, the thread as it was then) into a new
        thread; see `streamsaver.checkpoints.maintenance.copy_thread`."""
        self._drive(self._ready().copy_program(source_thread_id, target_thread_id, until))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Remove the checkpoints and writes of `run_ids` from logs and views. On Redis Cluster,
        when slots moved since `setup()`, it reads the slot map again, indexes anew and runs
        again (what the first run deleted is not found twice)."""
        try:
            self._drive(self._ready().runs_program(run_ids))
        except ResponseError as exc:
            if not self.core.index_moved(exc):
                raise
            self._setup(wait_indexed=True)
            self._drive(self.core.runs_program(run_ids))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune threads, DeltaChannel-safe; see `streamsaver.checkpoints.maintenance.prune`."""
        self._drive(self._ready().prune_program(thread_ids, strategy))

    def retain(
        self, thread_ids: Sequence[str], *, keep_last: int | None = None, max_age: timedelta | None = None
    ) -> None:
        """Retention: compact each thread down to its newest `keep_last` checkpoints per
        namespace and those younger than `max_age` (DeltaChannel-safe, like `prune`)."""
        self._drive(self._ready().retain_program(thread_ids, keep_last, max_age))

    async def aretain(
        self, thread_ids: Sequence[str], *, keep_last: int | None = None, max_age: timedelta | None = None
    ) -> None:
        await asyncio.to_thread(self.retain, thread_ids, keep_last=keep_last, max_age=max_age)

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """The base class's ancestor walk, in one round trip on the full view."""
        if not channels:
            return {}
        request = self._ready().history_request(config, channels)
        if request is None:
            return super().get_delta_channel_history(config=config, channels=channels)
        return self.core.read_history(self._send([request])[0], channels)

    def pin_thread(self, thread_id: str) -> None:
        """Keep every key of the thread (now and after later appends) from expiring."""
        self._send([self._ready().pin_request(thread_id, True)])

    def unpin_thread(self, thread_id: str) -> None:
        """Let the thread expire again, `default_ttl` from now."""
        self._send([self._ready().pin_request(thread_id, False)])

    def get_next_version(self, current: str | None, channel: None = None) -> str:
        return SaverCore.next_version(current)

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

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        items = await asyncio.to_thread(lambda: list(self.list(config, filter=filter, before=before, limit=limit)))
        for item in items:
            yield item

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
