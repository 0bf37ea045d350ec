"""A search by meaning whose filter checks the KNN's candidates, without I/O: the plan for a
namespace prefix or filter that most items pass.

RediSearch runs a KNN with a pre-filter (``(@p:{...})=>[KNN ...]``) as a filtered KNN: for a
pre-filter that keeps most items that costs several times a bare KNN (at 100,000 items, FLAT,
64 dims: 11-12 ms against 3-5 ms for a prefix every item has). So while a pre-filter is not known
to be selective, the first round trip asks for a bare KNN of `POSTFILTER_WIDENING` times the
page's reach and filters its candidates in the same ``FT.AGGREGATE``: the namespace prefix on the
sortable escaped namespace ``n`` (label by label: ``n == "a.b"`` or ``n`` starting ``"a.b."``;
escaped labels hold no ``.`` nor ``"``), the equality conditions on the item's digests ``$.i.f``
(``contains``: each digest is 20 hex digits, so a match is a whole digest). A full page is exact
(an item that passes and is not among the candidates is farther than every candidate). A short
page proves nothing: the pre-filtered KNN runs, and `SelectivityMemory` remembers the search's
shape (`shape`: the prefix's depth, the filter's paths and operators) as selective, so the next
searches of that shape take the pre-filtered KNN at once (for a while, longer while it stays
so). A shape, not the exact pre-filter: one user's namespace, ``("users", "alice")``, says how
selective ``("users", "bob")`` is, and a search of a new user's memories does not pay the bare
KNN first.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from langgraph.store.base import SearchOp

from projectors.store import field_tag
from streamsaver.log.codec import escape
from streamsaver.store.queries import Command, conditions

__all__ = ["POSTFILTER_WIDENING", "SelectivityMemory", "candidate_filter", "shape"]

POSTFILTER_WIDENING = 10
"""A bare KNN takes this many times the page's reach in candidates."""
MAX_CANDIDATES = 1_000
"""A page whose bare KNN would take more candidates than this takes the pre-filtered KNN (each
candidate the equality terms check loads its digests)."""
RETRY_FIRST = 4
"""A shape whose bare KNN came back short takes the pre-filtered KNN this many times, then tries
the bare one again."""
RETRY_AFTER = 64
"""At most this many searches between two tries of the bare KNN for a selective shape (a
namespace that grows becomes worth it)."""
MEMORY_SIZE = 4096
"""Pre-filters remembered at most (then the memory starts over)."""


def _namespace(prefix: Sequence[str]) -> str:
    joined = ".".join(escape(label) for label in prefix)
    return f'(@n == "{joined}" || startswith(@n, "{joined}."))'


Shape = tuple[int, tuple[tuple[tuple[str, ...], str], ...]]


def shape(op: SearchOp) -> Shape:
    """What `SelectivityMemory` remembers a search by: its prefix's depth, and each filter
    condition's path and operator."""
    tested = sorted((path, operator) for path, operator, _ in conditions(op.filter or {}))
    return len(op.namespace_prefix), tuple(tested)


def candidate_filter(op: SearchOp) -> Command | None:
    """The clauses that keep the candidates of a bare KNN that `op`'s pre-filter would keep
    (none: `op` has range conditions or an empty ``$in``, which the pre-filtered plan handles, or
    a page too deep for `MAX_CANDIDATES`)."""
    if (op.offset + op.limit) * POSTFILTER_WIDENING > MAX_CANDIDATES:
        return None
    tests: list[str] = [_namespace(op.namespace_prefix)] if op.namespace_prefix else []
    digests: list[str] = []
    for path, operator, operand in conditions(op.filter or {}):
        if operator in ("$eq", "$ne"):
            found = f'contains(@f, "{field_tag(path, operand)}")'
            digests.append(f"{found} > 0" if operator == "$eq" else f"{found} == 0")
        elif operator == "$in" and operand:
            digests.append("(" + " + ".join(f'contains(@f, "{field_tag(path, v)}")' for v in operand) + ") > 0")
        else:
            return None
    clauses: Command = ["FILTER", " && ".join(tests)] if tests else []
    if digests:
        clauses += ["LOAD", 3, "$.i.f", "AS", "f", "FILTER", " && ".join(digests)]
    return clauses


class SelectivityMemory:
    """The search shapes whose bare KNN came back short: each takes the pre-filtered KNN for the
    next `RETRY_FIRST` searches, doubling with every further short bare KNN (at most
    `RETRY_AFTER`); a bare KNN that fills its page forgets the shape. One unlucky query (its
    nearest items all fail a filter most items pass) costs a few searches, a selective shape pays
    for a bare KNN once in `RETRY_AFTER` searches. Shared by the threads of one store."""

    def __init__(self) -> None:
        self._selective: dict[Shape, tuple[int, int]] = {}
        """shape -> (searches left before the bare KNN is tried again, short bare KNNs in a row)"""
        self._lock = threading.Lock()

    def __contains__(self, terms: object) -> bool:
        """Whether the shape `terms` is remembered as selective."""
        with self._lock:
            return any(known == terms and left > 0 for known, (left, _) in self._selective.items())

    def try_bare(self, terms: Shape) -> bool:
        """Whether a search of the shape `terms` tries a bare KNN first."""
        with self._lock:
            left, streak = self._selective.get(terms, (0, 0))
            if left <= 0:
                return True
            self._selective[terms] = (left - 1, streak)
            return False

    def selective(self, terms: Shape) -> None:
        """A bare KNN of the shape `terms` came back short: take the pre-filtered KNN for a while."""
        with self._lock:
            if len(self._selective) >= MEMORY_SIZE:
                self._selective.clear()
            streak = self._selective.get(terms, (0, 0))[1]
            self._selective[terms] = (min(RETRY_FIRST << streak, RETRY_AFTER), streak + 1)

    def filled(self, terms: Shape) -> None:
        """A bare KNN of the shape `terms` filled its page: forget the shape."""
        with self._lock:
            self._selective.pop(terms, None)
