"""Checks that checkpoint metadata fits the checkpoint document, before anything is written.

The metadata goes into the log entry and, as JSON, into the view's RedisJSON document; an
append script that fails at the document would leave the log entry written, so everything the
document could refuse is refused here: JSON that is not valid, nesting RedisJSON cannot hold,
and floats JSON has no form for.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any

import orjson

from streamsaver.errors import InvalidInputError

__all__ = ["MAX_METADATA_DEPTH", "checked_metadata"]

MAX_METADATA_DEPTH = 100
"""How deep metadata may nest (the checkpoint document adds two levels; RedisJSON allows 128)."""

OPAQUE = -1
"""What `_checked_depth` returns for metadata holding an ``orjson.Fragment`` (raw JSON)."""


def _checked_depth(value: Any) -> int:
    """How many levels of lists and dicts the metadata `value` nests (iteratively: no recursion
    limit).

    Raises:
        InvalidInputError: a NaN or infinite float, which JSON has no form for (orjson writes
            null: the value would read back as None).
    """
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, orjson.Fragment):
            return OPAQUE  # raw JSON, written as it is: the walk cannot see inside
        if isinstance(item, Enum):
            todo.append((item.value, level))  # orjson writes an Enum as its value, nested or NaN alike
            continue
        if isinstance(item, dict):
            children: Iterable[Any] = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            if isinstance(item, float) and not math.isfinite(item):
                raise InvalidInputError(f"checkpoint metadata must be JSON-serializable: {item!r} has no JSON form")
            continue
        deepest = max(deepest, level)
        todo.extend((child, level + 1) for child in children)
    return deepest


def checked_metadata(md: Mapping[str, Any], md_json: bytes) -> None:
    """Refuse metadata (`md`, its JSON `md_json`) that the checkpoint document cannot hold.

    Raises:
        InvalidInputError: JSON that is not valid (an ``orjson.Fragment`` of bad JSON), nested
            deeper than `MAX_METADATA_DEPTH`, or holding a NaN or infinite float.
    """
    if not _may_be_deep_or_nan(md_json):
        _parsed(md_json)  # only a Fragment can make short JSON invalid; its depth is bounded
        return
    depth = _checked_depth(md)
    if depth == OPAQUE:
        depth = _checked_depth(_parsed(md_json))  # what the document will hold, Fragments opened
    if depth > MAX_METADATA_DEPTH:
        # RedisJSON refuses documents nested past 128 levels; the log entry would be written and
        # the document refused, so the call is refused here, before any write.
        raise InvalidInputError(f"checkpoint metadata is nested deeper than {MAX_METADATA_DEPTH} levels")


def _parsed(md_json: bytes) -> Any:
    try:
        return orjson.loads(md_json)
    except orjson.JSONDecodeError as exc:  # RedisJSON would refuse the document after the log entry
        raise InvalidInputError(f"checkpoint metadata must be valid JSON (an orjson.Fragment?): {exc}") from exc


def _may_be_deep_or_nan(md_json: bytes) -> bool:
    """Whether metadata whose JSON is `md_json` needs `_checked_depth`: JSON nests one level
    per two bytes at most (``[]``), and orjson writes a NaN or infinite float as ``null``; so
    a short JSON without ``null`` is neither too deep nor hiding a NaN (the walk it spares
    cost ~2 µs a put)."""
    return len(md_json) > 2 * MAX_METADATA_DEPTH or b"null" in md_json
