"""A deployment's keyspace from its settings hash (``P:meta``), without I/O.

Whoever talks to Redis sends `partitions_request` and hands the reply to `keyspace_of`: the
savers' shells, the feed consumers and the operator tools all find a deployment this way.
"""

from __future__ import annotations

from typing import Any

from streamsaver.errors import ConfigurationError
from streamsaver.log.keys import Keyspace

__all__ = ["keyspace_of", "partitions_request"]


def partitions_request(prefix: str) -> list[Any]:
    """The command that reads the partition count of the deployment under `prefix`."""
    return ["HGET", Keyspace(prefix).meta, "partitions"]


def keyspace_of(prefix: str, partitions: Any) -> Keyspace:
    """The keyspace of the deployment under `prefix`, given the reply to `partitions_request`.

    Raises:
        ConfigurationError: nothing was ever set up under `prefix` (no reply, or an error).
    """
    if partitions is None or isinstance(partitions, Exception):
        raise ConfigurationError(f"no streamsaver deployment under prefix {prefix!r}")
    return Keyspace(prefix, int(partitions))
