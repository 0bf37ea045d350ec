"""Search by meaning, without I/O: the requests of a ``search(query=...)`` and how their replies
become one page.

A page follows LangGraph's semantics: the items with embeddings, nearest first (scored), then
the items without one (``index=False``, or no text at the index's paths), most recently updated
first, unscored; ``offset`` and ``limit`` cut that one sequence, and every filter condition
holds for every item of it. With text fields, the scored part is the fusion of the vector and
the BM25 rankings (`streamsaver.store.hybrid`).

The first round trip asks for the page's reach (``offset + limit``) of nearest items: a KNN whose
pre-filter is the namespace prefix and the equality terms. A range condition (``$gt`` ...) is
not an indexed field, so it applies to the KNN's candidates: the KNN then takes ten times the
reach, and the same round trip counts the items the pre-filter keeps. Most pages are full after
it. A short page means one of two things, told apart exactly: the KNN ran out of candidates
(every item with an embedding is in it: the items without one follow), or the ranges rejected
too many of its candidates (the KNN runs again over every item the pre-filter keeps, so no
item that passes them is missed). Either way one more round trip finishes the page, so pages
are never short while matching items remain.

A pre-filter not known to be selective is first tried as a bare KNN whose candidates the filter
checks (`streamsaver.store.postfilter`): its full page is exact; a short one hands over to the
pre-filtered plan above, in the next round trip.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.store.base import SearchItem, SearchOp

from streamsaver.store.hybrid import TEXT_SCORER, fuse
from streamsaver.store.postfilter import POSTFILTER_WIDENING
from streamsaver.store.queries import Command, page_request, query_terms, search_items

__all__ = ["KNN_WIDENING", "KnnSearch"]

KNN_WIDENING = 10
"""With a range condition, the first KNN takes this many times the page's reach in candidates."""
FUSION_DEPTH = 2
"""A hybrid search fuses rankings this many times the page's reach deep (at least 10)."""


def _count(reply: Any) -> int:
    """The total of an ``FT.SEARCH ... LIMIT 0 0`` reply (RESP2 or RESP3)."""
    if isinstance(reply, dict):
        return int(reply[b"total_results"])
    return int(reply[0])


def _rows_in(reply: Any) -> int:
    """How many rows an ``FT.AGGREGATE`` reply holds (RESP2 or RESP3), without reading them."""
    return len(reply[b"results"]) if isinstance(reply, dict) else len(reply) - 1


@dataclass(frozen=True)
class KnnSearch:
    """One ``search(query=...)`` op against the index `index`, with its query vector `vector`
    and, for a hybrid search, its full-text clause `text` (`streamsaver.store.hybrid.text_query`);
    `serde` decodes the values (`streamsaver.store.values`)."""

    index: str
    op: SearchOp
    vector: bytes
    text: str | None = None
    serde: SerializerProtocol | None = None
    fill: bool = True
    """Whether a short page is filled with the items without embeddings (not on a cluster)."""
    postfilter: Command | None = None
    """The clauses that check a bare KNN's candidates (`streamsaver.store.postfilter`); None:
    the KNN's pre-filter is the namespace prefix and the equality terms."""

    @property
    def reach(self) -> int:
        return self.op.offset + self.op.limit

    @property
    def _rows(self) -> int:
        """How many of each ranking the page needs: its reach, or the fusion's depth."""
        return self.reach if self.text is None else max(self.reach * FUSION_DEPTH, 10)

    @property
    def _ranged(self) -> bool:
        return bool(query_terms(self.op)[1])

    def _knn(self, candidates: int) -> Command:
        """The `candidates` nearest items the pre-filter keeps, the ranges applied to them, the
        first rows that pass, nearest first (the item's stem breaking ties)."""
        query, ranges = query_terms(self.op)
        knn = f"=>[KNN {max(candidates, 1)} @e $vec AS dist]"
        body = (query if query == "*" else f"({query})") + knn
        return page_request(self.index, body, ranges, ["@dist", "ASC", "@id", "ASC"], 0, self._rows,
                            ["PARAMS", 2, "vec", self.vector])

    def _ranked(self, text: str) -> Command:
        """The items the pre-filter and ranges keep that match `text`, best BM25 first."""
        query, ranges = query_terms(self.op)
        body = text if query == "*" else f"({query}) {text}"
        return page_request(self.index, body, ranges, ["@__score", "DESC", "@id", "ASC"], 0, self._rows, [],
                            before=["SCORER", TEXT_SCORER, "ADDSCORES"])

    def _unscored(self, count: int) -> Command:
        """The first `count` items without embeddings that match, most recently updated first."""
        query, ranges = query_terms(self.op)
        missing = ["LOAD", 3, "$.i.e", "AS", "ev", "FILTER", "!exists(@ev)"]
        return page_request(self.index, query, ranges, ["@u", "DESC", "@id", "ASC"], 0, count, [], before=missing)

    def prefiltered(self) -> KnnSearch:
        """This search with the KNN's pre-filter (the plan a short bare KNN hands over to)."""
        return replace(self, postfilter=None)

    def _bare(self, clauses: Command) -> Command:
        """A bare KNN of `POSTFILTER_WIDENING` times the rows needed, its candidates checked by
        `clauses`, the first rows that pass, nearest first."""
        knn = f"*=>[KNN {self._rows * POSTFILTER_WIDENING} @e $vec AS dist]"
        return page_request(self.index, knn, [], ["@dist", "ASC", "@id", "ASC"], 0, self._rows,
                            ["PARAMS", 2, "vec", self.vector], before=clauses)

    def first(self) -> list[Command]:
        """The first round trip: with ranges, the count of the pre-filter's items; the KNN (or
        the bare KNN whose candidates are checked); for a hybrid search, the text ranking."""
        steps: list[Command] = []
        if self.postfilter is not None:
            steps.append(self._bare(self.postfilter))
            return steps if self.text is None else [*steps, self._ranked(self.text)]
        if self._ranged:
            steps.append(["FT.SEARCH", self.index, query_terms(self.op)[0], "LIMIT", 0, 0, "DIALECT", 2, "TIMEOUT", 0])
        steps.append(self._knn(self._rows * (KNN_WIDENING if self._ranged else 1)))
        if self.text is not None:
            steps.append(self._ranked(self.text))
        return steps

    def _widened(self, first: Sequence[Any]) -> bool:
        """Whether the next round trip runs the KNN again over every item the pre-filter keeps:
        the ranges left fewer than the rows needed of its candidates, and more items remain."""
        return self._ranged and _rows_in(first[1]) < self._rows and _count(first[0]) > self._rows * KNN_WIDENING

    def _filled(self, first: Sequence[Any]) -> bool:
        """Whether the next round trip asks for the items without embeddings (the page is short)."""
        return self.fill and len(self._scored(first, [], None)) < self.reach

    def knn_items(self, first: Sequence[Any], more: Sequence[Any], score: Callable[[float], float] | None) -> list[
            SearchItem]:
        """The vector ranking: the first rows the pre-filter and ranges keep, nearest first."""
        return search_items(more[0] if more and self._widened(first) else first[int(self._ranged)], score, self.serde)

    def _scored(self, first: Sequence[Any], more: Sequence[Any], score: Callable[[float], float] | None) -> list[
            SearchItem]:
        knn = self.knn_items(first, more, score)
        if self.text is None:
            return knn
        return fuse([knn, search_items(first[-1], None, self.serde)])

    def follow_up(self, rounds: Sequence[Sequence[Any]]) -> list[Command]:
        """What the next round trip sends after the `rounds` of replies so far (none: the page
        is whole). A bare KNN that came back with fewer rows than asked hands over to the
        pre-filtered plan (whose first round trip follows); that plan takes at most one more."""
        if self.postfilter is not None:
            if len(rounds) == 1:
                knn = search_items(rounds[0][0])
                return [] if self.op.limit == 0 or len(knn) >= self._rows else self.prefiltered().first()
            return self.prefiltered().follow_up(rounds[1:])
        if len(rounds) > 1:
            return []
        first = rounds[0]
        if self.op.limit == 0:
            return []
        steps: list[Command] = [self._knn(_count(first[0]))] if self._widened(first) else []
        return [*steps, self._unscored(self.reach)] if self._filled(first) else steps

    def handed_over(self, rounds: Sequence[Sequence[Any]]) -> bool:
        """Whether a bare KNN's short page handed over to the pre-filtered plan."""
        return self.postfilter is not None and len(rounds) > 1

    def page(self, rounds: Sequence[Sequence[Any]], score: Callable[[float], float]) -> list[SearchItem]:
        """The page from the replies of every round trip (`first`, then each `follow_up`)."""
        return self.scored(rounds, score, with_unscored=True)[self.op.offset : self.reach]

    def scored(self, rounds: Sequence[Sequence[Any]], score: Callable[[float], float],
               with_unscored: bool = False) -> list[SearchItem]:
        """The scored items of the search from the replies of every round trip, before the page
        is cut (`with_unscored`: the items without embeddings after them, when they were asked)."""
        if self.handed_over(rounds):
            return self.prefiltered().scored(rounds[1:], score, with_unscored)
        first, more = rounds[0], (rounds[1] if len(rounds) > 1 else [])
        scored = self._scored(first, more, score)
        if not (with_unscored and more and self._filled(first)):
            return scored
        seen = {(tuple(item.namespace), item.key) for item in scored}
        return [*scored, *(item for item in search_items(more[-1], None, self.serde)
                           if (tuple(item.namespace), item.key) not in seen)]
