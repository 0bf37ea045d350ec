"""Hybrid retrieval, without I/O: a ``search(query=...)`` that also ranks the items by BM25 over
the value fields the index config declares as text (``"text_fields": ["text", "profile.bio"]``),
fused with the vector ranking by reciprocal rank fusion.

Each declared path is a TEXT field of the items index (``x0``, ``x1``, ... over ``$.i.v...``).
The text ranking is one ``FT.AGGREGATE`` in the same round trip as the KNN: the query's words
(any of them) in any text field, under the same pre-filter and ranges, best BM25 first. The two
rankings are fused: an item's score is the sum over the rankings it appears in of
``1 / (RRF_K + rank)`` (rank from 1), the fused order is by that score (the item's stem breaking
ties), and that score is the item's ``score``. A search is hybrid by default when the config
declares text fields; ``search(..., hybrid=False)`` asks for the vector ranking alone and
``hybrid=True`` insists (refused without text fields).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.store.base import SearchItem, SearchOp
from langgraph.store.base.embed import tokenize_path

from streamsaver.errors import ConfigurationError, InvalidInputError

__all__ = [
    "RRF_K", "TEXT_SCORER", "TextRanked", "VectorOnly", "fuse", "search_op", "text_fields", "text_query", "wants_text",
]

RRF_K = 60
"""The constant of reciprocal rank fusion (Cormack et al.'s 60: a lower rank counts, but less)."""
TEXT_SCORER = "BM25STD"
"""The scorer of the text ranking, named: ``FT.AGGREGATE`` scores by TFIDF unless told, whose IDF
(a whole power of two) of a word most items hold is 0 or 1 depending on whether the index's garbage
collector has yet dropped the entries of rewritten documents (every put rewrites one), so the
ranking flipped between two pages of one unchanged listing. BM25STD's IDF is smooth and positive:
for one word the order depends on the items alone; with more words the words' weights still
follow the index's statistics (as in any BM25)."""
_WORD = re.compile(r"\w+")


class TextRanked(SearchOp):
    """A `SearchOp` whose query also ranks by BM25 (``search(..., hybrid=True)``)."""

    __slots__ = ()


class VectorOnly(SearchOp):
    """A `SearchOp` whose query ranks by the vectors alone (``search(..., hybrid=False)``)."""

    __slots__ = ()


def search_op(op: SearchOp, hybrid: bool | None) -> SearchOp:
    """`op` marked with the per-call switch `hybrid` (None: the store's default)."""
    if hybrid is None:
        return op
    return (TextRanked if hybrid else VectorOnly)(*op)


def text_fields(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The TEXT index fields of the ``text_fields`` an index config declares (value paths with
    nested keys; no wildcards).

    Raises:
        ConfigurationError: ``text_fields`` not a list of paths, or a path with a wildcard.
    """
    paths = config.get("text_fields") or []
    if not isinstance(paths, (list, tuple)) or not all(isinstance(p, str) and p for p in paths):
        raise ConfigurationError(f"text_fields is a list of value paths, not {paths!r}")
    fields = []
    for n, path in enumerate(paths):
        keys = tokenize_path(path)
        if any(not isinstance(key, str) or "[" in key or key == "*" for key in keys):
            raise ConfigurationError(f"text field {path!r}: nested keys only, no wildcards or indexes")
        json_path = "$.i.v" + "".join(f'["{key}"]' for key in keys)
        fields.append({"name": f"x{n}", "type": "text", "path": json_path})
    return fields


def wants_text(op: SearchOp, fields: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a search by meaning ranks by text too: its switch, or the store's default (yes
    when the config declares text fields).

    Raises:
        InvalidInputError: ``hybrid=True`` on a store without text fields.
    """
    if isinstance(op, TextRanked) and not fields:
        raise InvalidInputError("hybrid=True needs text_fields in the store's index config")
    return bool(fields) and not isinstance(op, VectorOnly)


def text_query(fields: Sequence[Mapping[str, Any]], query: str) -> str | None:
    """The full-text clause of `query`: any of its words in any text field (None: no words)."""
    words = sorted({word.lower() for word in _WORD.findall(query)})
    if not words:
        return None
    names = "|".join(str(field["name"]) for field in fields)
    return f"@{names}:({'|'.join(words)})"


def _key(item: SearchItem) -> tuple[tuple[str, ...], str]:
    return (tuple(item.namespace), item.key)


def fuse(rankings: Sequence[Sequence[SearchItem]]) -> list[SearchItem]:
    """The items of `rankings` (each best first) in reciprocal rank fusion order, each scored by
    its fused score."""
    scores: dict[tuple[tuple[str, ...], str], float] = {}
    items: dict[tuple[tuple[str, ...], str], SearchItem] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[_key(item)] = scores.get(_key(item), 0.0) + 1.0 / (RRF_K + rank)
            items.setdefault(_key(item), item)
    order = sorted(scores, key=lambda key: (-scores[key], ".".join(key[0]), key[1]))
    return [_scored(items[key], scores[key]) for key in order]


def _scored(item: SearchItem, score: float) -> SearchItem:
    return SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at, score)
