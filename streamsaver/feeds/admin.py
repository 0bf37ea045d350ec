"""Operating the partition feeds' consumer groups: dead letters, retention.

(Lag and health of every group, `streamsaver stats`, are an operator's look at the deployment:
`streamsaver.ops.inspection.group_health`.)

* `dead_letters` / `requeue_dead_letters`: a subscriber group's dead letters, and putting them
  back on their partition feed for that group only (a new feed entry with ``for=<group>``:
  other groups acknowledge it unseen; a projector worker applies it as a no-op). A re-queued
  event comes after the events of its thread that were handled meanwhile.
* `trim_feeds`: drop feed entries every group has acknowledged (``scripts/trim.lua``); a feed
  with no group is left alone, and the thread logs are never touched.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from redis import Redis

from streamsaver.feeds.subscriber_options import check_group
from streamsaver.log.deployment import keyspace_of
from streamsaver.log.fields import (
    CHECKPOINT_ID,
    ENTRY_ID,
    METADATA,
    NAMESPACE,
    REQUEUED_FOR,
    THREAD,
    TYPE,
)
from streamsaver.log.keys import Keyspace
from streamsaver.scripts import TRIM

__all__ = ["DeadLetter", "dead_letters", "requeue_dead_letters", "trim_feeds"]

_POINTER_FIELDS = (ENTRY_ID.encode(), TYPE, THREAD, NAMESPACE, CHECKPOINT_ID, METADATA)


def _keyspace(client: Redis, prefix: str) -> Keyspace:
    """Raises: ConfigurationError: no deployment under `prefix`."""
    return keyspace_of(prefix, client.hget(Keyspace(prefix).meta, "partitions"))


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


@dataclass(frozen=True)
class DeadLetter:
    """An event a subscriber group's handler kept failing on."""

    id: str
    """The dead letter's own id (in ``P:sub:dead:<group>``)."""
    partition: int
    entry: str
    type: str
    thread_id: str
    log_id: str
    error: str
    attempts: int
    consumer: str
    fields: dict[bytes, bytes]


def dead_letters(client: Redis, prefix: str, group: str, count: int | None = None) -> list[DeadLetter]:
    """The dead letters of `group`, oldest first (at most `count`).

    Raises:
        InvalidInputError: a bad group name.
        ConfigurationError: no deployment under `prefix`.
    """
    keyspace = _keyspace(client, prefix)
    r: Any = client
    letters = []
    for raw_id, f in r.xrange(keyspace.subscriber_dead_letters(check_group(group)), count=count):
        letters.append(DeadLetter(
            _text(raw_id), int(f.get(b"partition", b"0")), _text(f.get(b"entry", b"")), _text(f.get(b"type", b"")),
            f.get(b"thread", b"").decode("utf-8", "surrogatepass"), _text(f.get(b"id", b"")),
            _text(f.get(b"error", b"")), int(f.get(b"attempts", b"0")), _text(f.get(b"consumer", b"")), dict(f)))
    return letters


def requeue_dead_letters(client: Redis, prefix: str, group: str, ids: Collection[str] | None = None) -> int:
    """Put dead letters of `group` (all, or those named by `ids`) back on their partition
    feeds, for `group` only, and delete them from the dead letters.

    Returns:
        How many were re-queued.

    Raises:
        InvalidInputError: a bad group name.
        ConfigurationError: no deployment under `prefix`.
    """
    keyspace = _keyspace(client, prefix)
    r: Any = client
    letters = [d for d in dead_letters(client, prefix, group) if ids is None or d.id in ids]
    dead_key = keyspace.subscriber_dead_letters(group)
    pipe = r.pipeline(transaction=False)
    for letter in letters:
        pointer = [x for k in _POINTER_FIELDS if k in letter.fields for x in (k, letter.fields[k])]
        pipe.execute_command("XADD", keyspace.feed(letter.partition), "*", *pointer, REQUEUED_FOR, group.encode())
        pipe.execute_command("XDEL", dead_key, letter.id)
    pipe.execute()
    return len(letters)


def trim_feeds(client: Redis, prefix: str) -> dict[int, int]:
    """Drop, on every partition feed, the entries every consumer group has acknowledged.

    Returns:
        The entries removed per partition (partitions with none removed are left out).

    Raises:
        ConfigurationError: no deployment under `prefix`.
    """
    keyspace = _keyspace(client, prefix)
    r: Any = client
    pipe = r.pipeline(transaction=False)
    pipe.execute_command("SCRIPT", "LOAD", TRIM.source)
    for p in range(keyspace.partitions):
        pipe.execute_command(*TRIM.evalsha_args([keyspace.feed(p)], []))
    replies = pipe.execute()[1:]
    return {p: int(reply[0]) for p, reply in enumerate(replies) if int(reply[0])}
