"""What `setup()` sends and how it reads the replies, without I/O.

Two round trips: the first probes for RediSearch and RedisJSON with harmless commands (never
``MODULE LIST``, which managed services often forbid), fixes the partition count in the
deployment's meta hash and lists the existing indexes; the second creates the missing indexes
and loads the scripts. Safe to run on every start and from many processes at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.exceptions import ResponseError
from redisvl.schema import IndexSchema

from projectors.schema import index_schema
from streamsaver.errors import ConfigurationError, MissingModuleError
from streamsaver.keys import DEFAULT_PARTITIONS, Keyspace, ViewName
from streamsaver.scripts import ALL

__all__ = ["create_requests", "probe_request", "read_created", "read_probe"]

Command = list[str | bytes | int]


def probe_request(prefix: str, partitions: int | None) -> list[Command]:
    """Round trip 1: module probes, partition count, index list."""
    meta = Keyspace(prefix).meta
    return [
        ["FT._LIST"],
        ["JSON.TYPE", f"{prefix}:probe"],
        ["HSETNX", meta, "partitions", partitions or DEFAULT_PARTITIONS],
        ["HGET", meta, "partitions"],
    ]


def _is_unknown_command(reply: Any) -> bool:
    return isinstance(reply, ResponseError) and "unknown command" in str(reply).lower()


def read_probe(prefix: str, partitions: int | None, replies: Sequence[Any]) -> tuple[Keyspace, list[str]]:
    """The deployment's keyspace and the index names that already exist.

    Raises:
        MissingModuleError: RediSearch or RedisJSON is missing.
        ConfigurationError: the stored partition count differs from the one asked for, or the
            server refused a probe.
    """
    indexes, json_probe, _, stored = replies
    if _is_unknown_command(indexes):
        raise MissingModuleError("RediSearch (search)", "FT._LIST")
    if _is_unknown_command(json_probe):
        raise MissingModuleError("RedisJSON (ReJSON)", "JSON.TYPE")
    for reply in replies:
        if isinstance(reply, Exception):
            raise ConfigurationError(f"setup was refused by the server: {reply}") from reply
    stored_partitions = int(stored)
    if partitions is not None and partitions != stored_partitions:
        raise ConfigurationError(
            f"this deployment ({prefix!r}) was set up with {stored_partitions} partitions; "
            f"it cannot be opened with {partitions} (omit `partitions` to use the stored count)"
        )
    names = [i.decode() if isinstance(i, bytes) else str(i) for i in indexes]
    return Keyspace(prefix, stored_partitions), names


def _create_index(keyspace: Keyspace, view: ViewName) -> Command:
    schema = IndexSchema.from_dict(index_schema(keyspace.index(view), keyspace.document_prefix(view)))
    fields = [arg for f in schema.redis_fields for arg in f.redis_args()]
    return ["FT.CREATE", keyspace.index(view), "ON", "JSON", "PREFIX", 1, keyspace.document_prefix(view), "SCHEMA", *fields]


def create_requests(keyspace: Keyspace, views: Sequence[ViewName], existing: Sequence[str]) -> list[Command]:
    """Round trip 2: create missing indexes and load every script."""
    commands = [_create_index(keyspace, v) for v in views if keyspace.index(v) not in existing]
    return commands + [["SCRIPT", "LOAD", script.source] for script in ALL]


def read_created(replies: Sequence[Any]) -> None:
    """Check round trip 2; an index another process created meanwhile is fine.

    Raises:
        ConfigurationError: an index or script could not be created.
    """
    for reply in replies:
        if isinstance(reply, ResponseError) and "already exists" not in str(reply).lower():
            raise ConfigurationError(f"setup could not create an index or load a script: {reply}") from reply
