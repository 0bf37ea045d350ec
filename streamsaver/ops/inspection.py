"""Read-only looks at a deployment: a thread's history, totals, and the live event feed.

Everything here reads the logs and feeds directly (the truth), never the views, so it also
works while a view is being rebuilt.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from redis import Redis

from projectors.domain import CHECKPOINTS
from streamsaver.drivers.cluster import is_cluster
from streamsaver.errors import InvalidInputError
from streamsaver.log.deployment import keyspace_of
from streamsaver.log.domain import Domain
from streamsaver.log.events import CheckpointSaved, WritesSaved
from streamsaver.log.keys import PROJECTOR_GROUP, Keyspace, ViewName, projector_group
from streamsaver.log.stored import from_fields
from streamsaver.ops.preview import entry_time, last_message

__all__ = ["DeploymentStats", "HistoryRow", "PartitionHealth", "deployment_keyspace", "deployment_stats",
           "deployment_views", "feed_events", "group_health", "thread_history"]


def deployment_keyspace(client: Redis, prefix: str) -> Keyspace:
    """The keyspace of the deployment under `prefix`.

    Raises:
        ConfigurationError: nothing was ever set up under `prefix`.
    """
    return keyspace_of(prefix, client.hget(Keyspace(prefix).meta, "partitions"))


def deployment_views(client: Redis, prefix: str, domain: Domain = CHECKPOINTS) -> tuple[ViewName, ...]:
    """The views of `domain` the deployment under `prefix` keeps: those whose index a saver or a
    projector worker created (of any schema version, on any primary). All when none has one yet."""
    any_client: Any = client
    nodes = any_client.get_primaries() if is_cluster(client) else [None]
    replies = [any_client.execute_command("FT._LIST", **({"target_nodes": n} if n else {})) for n in nodes]
    names = {i.decode() if isinstance(i, bytes) else str(i) for reply in replies for i in reply}
    views, keyspace = domain.view_names, Keyspace(prefix)
    kept = tuple(v for v in views if any(n.startswith(keyspace.index_stem(v)) for n in names))
    return kept or views


@dataclass
class HistoryRow:
    """One checkpoint of a thread, as its log tells it."""

    entry_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    step: Any
    source: Any
    new_channels: list[str]
    bytes: int
    writes: list[str] = field(default_factory=list)
    """``task:channel`` of the writes saved against this checkpoint."""
    time: str = ""
    """When the entry was appended (UTC), from its id."""
    preview: str | None = None
    """The last message of its ``messages`` value, if it stored one (`streamsaver.ops.preview`)."""


def _size(fields: dict[bytes, bytes]) -> int:
    return sum(len(k) + len(v) for k, v in fields.items())


def thread_history(client: Redis, prefix: str, thread_id: str) -> list[HistoryRow]:
    """Every checkpoint of a thread in log order, with the writes saved against each.

    Raises:
        InvalidInputError: the thread has no log.
    """
    log = deployment_keyspace(client, prefix).thread(thread_id).log
    xrange: Callable[..., Any] = client.xrange
    entries: list[tuple[bytes, dict[bytes, bytes]]] = xrange(log)
    if not entries:
        raise InvalidInputError(f"thread {thread_id!r} has no log under prefix {prefix!r}")
    rows: dict[tuple[str, str], HistoryRow] = {}
    early_writes: dict[tuple[str, str], list[str]] = {}
    for raw_id, fields in entries:
        event = from_fields(fields, raw_id.decode())
        if isinstance(event, CheckpointSaved):
            key = (event.checkpoint_ns, event.checkpoint_id)
            rows[key] = HistoryRow(
                raw_id.decode(), event.checkpoint_ns, event.checkpoint_id, event.parent_checkpoint_id,
                event.metadata.get("step"), event.metadata.get("source"),
                [cv.channel for cv in event.values], _size(fields), early_writes.pop(key, []),
                entry_time(raw_id.decode()),
                next((last_message(cv.blob) for cv in event.values if cv.channel == "messages"), None),
            )
        elif isinstance(event, WritesSaved):
            key = (event.checkpoint_ns, event.checkpoint_id)
            names = [f"{event.task_id[:8]}:{w.channel}" for w in event.writes]
            (rows[key].writes if key in rows else early_writes.setdefault(key, [])).extend(names)
    return list(rows.values())


@dataclass(frozen=True)
class PartitionHealth:
    """One consumer group on one partition feed."""

    group: str
    partition: int
    pending: int
    lag: int | None
    """Entries not delivered yet (None when Redis cannot tell, after deletions in the feed)."""
    last_delivered: str
    consumers: int
    owner: str | None
    """The consumer holding the partition's lease (a subscriber or projector worker), if any."""


def _subscriber_keys(group: str, domain: Domain) -> str:
    """The name a subscriber group's keys are kept under (a store group's: ``store:<group>``)."""
    return group if domain is CHECKPOINTS else f"{domain.name}:{group}"


def _lease_of(keyspace: Keyspace, partition: int, group: str, domain: Domain) -> str:
    """The lease key of a projector group (`streamsaver.log.keys.projector_group`) or a
    subscriber group."""
    view = group.removeprefix(PROJECTOR_GROUP)
    if view in domain.view_names and group == projector_group(view):
        return keyspace.lease(partition, view)
    return keyspace.subscriber_lease(partition, _subscriber_keys(group, domain))


def group_health(
    client: Redis, prefix: str, group: str | None = None, domain: Domain = CHECKPOINTS
) -> list[PartitionHealth]:
    """Every consumer group (or only `group`) on every partition feed, by group then partition;
    projector groups are those of `domain`'s views.

    Raises:
        ConfigurationError: no deployment under `prefix`.
    """
    keyspace = deployment_keyspace(client, prefix)
    r: Any = client  # redis-py's stubs type these replies loosely; their shapes are fixed
    pipe = r.pipeline(transaction=False)
    for p in range(keyspace.partitions):
        pipe.xinfo_groups(domain.feed_key(keyspace, p))
    replies = pipe.execute(raise_on_error=False)
    rows: list[tuple[int, dict[str, Any]]] = [
        (p, info)
        for p, groups in enumerate(replies)
        for info in (groups if isinstance(groups, list) else [])
        if group is None or _text(info["name"]) == group
    ]
    owners = r.mget([_lease_of(keyspace, p, _text(i["name"]), domain) for p, i in rows]) if rows else []
    health = [PartitionHealth(_text(i["name"]), p, int(i.get("pending") or 0),
                              None if i.get("lag") is None else int(i["lag"]), _text(i["last-delivered-id"]),
                              int(i.get("consumers") or 0), None if o is None else _text(o))
              for (p, i), o in zip(rows, owners, strict=True)]
    return sorted(health, key=lambda h: (h.group, h.partition))


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


@dataclass
class DeploymentStats:
    """Totals of a deployment and the state of every consumer group on its feeds."""

    threads: int = 0
    events: int = 0
    log_bytes: int = 0
    feed_entries: int = 0
    groups: dict[str, dict[str, int]] = field(default_factory=dict)
    """group name -> {"pending": ..., "lag": ..., "dead_letters": ...} summed over partitions
    (dead letters: of a subscriber group)."""
    partitions: list[PartitionHealth] = field(default_factory=list)
    """Every group on every partition feed: pending, lag, last delivered id, lease holder."""


def deployment_stats(
    client: Redis, prefix: str, *, progress: Callable[[int], None] | None = None, domain: Domain = CHECKPOINTS
) -> DeploymentStats:
    """Count `domain`'s logs (threads), events and log bytes (MEMORY USAGE); per consumer group,
    its pending entries and lag on each partition and summed, and a subscriber group's dead
    letters."""
    keyspace = deployment_keyspace(client, prefix)
    stats = DeploymentStats()
    for log in client.scan_iter(match=domain.logs_pattern(keyspace), count=1000, _type="stream"):
        stats.threads += 1
        stats.events += int(client.xlen(log))
        stats.log_bytes += int(client.memory_usage(log, samples=0) or 0)
        if progress is not None:
            progress(1)
    for partition in range(keyspace.partitions):
        stats.feed_entries += int(client.xlen(domain.feed_key(keyspace, partition)))
    stats.partitions = group_health(client, prefix, domain=domain)
    for row in stats.partitions:
        totals = stats.groups.setdefault(row.group, {"pending": 0, "lag": 0})
        totals["pending"] += row.pending
        totals["lag"] += row.lag or 0
    for name, totals in stats.groups.items():
        if not name.startswith(PROJECTOR_GROUP):
            totals["dead_letters"] = int(client.xlen(keyspace.subscriber_dead_letters(_subscriber_keys(name, domain))))
    return stats


def feed_events(
    client: Redis, prefix: str, *, block_ms: int = 1000, start: str = "$", domain: Domain = CHECKPOINTS
) -> Iterator[dict[str, str]]:
    """The pointers appended to every partition feed of `domain` from now on (`start` "$"), as
    they come.

    Yields dicts with ``partition``, ``feed_id`` and the pointer's fields (``id``, ``type``,
    ``thread``, and ``ns``, ``cid`` for a checkpoint, ``labels``, ``key`` for a store item);
    never ends on its own.
    """
    keyspace = deployment_keyspace(client, prefix)
    r: Any = client  # redis-py's stubs type these replies loosely; their shapes are fixed
    partition_of = {domain.feed_key(keyspace, p): str(p) for p in range(keyspace.partitions)}
    positions: dict[str, str] = dict.fromkeys(partition_of, start)
    if start == "$":
        for feed in positions:
            info = r.xinfo_stream(feed) if r.exists(feed) else None
            positions[feed] = info["last-generated-id"].decode() if info else "0-0"
    read = _cluster_reads(r, block_ms) if is_cluster(client) else lambda at: r.xread(at, block=block_ms) or []
    while True:
        for raw_feed, entries in read(positions):
            feed = raw_feed.decode()
            for raw_id, fields in entries:
                positions[feed] = raw_id.decode()
                pointer = {k.decode(): v.decode("utf-8", "replace") for k, v in fields.items()}
                yield {"partition": partition_of[feed], "feed_id": positions[feed], **pointer}


def _cluster_reads(r: Any, block_ms: int) -> Callable[[dict[str, str]], list[Any]]:
    """On Redis Cluster an XREAD names keys of one slot only: every feed is read (one pipeline,
    split by node), and an empty round waits a little before the next (at most `block_ms`)."""

    def read(positions: dict[str, str]) -> list[Any]:
        pipe = r.pipeline(transaction=False)
        for feed, at in positions.items():
            pipe.xread({feed: at}, count=1000)
        found = [stream for reply in pipe.execute() for stream in reply or []]
        if not found:
            time.sleep(min(block_ms, 100) / 1000)
        return found

    return read
