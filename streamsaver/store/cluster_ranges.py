"""Range conditions (``$gt $gte $lt $lte``) on Redis Cluster, as a program.

On one server a range is a JSONPath the query loads per row (`streamsaver.store.queries`). On a
cluster a query loads nothing of the documents whose keys hash to another slot than the index
it names (RediSearch opens the keys within the command's slot: each primary's index is named with
one hash tag, and the items of the 16 partitions it holds carry 16 others), so there the rows
carry only their sort fields. A ranged search there runs in rounds instead:

1. the candidates, in the search's order, from every primary (merged): the rows the namespace
   prefix and the equality terms keep (for a ``query``, its KNN over them), ``CHECK_WIDENING``
   times the page's reach at first;
2. each new candidate's range test on its own document (``JSON.GET key $[?(...)].k``: the same
   JSONPath RedisJSON evaluates on one server, so the same items pass), pipelined;
3. while fewer candidates passed than the page's reach and the candidates did not run out, the
   next round asks for four times as many; then the page's documents are read by key.

Every item that passes and is in the page's reach is found, in order: pages are never short.
A hybrid (text-ranked) search with a range condition stays refused on a cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langgraph.store.base import SearchItem, SearchOp

from streamsaver.log.program import Call, Program
from streamsaver.store.core import StoreCore
from streamsaver.store.fanout import rows_of, with_documents
from streamsaver.store.queries import Command, page_request, query_terms, search_items

__all__ = ["CHECK_WIDENING", "ranged_search"]

CHECK_WIDENING = 4
"""The first round checks this many times the page's reach in candidates (each next round four
times the last)."""


def _candidates(core: StoreCore, op: SearchOp, vector: bytes | None, count: int) -> Command:
    query = query_terms(op)[0]
    if vector is None:
        return page_request(core.index, query, [], ["@u", "DESC", "@id", "ASC"], 0, count, [])
    body = (query if query == "*" else f"({query})") + f"=>[KNN {count} @e $vec AS dist]"
    return page_request(core.index, body, [], ["@dist", "ASC", "@id", "ASC"], 0, count, ["PARAMS", 2, "vec", vector])


def _stem(row: dict[bytes, Any]) -> str:
    value = row[b"id"]
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else str(value)


def ranged_search(core: StoreCore, op: SearchOp, vector: bytes | None,
                  score: Callable[[float], float] | None) -> Program[tuple[list[SearchItem], Any]]:
    """The page of `op` (a search with range conditions; with `vector`, by meaning, each item
    scored by `score`) on a cluster, and its reply with the page's documents (what a refreshing
    search reads TTLs from)."""
    reach = op.offset + op.limit
    path = f"$[?({' && '.join(query_terms(op)[1])})].k"
    passed: dict[str, bool] = {}
    count = max(reach * CHECK_WIDENING, 10)
    while True:
        command = _candidates(core, op, vector, count)
        rows = list(rows_of(core.gather([command], (yield Call(core.fan([command]), core.load_scripts)))[0]))
        new = [_stem(row) for row in rows if _stem(row) not in passed]
        if new:
            tests = yield Call([["JSON.GET", core.item_key(stem), path] for stem in new], core.load_scripts)
            passed.update((stem, reply not in (None, b"[]", "[]")) for stem, reply in zip(new, tests, strict=True))
        kept = [row for row in rows if passed[_stem(row)]]
        if len(kept) >= reach or len(rows) < count:
            break
        count *= 4
    page = kept[op.offset : reach]
    reply = _reply(page)
    if page:
        documents = yield Call([["JSON.GET", core.item_key(_stem(row))] for row in page], core.load_scripts)
        reply = with_documents(reply, dict(zip([_stem(row) for row in page], documents, strict=True)))
    return search_items(reply, score, core.serde), reply


def _reply(rows: Sequence[dict[bytes, Any]]) -> list[Any]:
    return [len(rows), *([name for pair in row.items() for name in pair] for row in rows)]
