"""Retention of the partition feeds no consumer group reads.

A feed (``P:feed:{pN}``, and the memory store's ``P:sfeed:{pN}``) holds one pointer per event
for the consumer groups (subscribers, projector workers). A feed with groups is trimmed below
what every group acknowledged (`streamsaver.feeds.admin.trim_feeds`); one that no group reads
would grow forever (about 110 bytes per event). The deployment's feed retention policy bounds
those: at most `max_len` entries, none older than `max_age` (by the server's clock: a feed
entry's id is its append time). A feed with a group is never cut by the policy, so a lagging
subscriber loses nothing; and the thread logs, the truth, are never trimmed.

The policy lives in the deployment settings (``P:meta``: ``feed_max_len``,
``feed_max_age_ms``), so every ``streamsaver trim-feeds`` run (cron, or ``--every``) applies it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from redis import Redis

from streamsaver.errors import InvalidInputError
from streamsaver.log.deployment import keyspace_of
from streamsaver.log.keys import Keyspace
from streamsaver.scripts import TRIM

__all__ = ["FeedRetention", "apply_feed_retention", "feed_retention", "set_feed_retention"]

_LEN, _AGE = "feed_max_len", "feed_max_age_ms"


@dataclass(frozen=True)
class FeedRetention:
    """How much a feed no consumer group reads keeps (None: no bound of that kind)."""

    max_len: int | None = None
    max_age: timedelta | None = None

    def __post_init__(self) -> None:
        if self.max_len is not None and self.max_len < 0:
            raise InvalidInputError(f"a feed's max length must be 0 or more, not {self.max_len}")
        if self.max_age is not None and self.max_age <= timedelta(0):
            raise InvalidInputError(f"a feed's max age must be positive, not {self.max_age}")

    @property
    def empty(self) -> bool:
        return self.max_len is None and self.max_age is None

    def script_args(self) -> list[str]:
        """TRIM's ARGV (``scripts/trim.lua``)."""
        age = "" if self.max_age is None else str(int(self.max_age / timedelta(milliseconds=1)))
        return ["" if self.max_len is None else str(self.max_len), age]

    def as_dict(self) -> dict[str, Any]:
        return {"max_len": self.max_len,
                "max_age_seconds": None if self.max_age is None else self.max_age.total_seconds()}


def _keyspace(client: Redis, prefix: str) -> Keyspace:
    """Raises: ConfigurationError: no deployment under `prefix`."""
    return keyspace_of(prefix, client.hget(Keyspace(prefix).meta, "partitions"))


def feed_retention(client: Redis, prefix: str) -> FeedRetention:
    """The deployment's stored policy (empty when none was set).

    Raises:
        ConfigurationError: no deployment under `prefix`.
    """
    meta = _keyspace(client, prefix).meta
    length, age = client.hmget(meta, [_LEN, _AGE])
    return FeedRetention(None if length is None else int(length),
                         None if age is None else timedelta(milliseconds=int(age)))


def set_feed_retention(client: Redis, prefix: str, retention: FeedRetention) -> None:
    """Store `retention` as the deployment's policy (an empty one removes it).

    Raises:
        ConfigurationError: no deployment under `prefix`.
    """
    meta = _keyspace(client, prefix).meta
    r: Any = client
    pipe = r.pipeline(transaction=True)
    pipe.hdel(meta, _LEN, _AGE)
    args = retention.script_args()
    fields = {k: v for k, v in zip((_LEN, _AGE), args, strict=True) if v != ""}
    if fields:
        pipe.hset(meta, mapping=fields)
    pipe.execute()


def apply_feed_retention(client: Redis, prefix: str, retention: FeedRetention | None = None) -> dict[str, int]:
    """Trim every feed of the deployment, checkpoint and store ones: below what every group
    acknowledged, and a feed with no group to `retention` (default: the stored policy).

    Returns:
        The entries removed per feed key (feeds with none removed are left out).

    Raises:
        ConfigurationError: no deployment under `prefix`.
    """
    keyspace = _keyspace(client, prefix)
    policy = feed_retention(client, prefix) if retention is None else retention
    feeds = [keyspace.feed(p) for p in range(keyspace.partitions)]
    feeds += [keyspace.store(str(p)).feed for p in range(keyspace.partitions)]
    r: Any = client
    pipe = r.pipeline(transaction=False)
    pipe.execute_command("SCRIPT", "LOAD", TRIM.source)
    for feed in feeds:
        pipe.execute_command(*TRIM.evalsha_args([feed], policy.script_args()))
    replies = pipe.execute()[1:]
    return {feed: int(reply[0]) for feed, reply in zip(feeds, replies, strict=True) if int(reply[0])}
