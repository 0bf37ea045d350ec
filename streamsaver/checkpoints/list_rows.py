"""The rows of a listing, without I/O: what index replies hold and the order a listing keeps.

An index query of `streamsaver.checkpoints.listing` answers with rows ``(thread_id,
checkpoint_ns, checkpoint_id)``: from ``FT.AGGREGATE`` (RESP2 or RESP3) or from
``list_window.lua`` / ``list_page.lua`` (with the width of the window they used). A listing
orders rows newest checkpoint id first, then by thread and namespace as keys spell them; a page
starts strictly after the last row of the one before (`after`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.base.id import uuid6

from streamsaver.errors import ConfigurationError, InvalidInputError
from streamsaver.log.codec import canonical_json, escape, metadata_tags, order_key, unescape

__all__ = ["SAFE_ID", "WHOLE", "Row", "after", "check_filter", "identity", "matches", "newest_guess", "search_rows",
           "tie_order", "window_rows"]

Row = tuple[str, str, str]

SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]*$")


def matches(metadata: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    return all(k in metadata and canonical_json(metadata[k]) == canonical_json(v) for k, v in wanted.items())


def search_rows(reply: Any) -> list[Row]:
    """``(thread_id, checkpoint_ns, checkpoint_id)`` of each FT.AGGREGATE row (RESP2 or RESP3).

    Raises:
        ConfigurationError: a row of a document from before schema v2 (the views need a replay).
    """
    if isinstance(reply, dict):
        results = reply.get(b"results", reply.get("results")) or []
        rows = [r.get(b"extra_attributes", r.get("extra_attributes")) or {} for r in results]
        items = [{text(k): v for k, v in row.items()} for row in rows]
    else:
        items = [{text(row[i]): row[i + 1] for i in range(0, len(row), 2)} for row in reply[1:]]
    if any("tk" not in i for i in items):
        raise ConfigurationError(
            "the view holds checkpoint documents written before index schema v2 (no `tk`): "
            "rebuild the views once with `streamsaver replay` (see docs/operations.md)"
        )
    return [(unescape(text(i["tk"])), unescape(text(i.get("nk", b""))), text(i["checkpoint_id"])) for i in items]


def window_rows(reply: Any) -> tuple[int, list[Row]]:
    """The width of the window a ``list_window.lua`` or ``list_page.lua`` reply used, and its rows.

    Raises:
        ConfigurationError: a match has no ``ck`` (written before index schema v3).
    """
    if reply and text(reply[0]) == "missing":
        raise ConfigurationError(
            "the view holds checkpoint documents written before index schema v3 (no `ck`): "
            "rebuild the views once with `streamsaver replay` (see docs/operations.md)"
        )
    return int(reply[0]), search_rows(reply[1])


WHOLE = 2**53
"""The width ``list_window.lua`` reports when its window was the whole index."""


def newest_guess() -> int:
    """The order key of an id LangGraph would make now: where a listing's first window hangs
    from when no `before` bounds it. Only a guess: ids of any form list correctly, and ids that
    do not follow the clock only cost more counts to find their window."""
    return order_key(str(uuid6()))


def identity(t: CheckpointTuple) -> Row:
    c = t.config["configurable"]
    return (c["thread_id"], c.get("checkpoint_ns", ""), c["checkpoint_id"])


def tie_order(row: Row) -> tuple[str, str]:
    """Among rows of one checkpoint id, the order an index sorts them in (``@tk ASC @nk ASC``:
    thread and namespace as keys spell them), so rows merged from several indexes order as one
    index would order them (a copied thread keeps its source's ids)."""
    thread_id, ns, _ = row
    return escape(thread_id), escape(ns)



def after(cursor: Row) -> str:
    """A FILTER keeping the rows strictly after `cursor` in the listing's order (id DESC,
    then ``tk``, ``nk`` ASC). Its id is checked (`SAFE_ID`), thread and namespace are escaped
    (`escape`: ``[A-Za-z0-9._%-]``): nothing in it can end a quoted string."""
    thread, ns, cid = cursor
    tk, nk = escape(thread), escape(ns)
    return (f"(@checkpoint_id < '{cid}') || (@checkpoint_id == '{cid}' && "
            f"(@tk > '{tk}' || (@tk == '{tk}' && @nk > '{nk}')))")


def text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def check_filter(filter: Mapping[str, Any] | None) -> None:
    """Refuse a `list` filter that could only match nothing silently: not a mapping, a key that is not a
    string (metadata keys are), or a value that is not JSON.

    Raises:
        InvalidInputError: such a filter.
    """
    if filter is None:
        return
    if not isinstance(filter, Mapping):
        raise InvalidInputError(f"a filter must be a mapping of metadata keys, not {type(filter).__name__}")
    for key in filter:
        if not isinstance(key, str):
            raise InvalidInputError(f"a filter's keys must be metadata keys (strings), not {key!r}")
    try:
        metadata_tags(sorted(filter.items()))
    except TypeError as exc:
        raise InvalidInputError(f"a filter must map metadata keys to JSON values: {exc}") from exc
