"""A search that refreshes TTLs, without I/O: which items of its page get their TTL renewed.

LangGraph's ``BaseStore.search(..., refresh_ttl=None)`` renews the TTL of the items a search
returns when the call's ``refresh_ttl`` (or the store's ``refresh_on_read``) says so, as
PostgresStore does in its search statement (``UPDATE ... FROM search_results``), each with its
own TTL. Here it is one more round trip after the search, sent only when the page holds an item
that expires: the keys to renew are known only from the query's reply, and a script that ran
the query and renewed them would touch keys it does not declare (on a cluster, of every slot).
The renewal is ``store_get.lua`` with its refresh flag, one call per partition: it renews each
item that still exists and still expires with the TTL its document holds then, so an item
deleted, or put again without a TTL, since the query is left alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import orjson
from langgraph.store.base import Item, Op, Result, SearchOp

from streamsaver.log.keys import Keyspace, item_stem
from streamsaver.scripts import STORE_GET

__all__ = ["expiring", "refresh_calls"]

Command = list[str | bytes | int]


def _documents(reply: Any) -> Iterator[Any]:
    if isinstance(reply, dict):
        rows: Iterable[Any] = (row[b"extra_attributes"] for row in reply.get(b"results", []))
    elif isinstance(reply, list) and reply and isinstance(reply[0], int):
        rows = (dict(zip(row[::2], row[1::2], strict=True)) for row in reply[1:])
    else:
        return
    for row in rows:
        if isinstance(row, dict) and row.get(b"doc") is not None:
            yield row[b"doc"]


def expiring(replies: Iterable[Any]) -> set[str]:
    """The stems of the items whose documents in the query `replies` have a TTL."""
    stems: set[str] = set()
    for reply in replies:
        for document in _documents(reply):
            doc = orjson.loads(document)
            body = (doc[0] if isinstance(doc, list) else doc)["i"]
            if body.get("t", 0) > 0:
                stems.add(body["id"])
    return stems


def refresh_calls(keyspace: Keyspace, ops: Sequence[Op], results: Sequence[Result],
                  replies: Sequence[Iterable[Any]]) -> list[Command]:
    """The ``store_get.lua`` calls (one per partition) renewing the TTL of the expiring items on
    the pages of the searches among `ops` that refresh; `replies[n]` every query reply of op n."""
    keys: dict[str, list[str]] = {}
    for op, result, answers in zip(ops, results, replies, strict=True):
        if not (isinstance(op, SearchOp) and op.refresh_ttl and isinstance(result, list) and result):
            continue
        ttl = expiring(answers)
        for item in result:
            if isinstance(item, Item) and (stem := item_stem(tuple(item.namespace), item.key)) in ttl:
                log_id = keyspace.store_partition(item.namespace[0])
                keys.setdefault(log_id, []).append(keyspace.store(log_id).item(stem))
    return [STORE_GET.evalsha_args(sorted(set(group)), ["1"]) for group in keys.values()]
