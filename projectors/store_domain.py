"""The store domain, as the log core sees it: a log per store partition (``P:slog:{pN}:N``),
folded into one view, ``items`` (`projectors.store`).

The log core's append, apply (replay, the projector worker), setup (the index from the view's
schema) and erase work on it unchanged; its writes go through ``append_batch.lua`` (every
event of a partition in one atomic call; a lone put through ``store_put.lua``,
`streamsaver.store.put`), its reads through ``store_get.lua``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from projectors import store
from streamsaver.log.domain import Domain, HeldEntry, LogScripts, View
from streamsaver.log.events import Event, StorePartitionErased
from streamsaver.log.items import item_fields, item_from_fields, item_pointer
from streamsaver.log.keys import Keyspace, ViewName
from streamsaver.scripts import APPEND, APPEND_BATCH, APPLY, REWRITE, STORE_GET, STORE_NAMESPACES, STORE_PUT, TTL

__all__ = ["STORE", "with_vectors"]


def _read_item(keyspace: Keyspace, log_id: str, stem: str, _: str) -> list[str | bytes | int]:
    """The ``store_get.lua`` call reading one item (by its stem), without refreshing its TTL."""
    return STORE_GET.evalsha_args([keyspace.store(log_id).item(stem)], ["0"])


def _no_probe(event: Event, keyspace: Keyspace, views: Sequence[ViewName]) -> HeldEntry | None:
    """Store events are not recognised as repeats: a retried put writes the same item again."""
    return None


def _feed(keyspace: Keyspace, partition: int) -> str:
    return keyspace.store(str(partition)).feed


def _partition(log_id: str, partitions: int) -> int:
    """A store log's id is its partition's number (-1: not one)."""
    return int(log_id) if log_id.isdigit() and int(log_id) < partitions else -1


STORE = Domain(
    name="store",
    views=(View(store.VIEW, store.project, _read_item, store.FIELDS, documents="doc",
                 optional_fields=r"e|x\d+"),),
    held_entry=_no_probe,
    erase=StorePartitionErased,
    scripts=LogScripts(append=APPEND, apply=APPLY, rewrite=REWRITE, ttl=TTL, append_batch=APPEND_BATCH),
    decode=item_from_fields,
    log_family="slog",
    loads=(APPEND_BATCH, APPLY, STORE_GET, STORE_NAMESPACES, STORE_PUT),
    log_keys=Keyspace.store,
    positions_family="spos",
    encode=item_fields,
    pointer=item_pointer,
    feed_key=_feed,
    log_partition=_partition,
)
"""The store domain: a log per store partition, folded into the items view."""


def with_vectors(attrs: Mapping[str, Any], text: Sequence[Mapping[str, Any]] = ()) -> Domain:
    """The store domain whose index also holds the items' embeddings (`projectors.store.vector_field`)
    and the `text` fields a hybrid search ranks by BM25. Its events, projector and keys are
    `STORE`'s: only what setup creates differs."""
    [items] = STORE.views
    view = dataclasses.replace(items, index_fields=[*store.FIELDS, store.vector_field(attrs), *text])
    return dataclasses.replace(STORE, views=(view,))
