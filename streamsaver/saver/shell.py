"""`SaverShell`: what both savers are before they pick a driver: their options, checked once
into a `SaverCore` (`streamsaver.checkpoints.core`). `StreamSaver` and `AsyncStreamSaver`
subclass it and only say which driver runs their programs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, TypeVar

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.base import SerializerProtocol

from streamsaver.checkpoints.core import CoreBinding, SaverCore
from streamsaver.drivers.cluster import is_cluster
from streamsaver.log.keys import DEFAULT_PREFIX

__all__ = ["SaverShell"]

C = TypeVar("C")


class SaverShell(CoreBinding, BaseCheckpointSaver[str], Generic[C]):
    """A saver's options over a client of type `C` (the arguments: see `StreamSaver`).

    Raises:
        ConfigurationError: a client that decodes responses, or a bad prefix.
        InvalidInputError: a bad option (see `SaverCore.configure`).
    """

    def __init__(
        self,
        redis_client: C,
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
        self._bind(redis_client)
        self.redis: C = redis_client
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

    def _bind(self, client: C) -> None:
        """Make the driver this saver runs its programs with (checking `client`)."""
        raise NotImplementedError

    def get_next_version(self, current: str | None, channel: None = None) -> str:
        return SaverCore.next_version(current)
