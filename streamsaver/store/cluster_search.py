"""Search by meaning on Redis Cluster where a query would have to load documents, as programs:
range conditions (also in a hybrid search) and the items without embeddings after a short page.

A cluster's queries load no documents (`streamsaver.store.cluster_ranges`), so what one server
tests in the query is tested there on each candidate's own document, in rounds of `Checked`
candidates. The page is what one server gives (`streamsaver.store.knn`):

* the vector ranking: the first rows (the page's reach; for a hybrid search the fusion's depth)
  of the KNN under the prefix and equality terms whose documents pass the ranges;
* for a hybrid search, the text ranking: the first as many of the BM25 ranking under the same
  terms that pass, fused with the vector ranking (`streamsaver.store.hybrid.fuse`). Each primary
  weighs words by its own statistics, so the text ranking may order differently than on one
  server (as without ranges);
* while those leave the page short: the items without embeddings, newest first, that pass (each
  candidate's ``$.i.e`` read by key; the items already ranked are known and not read).

Then the documents of every row are read by key in one round trip.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langgraph.store.base import SearchItem, SearchOp

from streamsaver.log.keys import item_stem
from streamsaver.log.program import Program
from streamsaver.store.cluster_ranges import (
    Checked,
    Row,
    documents,
    first_passing,
    newest,
    range_path,
    reply_of,
    stem_of,
)
from streamsaver.store.core import StoreCore
from streamsaver.store.hybrid import TEXT_SCORER, fuse
from streamsaver.store.knn import FUSION_DEPTH, KnnSearch
from streamsaver.store.queries import Command, page_request, query_terms, search_items

__all__ = ["filled_page", "ranged_page"]

Score = Callable[[float], float]


def _nearest(core: StoreCore, op: SearchOp, vector: bytes) -> Callable[[int], Command]:
    query = query_terms(op)[0]
    terms = query if query == "*" else f"({query})"
    return lambda count: page_request(core.index, f"{terms}=>[KNN {count} @e $vec AS dist]", [],
                                      ["@dist", "ASC", "@id", "ASC"], 0, count, ["PARAMS", 2, "vec", vector])


def _best_text(core: StoreCore, op: SearchOp, text: str) -> Callable[[int], Command]:
    query = query_terms(op)[0]
    body = text if query == "*" else f"({query}) {text}"
    return lambda count: page_request(core.index, body, [], ["@__score", "DESC", "@id", "ASC"], 0, count, [],
                                      before=["SCORER", TEXT_SCORER, "ADDSCORES"])


def _key(item: SearchItem) -> tuple[tuple[str, ...], str]:
    return tuple(item.namespace), item.key


def _page(op: SearchOp, scored: Sequence[SearchItem], unscored: Sequence[SearchItem]) -> list[SearchItem]:
    seen = {_key(item) for item in scored}
    return [*scored, *(item for item in unscored if _key(item) not in seen)][op.offset : op.offset + op.limit]


def _unscored(core: StoreCore, op: SearchOp, ranked: Sequence[str]) -> Program[list[Row]]:
    """The first items without embeddings that `op` keeps (the page's reach), newest first; the
    `ranked` stems are not among them."""
    ranking = Checked(newest(core, op), range_path(op), unembedded=True)
    return (yield from first_passing(core, ranking, op.offset + op.limit, dict.fromkeys(ranked, False)))


def ranged_page(core: StoreCore, op: SearchOp, vector: bytes, text: str | None, score: Score) -> Program[
        tuple[list[SearchItem], Any]]:
    """The page of `op` (a search by meaning with range conditions; `text` its full-text clause
    when hybrid) on a cluster, and a reply holding its rows' documents (what a refreshing search
    reads TTLs from)."""
    if op.limit == 0:
        return [], []
    reach = op.offset + op.limit
    depth = reach if text is None else max(reach * FUSION_DEPTH, 10)
    ranges = range_path(op)
    passed: dict[str, bool] = {}  # the ranges hold or not for an item, whichever ranking it is in
    nearest = yield from first_passing(core, Checked(_nearest(core, op, vector), ranges), depth, passed)
    best = (yield from first_passing(core, Checked(_best_text(core, op, text), ranges), depth, passed)) if text else []
    ranked = [stem_of(row) for row in [*nearest, *best]]
    plain = (yield from _unscored(core, op, ranked)) if len(set(ranked)) < reach else []
    found = yield from documents(core, [*nearest, *best, *plain])
    replies = [reply_of(rows, found) for rows in (nearest, best, plain)]
    vectors = search_items(replies[0], score, core.serde)
    scored = vectors if text is None else fuse([vectors, search_items(replies[1], None, core.serde)])
    return _page(op, scored, search_items(replies[2], None, core.serde)), replies


def filled_page(core: StoreCore, search: KnnSearch, rounds: Sequence[Sequence[Any]], score: Score) -> Program[
        tuple[list[SearchItem], Any] | None]:
    """The page of a search by meaning without ranges on a cluster whose scored items (from
    its `rounds` of replies) leave it short, filled with the items without embeddings, and the
    reply of those; None when the page is whole."""
    op = search.op
    scored = search.scored(rounds, score)
    if op.limit == 0 or len(scored) >= op.offset + op.limit:
        return None
    plain = yield from _unscored(core, op, [item_stem(tuple(item.namespace), item.key) for item in scored])
    reply = reply_of(plain, (yield from documents(core, plain)))
    return _page(op, scored, search_items(reply, None, core.serde)), reply
