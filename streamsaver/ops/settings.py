"""Restore a deployment's lost settings (its partition count), checked against its logs.

A deployment whose settings hash (``<prefix>:meta``) was deleted or evicted while its data
stayed refuses to start (`streamsaver.errors.SettingsLostError`): a guessed partition count would
send threads to partitions their logs are not in. Each thread log's key names its partition
(``P:log:{pK}:<thread>``), and a thread's partition is a hash of its id modulo the count, so the
logs tell which counts are possible: `restore_settings` writes a count only when every log
agrees with it, and `possible_partitions` lists the counts that do. The settings also record the
deployment's inline views (`streamsaver.checkpoints.inline_views`); the positions hashes tell
which views the writers projected, and `restore_settings` writes those back too, so the next
saver does not take a deployment that indexed one view for one set up before the record (two).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from projectors.domain import CHECKPOINTS
from streamsaver.errors import InvalidInputError
from streamsaver.log import fields
from streamsaver.log.keys import Keyspace

__all__ = ["RestoredSettings", "possible_partitions", "restore_settings"]

MAX_PARTITIONS = 16384
_TAG = re.compile(rb"\{p(\d+)\}")


@dataclass(frozen=True)
class RestoredSettings:
    """What `restore_settings` did: the count written, how many logs it checked, and the inline
    views it recorded (empty: none recorded, the next saver records its own)."""

    partitions: int
    logs_checked: int
    views: tuple[str, ...] = ()


def _digest(thread_id: str) -> int:
    """`streamsaver.log.keys.partition_of`'s hash of a thread id, before the modulo."""
    return int.from_bytes(hashlib.blake2b(thread_id.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big")


def _placed_logs(client: Any, keyspace: Keyspace) -> Iterable[tuple[int, int]]:
    """(hash of the thread id, partition its log key names) for every thread log of the deployment."""
    for key in client.scan_iter(match=keyspace.logs_pattern(), count=1000, _type="stream"):
        tag = _TAG.search(key)
        if tag:
            yield _digest(keyspace.thread_of(key)), int(tag[1])


def possible_partitions(client: Any, prefix: str, sample: int = 200) -> list[int]:
    """The partition counts (1..16384) that place the first `sample` thread logs found where they
    are; every count when the deployment has no thread log."""
    placed = []
    for pair in _placed_logs(client, Keyspace(prefix)):
        placed.append(pair)
        if len(placed) >= sample:
            break
    return [n for n in range(1, MAX_PARTITIONS + 1) if all(digest % n == part for digest, part in placed)]


def projected_views(client: Any, prefix: str, sample: int = 200) -> tuple[str, ...]:
    """The views every one of the first `sample` thread positions hashes names: what every writer
    projected (a view a projector worker keeps counts once the worker has reached each thread).
    Empty when the deployment has no positions."""
    common: set[str] | None = None
    for seen, key in enumerate(client.scan_iter(match=Keyspace(prefix).positions_pattern(), count=1000, _type="hash")):
        named = {f.decode() if isinstance(f, bytes) else str(f) for f in client.hkeys(key)} - {fields.INCARNATION}
        common = named if common is None else common & named
        if seen + 1 >= sample:
            break
    return tuple(view for view in CHECKPOINTS.view_names if common and view in common)


def restore_settings(client: Any, prefix: str, partitions: int) -> RestoredSettings:
    """Write `partitions` as the deployment's partition count, after checking every thread log
    is in the partition that count gives its thread (one SCAN of the deployment's logs), and the
    inline views the positions show (`projected_views`) unless views are recorded.

    Raises:
        InvalidInputError: a log is elsewhere (the message lists the counts the logs allow), or
            the settings exist with another count (nothing to restore).
    """
    keyspace = Keyspace(prefix, partitions)
    stored = client.hget(keyspace.meta, "partitions")
    if stored is not None and int(stored) != partitions:
        raise InvalidInputError(f"the settings of {prefix!r} exist, with {int(stored)} partitions: nothing to restore")
    checked = 0
    for digest, part in _placed_logs(client, keyspace):
        if digest % partitions != part:
            allowed = possible_partitions(client, prefix)
            raise InvalidInputError(
                f"the logs of {prefix!r} were not written with {partitions} partitions (a thread log is in "
                f"partition {part}); counts that place the logs checked: {allowed[:10]}"
            )
        checked += 1
    views = projected_views(client, prefix)
    if views:
        client.hsetnx(keyspace.meta, "views", ",".join(views))  # inline_views.FIELD
    client.hset(keyspace.meta, "partitions", partitions)
    return RestoredSettings(partitions, checked, views)
