"""Conditions a cluster's queries cannot test, checked on each candidate's own document, as a
program.

On one server a range condition (``$gt $gte $lt $lte``) is a JSONPath the query loads per row,
and "has no embedding" a ``LOAD`` of ``$.i.e`` (`streamsaver.store.queries`,
`streamsaver.store.knn`). On a cluster a query loads nothing of the documents whose keys hash
to another slot than the index it names (RediSearch opens the keys within the command's slot:
each primary's index is named with one hash tag, and the items of the 16 partitions it holds
carry 16 others), so there the rows carry only their sort fields. A `Checked` ranking runs in
rounds instead:

1. the candidates, in the ranking's order, from every primary (merged): the rows the namespace
   prefix and the equality terms keep (newest first; for a ``query``, their KNN, or their BM25
   ranking), ``CHECK_WIDENING`` times the rows wanted at first;
2. each new candidate checked on its own document, pipelined: a range is ``JSON.GET key
   $[?(...)].k`` (the JSONPath RedisJSON evaluates on one server, so the same items pass), no
   embedding is ``JSON.GET key $.i.e[0][0]`` answering ``[]``;
3. while fewer candidates passed than wanted and the candidates did not run out, the next round
   asks for four times as many.

Every candidate that passes and is within the rows wanted is found, in order: pages are never
short. `ranged_search` is a search without a ``query`` with range conditions;
`streamsaver.store.cluster_search` ranks by meaning (and text) with them, and fills a short
page with the items without embeddings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.store.base import SearchItem, SearchOp

from streamsaver.log.program import Call, Program
from streamsaver.store.core import StoreCore
from streamsaver.store.fanout import rows_of, with_documents
from streamsaver.store.queries import Command, page_request, query_terms, search_items

__all__ = ["CHECK_WIDENING", "Checked", "Row", "documents", "first_passing", "newest", "ranged_search", "reply_of",
           "stem_of"]

CHECK_WIDENING = 4
"""The first round checks this many times the rows wanted in candidates (each next round four
times the last)."""
_NONE = (None, b"[]", "[]")
"""What ``JSON.GET`` of a JSONPath answers when nothing matches (None: the document is gone)."""

Row = dict[bytes, Any]


@dataclass(frozen=True)
class Checked:
    """A ranking whose candidates a cluster checks on their documents: `rows` makes the page
    query of its first `count` candidates; a candidate passes when its document holds a match
    of the range JSONPath `ranges` (None: no range) and, with `unembedded`, no embedding."""

    rows: Callable[[int], Command]
    ranges: str | None
    unembedded: bool = False

    def checks(self, key: str) -> list[Command]:
        """What checking the document `key` sends."""
        found: list[Command] = [["JSON.GET", key, self.ranges]] if self.ranges else []
        return [*found, ["JSON.GET", key, "$.i.e[0][0]"]] if self.unembedded else found

    def passes(self, replies: Sequence[Any]) -> bool:
        """Whether a candidate passes, from the replies to its `checks`."""
        ranged = replies[0] not in _NONE if self.ranges else True
        return ranged and (not self.unembedded or (replies[-1] is not None and replies[-1] in _NONE))


def range_path(op: SearchOp) -> str | None:
    """The JSONPath that matches a document holding every range condition of `op` (None: none)."""
    ranges = query_terms(op)[1]
    return f"$[?({' && '.join(ranges)})].k" if ranges else None


def newest(core: StoreCore, op: SearchOp) -> Callable[[int], Command]:
    """The page query of the first `count` items `op`'s prefix and equality terms keep, newest first."""
    query = query_terms(op)[0]
    return lambda count: page_request(core.index, query, [], ["@u", "DESC", "@id", "ASC"], 0, count, [])


def stem_of(row: Row) -> str:
    """The stem of an item's row (its ``id``)."""
    value = row[b"id"]
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else str(value)


def first_passing(core: StoreCore, ranking: Checked, want: int, decided: dict[str, bool] | None = None) -> Program[
        list[Row]]:
    """The first `want` candidates of `ranking` that pass (fewer when they run out), in its
    order; `decided` holds candidates already known to pass or not (checked ones are added)."""
    passed = {} if decided is None else decided
    count = max(want * CHECK_WIDENING, 10)
    while True:
        command = ranking.rows(count)
        rows = list(rows_of(core.gather([command], (yield Call(core.fan([command]), core.load_scripts)))[0]))
        new = list(dict.fromkeys(stem for row in rows if (stem := stem_of(row)) not in passed))
        if new:
            checks = [ranking.checks(core.item_key(stem)) for stem in new]
            replies = iter((yield Call([c for group in checks for c in group], core.load_scripts)))
            passed.update((stem, ranking.passes([next(replies) for _ in group])) for stem, group in zip(
                new, checks, strict=True))
        kept = [row for row in rows if passed[stem_of(row)]]
        if len(kept) >= want or len(rows) < count:
            return kept[:want]
        count *= 4


def reply_of(rows: Sequence[Row], found: Mapping[str, Any]) -> Any:
    """A merged reply of `rows`, each with its document from `found` (by stem; rows whose
    document is gone are left out)."""
    reply = [len(rows), *([name for pair in row.items() for name in pair] for row in rows)]
    return with_documents(reply, dict(found)) if rows else reply


def documents(core: StoreCore, rows: Sequence[Row]) -> Program[dict[str, Any]]:
    """The documents of `rows`, by stem, read by key in one round trip (none for no rows)."""
    stems = list(dict.fromkeys(stem_of(row) for row in rows))
    if not stems:
        return {}
    found = yield Call([["JSON.GET", core.item_key(stem)] for stem in stems], core.load_scripts)
    return dict(zip(stems, found, strict=True))


def ranged_search(core: StoreCore, op: SearchOp) -> Program[tuple[list[SearchItem], Any]]:
    """The page of `op` (a search without a ``query``, with range conditions) on a cluster, and
    its reply with the page's documents (what a refreshing search reads TTLs from)."""
    kept = yield from first_passing(core, Checked(newest(core, op), range_path(op)), op.offset + op.limit)
    page = kept[op.offset :]
    reply = reply_of(page, (yield from documents(core, page)))
    return search_items(reply, None, core.serde), reply
