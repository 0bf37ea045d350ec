"""`SaverShell`: what both savers are before they pick a driver: their options, checked once
into a `SaverCore` (`streamsaver.checkpoints.core`). `StreamSaver` and `AsyncStreamSaver`
subclass it and only say which driver runs their programs."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Generic, Self, TypeVar

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.base import SerializerProtocol

from streamsaver.checkpoints.core import CoreBinding, SaverCore
from streamsaver.checkpoints.entry_cache import DEFAULT_READ_CACHE_BYTES
from streamsaver.checkpoints.ownership import WriteFence
from streamsaver.drivers.cluster import is_cluster
from streamsaver.log.keys import DEFAULT_PREFIX
from streamsaver.saver.dropin import client_source, ttl_options

__all__ = ["SaverShell"]

C = TypeVar("C")


class SaverShell(CoreBinding, BaseCheckpointSaver[str], Generic[C]):
    """A saver's options over a client of type `C` (the arguments: see `StreamSaver`).

    langgraph-checkpoint-redis's spellings are accepted too (`streamsaver.saver.dropin`): a URL
    as the first argument or ``redis_url=`` (with ``connection_args=``), and ``ttl={...}``. A
    client made here from a URL is the saver's own: `close` (or leaving ``with``) closes it.

    Raises:
        ConfigurationError: a client that decodes responses, or a bad prefix.
        InvalidInputError: a bad option (see `SaverCore.configure`), or arguments that
            contradict each other (a client and a URL, a ``ttl`` dict and ``default_ttl=``).
    """

    def __init__(
        self,
        redis_client: C | str | None = None,
        *,
        redis_url: str | None = None,
        connection_args: Mapping[str, Any] | None = None,
        ttl: Mapping[str, Any] | None = None,
        view: str = "full",
        projections: Iterable[str] | None = None,
        prefix: str = DEFAULT_PREFIX,
        partitions: int | None = None,
        serde: SerializerProtocol | None = None,
        durability: str = "memory",
        durability_timeout_ms: int = 5000,
        default_ttl: float | None = None,
        refresh_on_read: bool = False,
        compression: str | None = "zstd",
        deltas: bool = True,
        allow_eviction: bool = False,
        read_cache_bytes: int = DEFAULT_READ_CACHE_BYTES,
    ) -> None:
        super().__init__(serde=serde)
        source = client_source(redis_client, redis_url, connection_args)
        default_ttl, refresh_on_read = ttl_options(ttl, default_ttl, refresh_on_read)
        client: C = source.client if source.url is None else self._connect(source.url, source.connection_args)
        self._owns_client = source.url is not None
        self._bind(client)
        self.redis: C = client
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
            cluster=is_cluster(client),
            deltas=deltas,
            allow_eviction=allow_eviction,
            read_cache_bytes=read_cache_bytes,
        )

    _fence: WriteFence | None = None

    @property
    def write_fence(self) -> WriteFence | None:
        """The claim of a thread this saver's put and put_writes are fenced by (a writer that
        `claim_write_ownership` returned), or None: writes are not fenced."""
        return self._fence

    def _fenced(self, fence: WriteFence) -> Self:
        """A copy of this saver (same client, driver and options; it never closes the client)
        whose put and put_writes carry `fence`."""
        writer = copy.copy(self)
        writer._fence = fence
        writer._owns_client = False
        return writer

    def _connect(self, url: str, connection_args: dict[str, Any]) -> C:
        """A client for `url` that this saver owns (cluster mode asked of the server)."""
        raise NotImplementedError

    def _bind(self, client: C) -> None:
        """Make the driver this saver runs its programs with (checking `client`)."""
        raise NotImplementedError

    def get_next_version(self, current: str | None, channel: None = None) -> str:
        return SaverCore.next_version(current)
