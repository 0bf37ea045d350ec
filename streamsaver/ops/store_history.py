"""The memory store's history as its partition logs tell it: who wrote which fact, when.

A store partition log (``P:slog:{pN}:N``) holds every `ItemPut`, `ItemDeleted` and
`StorePartitionErased` of the namespaces whose first label hashes to it, in append order. An
operator addresses a part of the store by a namespace prefix (labels matched whole, as the
store matches them: ``users.alice`` never shows ``users.alicea``); a prefix's items all live in
its first label's partition, so its history is one log. Reads the logs, never the items view.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from redis import Redis

from projectors.store_domain import STORE
from streamsaver.errors import InvalidInputError
from streamsaver.log.events import ItemDeleted, ItemPut
from streamsaver.ops.inspection import deployment_keyspace
from streamsaver.ops.preview import entry_time

__all__ = ["StoreRow", "store_history", "store_logs"]

PAGE = 1000
"""Log entries read per round trip."""


@dataclass
class StoreRow:
    """One event of a store partition log."""

    entry_id: str
    time: str
    """When the entry was appended (UTC), from its id."""
    partition: str
    op: str
    """The event's type: ``ItemPut``, ``ItemDeleted`` or ``StorePartitionErased``."""
    namespace: tuple[str, ...] | None
    key: str | None
    model: str = ""
    """The embedding model that computed the put's vectors ("" without vectors)."""
    dims: int = 0
    vectors: int = 0
    ttl_minutes: float | None = None
    """The put's time to live (None: it never expires)."""
    bytes: int = 0
    value: str = ""
    """The put's value as JSON (``--json``: whole; the table cuts it)."""
    writer: str = ""
    """Who wrote it: the writing store's ``writer=`` ("" for events logged before writers were)."""
    thread_id: str = ""
    """The LangGraph thread whose run wrote it ("" outside a run)."""
    checkpoint_ns: str = ""
    """The run's task namespace (``node:task_id``) that wrote it ("" outside a run)."""
    run_id: str = ""
    """The LangGraph run id, when the run's config named one."""


def store_logs(client: Redis, prefix: str, namespace: Sequence[str] = (), partition: int | None = None) -> list[str]:
    """The store partition logs holding `namespace`'s items: its first label's, or every
    partition's (in partition order) for the whole store; `partition`'s alone when given.

    Raises:
        InvalidInputError: a partition the deployment does not have.
    """
    keyspace = deployment_keyspace(client, prefix)
    if partition is not None:
        if not 0 <= partition < keyspace.partitions:
            raise InvalidInputError(f"the deployment has partitions 0..{keyspace.partitions - 1}, not {partition}")
        return [keyspace.store(str(partition)).log]
    if namespace:
        return [keyspace.store(keyspace.store_partition(namespace[0])).log]
    return [keyspace.store(str(p)).log for p in range(keyspace.partitions)]


def _entries(client: Redis, log: str) -> Iterator[tuple[bytes, dict[bytes, bytes]]]:
    start = "-"
    while True:
        xrange: Any = client.xrange
        page: list[tuple[bytes, dict[bytes, bytes]]] = xrange(log, start, "+", count=PAGE)
        yield from page
        if len(page) < PAGE:
            return
        start = "(" + page[-1][0].decode()


def _entries_backwards(client: Redis, log: str, first_page: int) -> Iterator[tuple[bytes, dict[bytes, bytes]]]:
    """`log`'s entries newest first, in pages growing from `first_page` to `PAGE` entries."""
    end, count = "+", min(first_page, PAGE)
    while True:
        xrevrange: Any = client.xrevrange
        page: list[tuple[bytes, dict[bytes, bytes]]] = xrevrange(log, end, "-", count=count)
        yield from page
        if len(page) < count:
            return
        end, count = "(" + page[-1][0].decode(), min(2 * count, PAGE)


def _row(raw_id: bytes, fields: dict[bytes, bytes]) -> StoreRow:
    entry_id = raw_id.decode()
    event = STORE.decode(fields, entry_id)
    row = StoreRow(entry_id, entry_time(entry_id), event.thread_id, event.TYPE, None, None,
                   bytes=sum(len(k) + len(v) for k, v in fields.items()))
    if isinstance(event, (ItemPut, ItemDeleted)):
        row.namespace, row.key, row.writer = event.namespace, event.key, event.writer
        if (run := event.run) is not None:
            row.thread_id, row.checkpoint_ns, row.run_id = run.thread_id, run.checkpoint_ns, run.run_id
    if isinstance(event, ItemPut):
        row.model, row.vectors = event.model, len(event.vectors)
        row.dims = len(event.vectors[0]) if event.vectors else 0
        row.ttl_minutes = event.ttl_ms / 60_000 if event.ttl_ms > 0 else None
        row.value = orjson.dumps(event.value, option=orjson.OPT_SORT_KEYS).decode()
    return row


def store_history(
    client: Redis, prefix: str, namespace: Sequence[str] = (), *, key: str | None = None,
    partition: int | None = None, limit: int | None = None,
) -> list[StoreRow]:
    """Every event of the store partition logs under `namespace` (a prefix of valid labels,
    matched whole, as the store matches them; empty: the whole store), in log order per
    partition, partitions in order; only those of item `key` when given. A partition's erasure
    (which names no item) is always listed. `partition`: that store partition's log only.
    `limit`: only the last `limit` of those rows, read from the end of the logs backwards (the
    last partition first), stopping once they are found.

    Raises:
        InvalidInputError: `key` without a namespace; a `partition` the deployment lacks; a
            `limit` below 1.
        ConfigurationError: no deployment under `prefix`.
    """
    labels = tuple(namespace)
    if key is not None and not labels:
        raise InvalidInputError("an item key needs its namespace (--namespace)")
    if limit is not None and limit < 1:
        raise InvalidInputError(f"limit is a count of at least 1, not {limit}")
    logs = store_logs(client, prefix, labels, partition)
    if limit is None:
        every = (_row(raw_id, fields) for log in logs for raw_id, fields in _entries(client, log))
        return [row for row in every if _shown(row, labels, key)]
    rows: list[StoreRow] = []
    for log in reversed(logs):
        for raw_id, fields in _entries_backwards(client, log, limit):
            if _shown(row := _row(raw_id, fields), labels, key):
                rows.append(row)
                if len(rows) == limit:
                    return rows[::-1]
    return rows[::-1]


def _shown(row: StoreRow, labels: tuple[str, ...], key: str | None) -> bool:
    return row.namespace is None or (row.namespace[: len(labels)] == labels and key in (None, row.key))
