"""What both store shells share: their options and the client checks."""

from __future__ import annotations

from typing import Any

from langgraph.store.base import TTLConfig

from streamsaver.drivers.cluster import is_cluster
from streamsaver.errors import ConfigurationError
from streamsaver.log.keys import DEFAULT_PREFIX
from streamsaver.store.core import StoreCore

__all__ = ["store_core", "ttl_config"]


def ttl_config(default_ttl: float | None, refresh_on_read: bool) -> TTLConfig:
    """LangGraph's TTL settings of a store: `default_ttl` minutes (None: items never expire)."""
    if default_ttl is not None and (isinstance(default_ttl, bool) or default_ttl <= 0):
        raise ConfigurationError(f"default_ttl is a positive number of minutes, not {default_ttl!r}")
    config: TTLConfig = {"refresh_on_read": refresh_on_read}
    if default_ttl is not None:
        config["default_ttl"] = default_ttl
    return config


def store_core(client: Any, prefix: str = DEFAULT_PREFIX, partitions: int | None = None,
               refresh_on_read: bool = True) -> StoreCore:
    """The core of a store on `client`.

    Raises:
        ConfigurationError: a Redis Cluster client (the store runs on one server for now).
    """
    if is_cluster(client):
        raise ConfigurationError("StreamStore runs on one Redis server; Redis Cluster is not built yet (docs/store.md)")
    return StoreCore(prefix, partitions, refresh_on_read)
