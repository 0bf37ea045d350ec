"""Shared test helpers: one async face over both savers, checkpoint builders, key inspection.

`SaverAdapter` gives the sync and the async saver the same ``async`` methods, so one test body
runs on all four variants (sync/async x full/shallow). For the sync saver it calls the sync
methods directly (not through ``asyncio.to_thread``), so the sync code path is what is tested.

The contract and conformance suites also run on a Redis Cluster (tests/contract/conftest.py):
`sync_client` / `async_client` make a cluster client for a URL in `CLUSTER_URLS`.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.cluster
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    empty_checkpoint,
)

from streamsaver import AsyncStreamSaver, StreamSaver
from streamsaver.checkpoints.core import SaverCore
from streamsaver.log.keys import Keyspace

KINDS = ("sync", "async")
VIEWS = ("full", "shallow")
VARIANTS = [(kind, view) for kind in KINDS for view in VIEWS]
VARIANT_IDS = [f"{kind}-{view}" for kind, view in VARIANTS]

CLUSTER_URLS: set[str] = set()
"""URLs of the embedded Redis Clusters the session started (a node each)."""


def cluster_of_three() -> Any:
    """A new embedded Redis Cluster of three primaries, its URL in `CLUSTER_URLS` while it runs."""
    return cluster_of(3)


@contextmanager
def cluster_of(primaries: int) -> Iterator[Any]:
    """A new embedded Redis Cluster of `primaries` primaries, its URL in `CLUSTER_URLS` while it runs."""
    from streamsaver.server.cluster import EmbeddedCluster

    with EmbeddedCluster(primaries) as cluster:
        CLUSTER_URLS.add(cluster.url)
        try:
            yield cluster
        finally:
            CLUSTER_URLS.discard(cluster.url)


def sync_client(url: str, **options: Any) -> Any:
    """A sync client for `url`: a ``RedisCluster`` when it is a test cluster's node."""
    if url in CLUSTER_URLS:
        return redis.cluster.RedisCluster.from_url(url, **options)
    return redis.Redis.from_url(url, **options)


def async_client(url: str, **options: Any) -> Any:
    """An asyncio client for `url`: a ``RedisCluster`` when it is a test cluster's node."""
    if url in CLUSTER_URLS:
        return redis.asyncio.cluster.RedisCluster.from_url(url, **options)
    return redis.asyncio.Redis.from_url(url, **options)


def node_clients(client: Any) -> list[redis.Redis]:
    """One plain client per primary (the client itself on a single server)."""
    if isinstance(client, redis.cluster.RedisCluster):
        return [node.redis_connection for node in client.get_primaries()]
    return [client]


def index_hits(client: Any, prefix: str, view: str, query: str) -> int:
    """How many documents the view's index (its per-primary indexes on a cluster) matches."""
    total = 0
    for node in node_clients(client):
        for name in node.execute_command("FT._LIST"):
            if name.decode().startswith(Keyspace(prefix).index(view)):
                found = node.execute_command("FT.SEARCH", name, query, "LIMIT", 0, 0)
                total += int(found[0] if isinstance(found, list) else found[b"total_results"])
    return total


def config(
    thread_id: Any, checkpoint_ns: str | None = "", checkpoint_id: str | None = None
) -> RunnableConfig:
    """A LangGraph config naming a thread, a namespace (None: leave it out) and a checkpoint."""
    configurable: dict[str, Any] = {"thread_id": thread_id}
    if checkpoint_ns is not None:
        configurable["checkpoint_ns"] = checkpoint_ns
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def new_checkpoint(
    values: Mapping[str, Any], previous: Checkpoint | None = None
) -> tuple[Checkpoint, ChannelVersions]:
    """A checkpoint with a fresh (increasing) id holding `values`, and the versions it bumps.

    Channels of `previous` that `values` does not mention are carried over unchanged.
    """
    checkpoint = empty_checkpoint()
    versions = dict(previous["channel_versions"]) if previous else {}
    channel_values = dict(previous["channel_values"]) if previous else {}
    new_versions: dict[str, str | int | float] = {}
    for channel, value in values.items():
        new_versions[channel] = SaverCore.next_version(versions.get(channel))  # type: ignore[arg-type]
        channel_values[channel] = value
    versions.update(new_versions)
    checkpoint["channel_values"] = channel_values
    checkpoint["channel_versions"] = versions
    return checkpoint, new_versions


class SaverAdapter:
    """The same async methods over a `StreamSaver` or an `AsyncStreamSaver`."""

    def __init__(self, saver: StreamSaver | AsyncStreamSaver, kind: str, view: str) -> None:
        self.saver = saver
        self.kind = kind
        self.view = view

    @property
    def is_async(self) -> bool:
        return isinstance(self.saver, AsyncStreamSaver)

    async def setup(self) -> None:
        if isinstance(self.saver, AsyncStreamSaver):
            await self.saver.setup()
        else:
            self.saver.setup()

    async def put(
        self,
        cfg: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata | None = None,
        new_versions: ChannelVersions | None = None,
    ) -> RunnableConfig:
        md = metadata if metadata is not None else {}
        nv = new_versions if new_versions is not None else dict(checkpoint["channel_versions"])
        if isinstance(self.saver, AsyncStreamSaver):
            return await self.saver.aput(cfg, checkpoint, md, nv)
        return self.saver.put(cfg, checkpoint, md, nv)

    async def put_writes(
        self,
        cfg: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        if isinstance(self.saver, AsyncStreamSaver):
            await self.saver.aput_writes(cfg, writes, task_id, task_path)
        else:
            self.saver.put_writes(cfg, writes, task_id, task_path)

    async def get_tuple(self, cfg: RunnableConfig) -> CheckpointTuple | None:
        if isinstance(self.saver, AsyncStreamSaver):
            return await self.saver.aget_tuple(cfg)
        return self.saver.get_tuple(cfg)

    async def list(
        self,
        cfg: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> builtins.list[CheckpointTuple]:
        if isinstance(self.saver, AsyncStreamSaver):
            return [
                t async for t in self.saver.alist(cfg, filter=filter, before=before, limit=limit)
            ]
        return builtins.list(self.saver.list(cfg, filter=filter, before=before, limit=limit))

    async def delete_thread(self, thread_id: str) -> None:
        if isinstance(self.saver, AsyncStreamSaver):
            await self.saver.adelete_thread(thread_id)
        else:
            self.saver.delete_thread(thread_id)

    def get_next_version(self, current: str | None) -> str:
        return self.saver.get_next_version(current)

    async def save(
        self,
        thread_id: Any,
        values: Mapping[str, Any],
        *,
        checkpoint_ns: str = "",
        metadata: CheckpointMetadata | None = None,
        parent: RunnableConfig | None = None,
        previous: Checkpoint | None = None,
    ) -> tuple[RunnableConfig, Checkpoint]:
        """Put a new checkpoint holding `values`; returns the config `put` returned and the checkpoint."""
        checkpoint, new_versions = new_checkpoint(values, previous)
        cfg = parent if parent is not None else config(thread_id, checkpoint_ns)
        saved = await self.put(cfg, checkpoint, metadata or {}, new_versions)
        return saved, checkpoint


@asynccontextmanager
async def open_adapter(
    kind: str,
    view: str,
    url: str,
    prefix: str,
    *,
    setup: bool = True,
    client_options: Mapping[str, Any] | None = None,
    **options: Any,
) -> AsyncIterator[SaverAdapter]:
    """A saver of `kind` reading `view` on its own client (made with `client_options`), set up
    unless told not to."""
    if kind == "sync":
        client = sync_client(url, **(client_options or {}))
        try:
            adapter = SaverAdapter(
                StreamSaver(client, view=view, prefix=prefix, **options), kind, view
            )
            if setup:
                await adapter.setup()
            yield adapter
        finally:
            client.close()
    else:
        aclient = async_client(url, **(client_options or {}))
        try:
            adapter = SaverAdapter(
                AsyncStreamSaver(aclient, view=view, prefix=prefix, **options), kind, view
            )
            if setup:
                await adapter.setup()
            yield adapter
        finally:
            await aclient.aclose()


def keys_of(client: Any, prefix: str) -> set[bytes]:
    """Every key of a deployment (SCAN on ``prefix:*``, on every primary of a cluster)."""
    return {key for node in node_clients(client) for key in node.scan_iter(match=f"{prefix}:*", count=1000)}


def stream_lengths(client: redis.Redis, prefix: str) -> dict[bytes, int]:
    """The length of every stream of a deployment (thread logs and partition feeds)."""
    return {k: client.xlen(k) for k in keys_of(client, prefix) if client.type(k) == b"stream"}


def sans_incarnation(value: Any) -> Any:
    """A `snapshot` value without the positions fields that belong to the deployment, not to
    its log: the incarnation ``@inc`` and the records of full values deltas are checked
    against (``@base:...``); an imported or restored log gets them at its next appends."""
    kind, content = value
    if kind != "hash":
        return value
    return (kind, {k: v for k, v in content.items() if k != b"@inc" and not k.startswith(b"@base:")})


def snapshot(client: redis.Redis, prefix: str) -> dict[bytes, Any]:
    """A comparable dump of every key of a deployment (type and content)."""
    out: dict[bytes, Any] = {}
    for key in sorted(keys_of(client, prefix)):
        kind = client.type(key)
        if kind == b"stream":
            out[key] = ("stream", client.xrange(key))
        elif kind == b"hash":
            out[key] = ("hash", client.hgetall(key))
        elif kind == b"set":
            out[key] = ("set", client.smembers(key))
        elif kind == b"zset":
            out[key] = ("zset", client.zrange(key, 0, -1, withscores=True))
        elif kind == b"ReJSON-RL":
            out[key] = ("json", client.execute_command("JSON.GET", key))
        else:
            out[key] = (kind, client.dump(key))
    return out
