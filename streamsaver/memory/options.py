"""What both store shells share: their options and the client checks."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Coroutine
from typing import Any

import redis
from langchain_core.embeddings import Embeddings
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.store.base import IndexConfig, TTLConfig
from langgraph.store.base.embed import ensure_embeddings

from projectors.store import VIEW
from streamsaver.drivers.cluster import is_cluster
from streamsaver.errors import ConfigurationError, InvalidInputError
from streamsaver.log.keys import DEFAULT_PREFIX
from streamsaver.log.ttl import MAX_TTL_MINUTES
from streamsaver.memory.cluster_invalidations import ClusterInvalidations
from streamsaver.memory.invalidations import (
    HEARTBEAT_S,
    InvalidationListener,
    connection_class,
    connection_factory,
    connection_settings,
)
from streamsaver.store.core import StoreCore
from streamsaver.store.item_cache import ItemCache
from streamsaver.store.vectors import Embed, VectorIndex

__all__ = ["async_embedder", "embedder", "local_cache", "store_core", "ttl_config"]


def ttl_config(default_ttl: float | None, refresh_on_read: bool) -> TTLConfig:
    """LangGraph's TTL settings of a store: `default_ttl` minutes (None: items never expire)."""
    if default_ttl is not None and (isinstance(default_ttl, bool) or not isinstance(default_ttl, (int, float))
                                    or not 0 < default_ttl <= MAX_TTL_MINUTES):  # NaN fails the comparison too
        raise ConfigurationError(f"default_ttl is a positive number of minutes (at most {MAX_TTL_MINUTES:.3g}), "
                                 f"not {default_ttl!r}")
    config: TTLConfig = {"refresh_on_read": refresh_on_read}
    if default_ttl is not None:
        config["default_ttl"] = default_ttl
    return config


def store_core(client: Any, prefix: str = DEFAULT_PREFIX, partitions: int | None = None,
               refresh_on_read: bool = True, index: IndexConfig | None = None,
               allow_eviction: bool = False, serde: SerializerProtocol | None = None,
               writer: str = "") -> StoreCore:
    """The core of a store on `client` (a server or a cluster)."""
    vectors = VectorIndex.of(index) if index else None
    core = StoreCore(prefix, partitions, refresh_on_read, vectors, allow_eviction, cluster=is_cluster(client),
                     writer=writer)
    if serde is not None:
        core.serde = serde
    return core


def _embeddings(index: IndexConfig | None) -> Embeddings | None:
    return ensure_embeddings(index["embed"]) if index else None


def embedder(index: IndexConfig | None) -> Callable[[Any], Any]:
    """What a sync driver does with an `Embed` step: the index's embedder answers it."""
    embeddings = _embeddings(index)

    def answer(step: Any) -> Any:
        if not isinstance(step, Embed) or embeddings is None:
            raise TypeError(f"unknown program step {step!r}")
        if step.query:
            return [embeddings.embed_query(step.texts[0])]
        return embeddings.embed_documents(list(step.texts))

    return answer


def async_embedder(index: IndexConfig | None) -> Callable[[Any], Coroutine[Any, Any, Any]]:
    """What an async driver does with an `Embed` step (``aembed_documents``, ``aembed_query``)."""
    embeddings = _embeddings(index)

    async def answer(step: Any) -> Any:
        if not isinstance(step, Embed) or embeddings is None:
            raise TypeError(f"unknown program step {step!r}")
        if step.query:
            return [await embeddings.aembed_query(step.texts[0])]
        return await embeddings.aembed_documents(list(step.texts))

    return answer


CacheListener = InvalidationListener | ClusterInvalidations


def cluster_connections(client: Any) -> tuple[Any, list[tuple[str, int]]]:
    """For a cluster `client` (sync or asyncio): a function making a new sync RESP2 connection
    to a node's address (as ``CLUSTER SLOTS`` names it, remapped as the client remaps it) with
    the client's credentials and TLS settings (as `connection_factory` does for one server), and
    the client's startup nodes' addresses."""
    kwargs = dict(client.connection_kwargs if hasattr(client, "connection_kwargs")
                  else client.nodes_manager.connection_kwargs)
    kind = connection_class(kwargs.get("connection_class") or redis.Connection)
    settings = connection_settings(kind, kwargs)
    for address in ("host", "port", "path"):
        settings.pop(address, None)
    seeds = [(node.host, int(node.port)) for node in client.nodes_manager.startup_nodes.values()]
    seeds += [(node.host, int(node.port)) for node in client.get_primaries()]

    remap = client.nodes_manager.remap_host_port

    def connect(host: str, port: int) -> Any:
        host, port = remap(host, port)
        return kind(**settings, host=host, port=port, protocol=2, socket_timeout=5 * HEARTBEAT_S)

    return connect, list(dict.fromkeys(seeds))


def local_cache(owner: object, client: Any, core: StoreCore, capacity: int) -> CacheListener | None:
    """Give `core` an item cache of `capacity` documents kept coherent by an invalidation
    listener on `client`'s server (`streamsaver.memory.invalidations`; on a cluster, one on
    each primary: `streamsaver.memory.cluster_invalidations`), started now and stopped by its
    `stop` or when `owner` (the store) is garbage-collected; `capacity` 0: None, no cache.

    Raises:
        InvalidInputError: `capacity` is not a non-negative int.
        ConfigurationError: `client` is Sentinel-managed
            (`streamsaver.memory.invalidations.connection_factory`).
    """
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0:
        raise InvalidInputError(f"local_cache is a number of item documents (an int >= 0), not {capacity!r}")
    if capacity == 0:
        return None
    prefix = core.keyspace.document_prefix(VIEW, "doc").encode()
    listener: CacheListener
    if core.cluster:
        connect, seeds = cluster_connections(client)
        core.cache = ItemCache(capacity, per_node=True)
        listener = ClusterInvalidations(connect, seeds, core.cache, prefix)
    else:
        connect = connection_factory(client)
        core.cache = ItemCache(capacity)
        listener = InvalidationListener(connect, core.cache, prefix)
    listener.start()
    weakref.finalize(owner, listener.stop)
    return listener
