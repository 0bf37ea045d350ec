"""The store's queries on Redis Cluster, without I/O: one index per primary
(`streamsaver.log.routing.index_targets`), so each query on the items index goes to every
primary and their replies merge into the one reply a single server would give.

A page query (``FT.AGGREGATE ... SORTBY ... LIMIT offset limit``) asks each primary for its first
``offset + limit`` rows; the merge orders them all as the query's sort does (newest update, nearest
vector, best text score; the item's stem breaking ties) and cuts the page. A count
(``FT.SEARCH ... LIMIT 0 0``) sums; a grouping (``GROUPBY``) concatenates (the namespace listing
deduplicates). On one server nothing changes: the query goes as it is.

A primary of a cluster answers ``LOAD`` with no attributes (RediSearch 8 on the embedded
cluster), so there a page query loads nothing: its rows carry the sort fields (``u``, ``id``,
``dist``, ``__score``), and the documents of the merged page are read by key in one more round
trip (`missing`, `with_documents`). RediSearch loads only the documents whose keys hash to the
slot of the index the query names (one hash tag per primary's index; the items carry their
partitions' tags), so a query that needs ``LOAD`` to filter is never sent to a cluster: range
conditions, and "has no embedding" for the items after a short page of a search by meaning, run
as rounds of candidates checked by key (`streamsaver.store.cluster_ranges`,
`streamsaver.store.cluster_search`), and a bare KNN's candidates are checked on the sortable
namespace only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from streamsaver.errors import ConfigurationError
from streamsaver.log.routing import Command, IndexTarget, Step

__all__ = ["LOAD_DOCUMENT", "fanned", "merged", "missing", "rows_of", "with_documents"]

LOAD_DOCUMENT = ["LOAD", 3, "$", "AS", "doc"]
"""The clause of a page query that loads each row's document (after the page is cut)."""

Row = dict[bytes, Any]


def rows_of(reply: Any) -> Iterator[Row]:
    """The rows of a query reply: a merged one, or one primary's (RESP2 or RESP3)."""
    if isinstance(reply, dict):
        for row in reply[b"results"]:
            yield dict(row[b"extra_attributes"])
        return
    for row in reply[1:]:
        yield dict(zip(row[::2], row[1::2], strict=True))


def _text(value: Any) -> str:
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else str(value)


def _sort_key(command: Command) -> Callable[[Row], tuple[Any, ...]] | None:
    """How the rows of a page query sort (None: the command is not a page query)."""
    if "SORTBY" not in command:
        return None
    field = _text(command[command.index("SORTBY") + 2])
    if field == "@dist":
        return lambda row: (float(row[b"dist"]), _text(row[b"id"]))
    if field == "@__score":
        return lambda row: (-float(row[b"__score"]), _text(row[b"id"]))
    return lambda row: (-int(row[b"u"]), _text(row[b"id"]))


def _unloaded(command: Command) -> Command:
    """A page query without its document clause.

    Raises:
        ConfigurationError: a query that loads to filter (not answerable on a cluster).
    """
    at = next((n for n in range(len(command)) if command[n : n + 5] == LOAD_DOCUMENT), None)
    bare = command if at is None else [*command[:at], *command[at + 5 :]]
    if "LOAD" in bare:
        raise ConfigurationError(
            "on Redis Cluster a query cannot load document fields to filter (RediSearch loads only the "
            "documents of the index name's slot there): such conditions are checked by key instead"
        )
    return bare


def _paged(command: Command) -> tuple[Command, int, int]:
    """`command` asking for its whole reach from offset 0, and its offset and limit."""
    at = command.index("LIMIT")
    offset, limit = int(command[at + 1]), int(command[at + 2])
    widened = list(command)
    widened[at + 1 : at + 3] = [0, offset + limit]
    return widened, offset, limit


def _one_server(targets: Sequence[IndexTarget]) -> bool:
    """Whether `targets` is a single server's index (a cluster of one primary is still a cluster:
    its page queries go widened and unloaded, and their reply is merged like any cluster's)."""
    return len(targets) == 1 and targets[0].route is None


def fanned(command: Command, index: str, targets: Sequence[IndexTarget]) -> list[Step]:
    """The steps of one query on the items index: itself on one server; on a cluster, one per
    primary's index (a page query asking each for its whole reach)."""
    if _one_server(targets):
        return [command]
    if _text(command[0]).upper() == "FT.AGGREGATE" and "LIMIT" in command:
        command = _unloaded(_paged(command)[0])
    return [target.query([*command[:1], target.name, *command[2:]]) for target in targets]


def merged(command: Command, replies: Sequence[Any], targets: Sequence[IndexTarget]) -> Any:
    """The reply of `command` from its `fanned` steps' replies (one server: the reply)."""
    if _one_server(targets):
        return replies[0]
    if _text(command[0]).upper() == "FT.SEARCH":
        return [sum(int(reply[b"total_results"] if isinstance(reply, dict) else reply[0]) for reply in replies)]
    rows = [row for reply in replies for row in rows_of(reply)]
    key = _sort_key(command)
    if key is not None and "LIMIT" in command:
        _, offset, limit = _paged(command)
        rows = sorted(rows, key=key)[offset : offset + limit]
    return [len(rows), *([name for pair in row.items() for name in pair] for row in rows)]


def _merged_page(reply: Any) -> bool:
    """Whether `reply` is a merged query reply (a count, then rows), not another read's."""
    return isinstance(reply, list) and bool(reply) and type(reply[0]) is int and all(
        isinstance(row, list) for row in reply[1:])


def missing(reply: Any) -> list[str]:
    """The stems (``id``) of the rows of a merged page that have no document yet."""
    if not _merged_page(reply):
        return []
    return [_text(row[b"id"]) for row in rows_of(reply) if b"doc" not in row and b"id" in row]


def with_documents(reply: Any, documents: dict[str, Any]) -> Any:
    """`reply` with each row's document from `documents` (by stem); rows whose document is gone
    (deleted or expired since the query) are left out."""
    if not missing(reply):
        return reply
    rows = [row for row in rows_of(reply) if b"doc" in row or documents.get(_text(row[b"id"])) is not None]
    for row in rows:
        row.setdefault(b"doc", documents.get(_text(row[b"id"])))
    return [len(rows), *([name for pair in row.items() for name in pair] for row in rows)]
