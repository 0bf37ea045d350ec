"""The store's reads, without I/O: the RediSearch requests of `search`, and how their replies
become items (`list_namespaces` reads the namespace registry: `streamsaver.store.namespaces`).

A search is one ``FT.AGGREGATE``: the namespace prefix and the equality conditions (``$eq``,
``$in``, ``$ne``, plain values, nested objects) are TAG digests in the query; each range
condition (``$gt $gte $lt $lte``) loads its JSON path and is a ``FILTER``; then the rows are
sorted (newest update first, the item's stem breaking ties), paged (``LIMIT``) and only then
their documents loaded: every condition applies before the page is cut, so a page is never short.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import orjson
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.store.base import Item, SearchItem, SearchOp

from projectors.store import field_tag, namespace_tag
from streamsaver.store.validation import RANGE_OPERATORS
from streamsaver.store.values import decoded, holds_encoded

__all__ = [
    "conditions", "item_of", "page_request", "query_terms", "search_items", "search_request",
]

Command = list[str | bytes | int]
Condition = tuple[tuple[str, ...], str, Any]
"""A filter condition: the path of keys into the value, the operator and its operand."""
_NOTHING = "@u:[-1 -1]"
"""A query no item matches (an empty ``$in``)."""


def conditions(filter: Mapping[str, Any], path: tuple[str, ...] = ()) -> Iterator[Condition]:
    """Every condition of a search filter: (path of keys, operator, operand); a plain value is ``$eq``."""
    for key, condition in filter.items():
        here = (*path, key)
        if isinstance(condition, Mapping) and any(str(op).startswith("$") for op in condition):
            for op, operand in condition.items():
                yield here, op, operand
        elif isinstance(condition, Mapping):
            yield from conditions(condition, here)
        else:
            yield here, "$eq", condition


def _value_path(path: Sequence[str]) -> str:
    """The JSONPath, relative to an item's ``i``, of the value at `path` (keys quoted)."""
    return "@.v" + "".join(f"[{orjson.dumps(key).decode()}]" for key in path)


def query_terms(op: SearchOp) -> tuple[str, list[str]]:
    """The query terms of a search (prefix and equality digests; ``*`` for none) and its range
    conditions as JSONPath comparisons."""
    terms = [f"@p:{{{namespace_tag(op.namespace_prefix)}}}"] if op.namespace_prefix else []
    ranges: list[str] = []
    for path, operator, operand in conditions(op.filter or {}):
        if operator == "$eq":
            terms.append(f"@f:{{{field_tag(path, operand)}}}")
        elif operator == "$ne":
            terms.append(f"-@f:{{{field_tag(path, operand)}}}")
        elif operator == "$in":
            tags = " | ".join(field_tag(path, value) for value in operand)
            terms.append(f"@f:{{{tags}}}" if tags else _NOTHING)
        else:
            ranges.append(f"{_value_path(path)} {RANGE_OPERATORS[operator]} {float(operand)!r}")
    return " ".join(terms) or "*", ranges


def _ranges(ranges: list[str]) -> Command:
    if not ranges:
        return []
    return ["LOAD", 3, f"$[?({' && '.join(ranges)})].k", "AS", "r", "FILTER", "exists(@r)"]


def page_request(
    index: str, query: str, ranges: list[str], sort: list[str], offset: int, limit: int, params: list[Any],
    before: Sequence[Any] = (),
) -> Command:
    """One ``FT.AGGREGATE`` page: the rows of `query` (then the clauses `before`, then the
    `ranges`), sorted by `sort` (two fields and their directions), cut by `offset` and `limit`,
    and only then their documents loaded (`search_items` reads the reply). ``TIMEOUT 0``: at
    RediSearch's own timeout (500 ms) a query cut short answers the rows it reached as if whole."""
    return [
        "FT.AGGREGATE", index, query, *before, *_ranges(ranges), "SORTBY", len(sort), *sort,
        "MAX", max(offset + limit, 1), "LIMIT", offset, limit, "LOAD", 3, "$", "AS", "doc", *params, "DIALECT", 2,
        "TIMEOUT", 0,
    ]


def search_request(index: str, op: SearchOp) -> Command:
    """The ``FT.AGGREGATE`` of a search: most recently updated first.

    The range conditions are one JSONPath filter (``$[?(@.v["age"] > 20 && ...)].k``): RedisJSON
    compares numbers as numbers and any other type as unequal, so an item whose value there is
    missing or not a number is left out instead of failing the query; its key loads only when
    every range holds, and ``FILTER exists(...)`` keeps those rows."""
    query, ranges = query_terms(op)
    return page_request(index, query, ranges, ["@u", "DESC", "@id", "ASC"], op.offset, op.limit, [])


def _datetime(micros: int) -> datetime:
    return datetime.fromtimestamp(micros / 1_000_000, tz=timezone.utc)


def item_of(document: bytes | str | None, serde: SerializerProtocol | None = None) -> Item | None:
    """The item an item document holds (None for none); with `serde`, its value's encoded parts
    loaded back (`streamsaver.store.values`)."""
    if document is None:
        return None
    doc = orjson.loads(document)
    if isinstance(doc, list):  # a JSONPath reply wraps the root
        doc = doc[0]
    body = doc["i"]
    value = decoded(body["v"], serde) if serde is not None and holds_encoded(document) else body["v"]
    return Item(
        value=value, key=body["k"], namespace=tuple(body["ns"]),
        created_at=_datetime(doc["c"]), updated_at=_datetime(body["u"]),
    )


def _rows(reply: Any) -> Iterator[dict[bytes, Any]]:
    """The rows of an ``FT.AGGREGATE`` reply, in RESP2 (a count, then flat rows) or RESP3."""
    if isinstance(reply, dict):
        for row in reply[b"results"]:
            yield row[b"extra_attributes"]
        return
    for row in reply[1:]:
        yield dict(zip(row[::2], row[1::2], strict=True))


def search_items(
    reply: Any, score: Callable[[float], float] | None = None, serde: SerializerProtocol | None = None
) -> list[SearchItem]:
    """The items of a search's reply, in its order; with `score`, each scored from its ``dist``;
    with `serde`, values decoded as `item_of` does."""
    found: list[SearchItem] = []
    for row in _rows(reply):
        item = item_of(row.get(b"doc"), serde)
        if item is not None:
            value = score(float(row[b"dist"])) if score is not None and b"dist" in row else None
            found.append(SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at, value))
    return found
