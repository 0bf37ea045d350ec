"""The RediSearch index of each view, as data (redisvl's schema dictionary format).

Bump `streamsaver.log.keys.INDEX_SCHEMA_VERSION` when a schema changes: the index name carries it,
so a new index is built beside the old one instead of a live index changing under readers.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FIELDS", "index_schema"]

FIELDS: list[dict[str, Any]] = [
    {"name": "th", "type": "tag", "path": "$.th"},
    {"name": "nh", "type": "tag", "path": "$.nh"},
    {
        "name": "checkpoint_id", "type": "tag", "path": "$.checkpoint_id",
        "attrs": {"sortable": True, "case_sensitive": True, "no_index": True},
    },
    {"name": "rh", "type": "tag", "path": "$.rh"},
    {"name": "mt", "type": "tag", "path": "$.mt[*]"},
    {"name": "tk", "type": "text", "path": "$.tk", "attrs": {"sortable": True, "no_index": True, "unf": True}},
    {"name": "nk", "type": "text", "path": "$.nk", "attrs": {"sortable": True, "no_index": True, "unf": True}},
    {"name": "ck", "type": "numeric", "path": "$.ck", "attrs": {"index_missing": True}},
]
"""``th``/``nh``/``rh``: digests of thread id, namespace, run id;
``checkpoint_id``: sorted on and compared in ``FILTER``, never searched, so not indexed (schema
v4): a value unique to each document costs the index a tag entry of its own (~400 bytes a
checkpoint; ~600 with the parent digest ``ph``, which the documents still carry and no query
used);
``mt``: one digest per metadata ``(key, value)`` pair (see `projectors.documents`): every
metadata filter of a listing, ``{"source": ...}`` and ``{"step": ...}`` included, is a TAG query
on it (then checked on the rows, `streamsaver.checkpoints.list_rows.matches`), so the documents'
``source`` and ``step`` are no longer indexed (schema v5; each cost a put ~8K server
instructions, a JSONPath lookup and an index update per document);
``tk``/``nk``: thread id and namespace as keys spell them (`streamsaver.log.codec.escape`: ASCII, no
NUL, which a sorting vector would cut at), not searchable, kept verbatim (UNF) in the sorting
vector, so a query returns which checkpoint each row is from its own index without loading the
document (RediSearch on Redis Cluster does not load documents: ``LOAD`` gives empty rows there);
``ck``: `streamsaver.log.codec.order_key` of the checkpoint id, a number in id order (ties allowed),
so a listing across threads narrows the matches to a range of the newest before sorting them
(``_window.lua``); indexed when missing too, so a document from before schema v3 is found
and reported instead of silently falling outside every range."""


def index_schema(name: str, document_prefix: str) -> dict[str, Any]:
    """The redisvl schema dictionary of a view's index."""
    return {
        "index": {"name": name, "prefix": document_prefix, "storage_type": "json", "key_separator": ":"},
        "fields": FIELDS,
    }
