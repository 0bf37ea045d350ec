"""Store migration: copy every item of a langgraph-checkpoint-redis ``RedisStore`` into a
`StreamStore`, and check each copy.

Reading the items: RedisStore's public reads cannot enumerate a store (0.5.2: ``list_namespaces``
sees only the first ten documents of its index, a ``batch`` of gets returns at most ten items
per namespace, ``search`` cannot page past 10,000 results, and a namespace is matched by its
words, not label by label). So the item documents are found with ``SCAN`` over
``<store_prefix>:*`` and read whole (``JSON.GET``, a pipeline per page), and each is turned into
an `Item` by the store's own row reader with its own value deserializer, as its ``get`` does.

Copying: each item is ``put`` under its namespace and key (embedded by the target's index
configuration, if it has one), with the time it has left to live (the source key's ``PTTL``)
as its ``ttl``. ``created_at`` and ``updated_at`` become the time of the copy: a store's put
does not take them. **Resumable:** an item the target already holds with an equal value is
not put again, so a re-run continues; every item is read back and compared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import BaseStore, GetOp, Item, PutOp

from streamsaver.ops.migrate_sources import import_optional

__all__ = ["StoreMigrationReport", "migrate_items", "open_redis_store", "redis_store_items"]

PAGE = 200


@dataclass
class StoreMigrationReport:
    """What a store migration did. ``ok`` when every copy equals its source item."""

    items: int = 0
    copied: int = 0
    skipped: int = 0
    mismatches: list[tuple[tuple[str, ...], str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def as_dict(self) -> dict[str, Any]:
        return {
            "items": self.items, "copied": self.copied, "skipped": self.skipped, "ok": self.ok,
            "mismatches": [{"namespace": list(ns), "key": key} for ns, key in self.mismatches],
        }


@contextmanager
def open_redis_store(url: str, store_prefix: str = "store", vector_prefix: str = "store_vectors") -> Iterator[Any]:
    """A langgraph-checkpoint-redis ``RedisStore`` at `url`, closed on exit.

    Raises:
        ConfigurationError: langgraph-checkpoint-redis is not installed.
    """
    module = import_optional("redis", "langgraph.store.redis")
    with module.RedisStore.from_conn_string(url, store_prefix=store_prefix, vector_prefix=vector_prefix) as store:
        yield store


def redis_store_items(store: Any) -> Iterator[tuple[list[Item], list[int | None]]]:
    """The items of a ``RedisStore``, a page at a time: the items and the milliseconds each has
    left to live (None: no expiry)."""
    base = import_optional("redis", "langgraph.store.redis.base")
    client = store._redis
    keys: list[Any] = []
    for key in client.scan_iter(match=f"{store.store_prefix}:*", count=1000, _type="ReJSON-RL"):
        keys.append(key)
        if len(keys) == PAGE:
            yield _page(store, base, keys)
            keys = []
    if keys:
        yield _page(store, base, keys)


def _page(store: Any, base: Any, keys: list[Any]) -> tuple[list[Item], list[int | None]]:
    pipe = store._redis.pipeline(transaction=False)
    for key in keys:
        pipe.json().get(key)
        pipe.pttl(key)
    replies = pipe.execute()
    items, ttls = [], []
    for doc, pttl in zip(replies[::2], replies[1::2], strict=True):
        if not isinstance(doc, dict) or "prefix" not in doc:  # deleted meanwhile
            continue
        namespace = base._decode_ns(doc["prefix"])
        items.append(base._row_to_item(namespace, doc, deserialize_fn=store._deserialize_value))
        ttls.append(pttl if pttl > 0 else None)
    return items, ttls


def migrate_items(
    pages: Iterator[tuple[list[Item], list[int | None]]],
    target: BaseStore,
    on_page: Callable[[int], None] | None = None,
) -> StoreMigrationReport:
    """Put every item of `pages` the target lacks (or holds with another value) into `target`,
    then read each back and compare its value.

    Args:
        on_page: called with the number of items of each page done (for progress).
    """
    report = StoreMigrationReport()
    for items, ttls in pages:
        _copy_page(items, ttls, target, report)
        if on_page is not None:
            on_page(len(items))
    return report


def _items(results: Sequence[Any]) -> list[Item | None]:
    """The replies of a batch of gets (each an `Item` or None)."""
    return [r if isinstance(r, Item) else None for r in results]


def _copy_page(items: Sequence[Item], ttls: Sequence[int | None], target: BaseStore,
               report: StoreMigrationReport) -> None:
    gets = [GetOp(i.namespace, i.key, refresh_ttl=False) for i in items]
    existing = _items(target.batch(gets))
    puts = [
        PutOp(item.namespace, item.key, item.value, ttl=None if ttl is None else ttl / 60_000)
        for item, ttl, there in zip(items, ttls, existing, strict=True)
        if there is None or there.value != item.value
    ]
    if puts:
        target.batch(puts)
    report.items += len(items)
    report.copied += len(puts)
    report.skipped += len(items) - len(puts)
    for item, copy in zip(items, _items(target.batch(gets)), strict=True):
        if copy is None or copy.value != item.value:
            report.mismatches.append((item.namespace, item.key))
