"""The store's view ``items``: one RedisJSON document per (namespace, key), its index, and the
partition's namespace registry.

An item's document is ``{"c": created, "i": {...}}``, written by one ``SS.ITEM`` (one
``JSON.SET``, so the index handles the item once per put): an existing document gets its ``i``
only, so an upsert keeps ``created_at`` (the same bytes as a document written whole). ``i``
holds the namespace (``ns`` labels, ``n`` escaped labels joined by '.', ``d`` depth, ``p`` a
digest of every namespace prefix), the key ``k``, the value ``v``, ``u`` (updated,
microseconds), ``t`` (TTL ms, 0: none), ``id`` (the item's stem, ``s:k``), ``e`` (its
embeddings, when it has any, with ``m`` the model that computed them and ``ep`` the put's own
paths, if it gave some) and ``f``: an equality digest of every (path, value) pair of the value,
nested keys included, so ``$eq``/``$in``/``$ne`` are TAG queries. Namespaces match label by
label through the prefix digests: ``("alice",)`` never matches ``("malice",)``.

The namespace registry (``SS.ITEM`` / ``SS.NSREM``, in the same call as the document): the
partition's item set (every stem put and not deleted, expired or not), a hash counting its
stems per namespace (``n`` → count; a namespace leaves at 0), and a sorted set of the stems
whose last put gave a TTL. None of them depends on when items expire, so a replay rebuilds
them exactly; ``store_namespaces.lua`` lists a namespace when it holds more stems than
expiring ones, or else when one of its expiring items still exists.

A delete removes the document; `StorePartitionErased` purges the partition (``SS.PURGE`` over
the set of its item stems) and its registry. A TTL is the document's own: ``PEXPIREAT`` the
put's time plus its TTL (`deadline_ms`), or ``PERSIST`` without. The deadline comes from the
event, so a replay gives an item the deadline its put gave it (a reading refresh since is not
logged: it is lost) and an item whose deadline has passed is not made again (Redis deletes a
key whose deadline is past).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, Final

import orjson

from projectors.commands import ITEM, NAMESPACE_REMOVE, PURGE, Command
from streamsaver.log.codec import canonical_json, escape, strict_json, tag
from streamsaver.log.events import Event, ItemDeleted, ItemPut, StorePartitionErased
from streamsaver.log.keys import STORE_VIEW, Keyspace, ViewName, item_stem

__all__ = [
    "FIELDS", "VIEW", "deadline_ms", "field_tag", "namespace_tag", "project", "put_commands", "value_tags",
    "vector_field", "vectors_text",
]

VIEW: Final[ViewName] = STORE_VIEW

FIELDS: list[dict[str, Any]] = [
    {"name": "p", "type": "tag", "path": "$.i.p[*]"},
    {"name": "f", "type": "tag", "path": "$.i.f[*]"},
    {"name": "u", "type": "numeric", "path": "$.i.u", "attrs": {"sortable": True}},
    {"name": "n", "type": "text", "path": "$.i.n", "attrs": {"sortable": True, "no_index": True, "unf": True}},
    {"name": "id", "type": "text", "path": "$.i.id", "attrs": {"sortable": True, "no_index": True, "unf": True}},
]
"""``p``: namespace prefix digests; ``f``: value equality digests; ``u``: updated (microseconds,
the sort of a search without a query); ``n``: the escaped namespace (grouped on by
``list_namespaces``), ``id``: the item's stem (a tie-break in the sort), kept verbatim in the
sorting vector, not searchable. Schema v5 (`streamsaver.log.keys.INDEX_SCHEMA_VERSION`): v4
also indexed ``c`` (created) and ``d`` (namespace depth), which no query reads; each cost every
put a JSONPath lookup and a numeric index update in RediSearch. The documents keep both."""


_SCALARS = (str, int, bool, type(None))
"""Values whose canonical JSON is their plain JSON (no float to normalise, no keys to sort)."""
_CACHED_TEXT = 64
"""The longest string value whose digest is cached (longer texts rarely recur)."""


def namespace_tag(labels: Sequence[str]) -> str:
    """The digest of one namespace prefix (every label of `labels`)."""
    return tag(orjson.dumps(list(labels)))  # labels are strings: their canonical JSON


def field_tag(path: Sequence[str], value: Any) -> str:
    """The equality digest of the value at `path` (keys of nested objects) of an item's value:
    of the canonical JSON of ``[path, value]``."""
    if type(value) in _SCALARS:  # the common case, spelled without `canonical_json`'s walk
        return tag(orjson.dumps([list(path), value]))
    return tag(canonical_json([list(path), value]))


@lru_cache(maxsize=16384, typed=True)
def _scalar_tag(path: tuple[str, ...], key: Any, value: Any) -> str:
    """`field_tag((*path, str(key)), value)` of a scalar `value`. Cached: the same (key, value)
    pairs recur across puts (flags, categories, small numbers); typed, so ``True`` and ``1``
    stay apart."""
    return tag(orjson.dumps([[*path, str(key)], value]))


def _add_tags(tags: set[str], value: Mapping[str, Any], path: tuple[str, ...]) -> None:
    for key, inner in value.items():
        # `field_tag((*path, key), inner)`, spelt out: a put computes one per pair of its value
        kind = type(inner)
        if kind in _SCALARS:  # never a mapping
            short = kind is not str or len(inner) <= _CACHED_TEXT
            tags.add(_scalar_tag(path, key, inner) if short else tag(orjson.dumps([[*path, str(key)], inner])))
            continue
        here = (*path, str(key))
        tags.add(tag(canonical_json([list(here), inner])))
        if kind is dict or isinstance(inner, Mapping):  # (the ABC check is slow: plain dicts first)
            _add_tags(tags, inner, here)


def value_tags(value: Mapping[str, Any]) -> list[str]:
    """The equality digests of every (path, value) pair of `value`, nested objects included."""
    tags: set[str] = set()
    _add_tags(tags, value, ())
    return sorted(tags)


@lru_cache(maxsize=4096)
def _prefix_tags(namespace: tuple[str, ...]) -> tuple[str, ...]:
    """The digest of every prefix of `namespace` (its ``p``; a namespace's puts recur)."""
    return tuple(namespace_tag(namespace[: k + 1]) for k in range(len(namespace)))


@lru_cache(maxsize=4096)
def _joined(namespace: tuple[str, ...]) -> str:
    """The namespace's escaped labels joined by '.' (labels hold no '.'): its ``n`` (cached: a
    namespace's puts recur)."""
    return ".".join(escape(label) for label in namespace)


def _document(event: ItemPut, stem: str, value_json: bytes, vectors_json: bytes | None) -> bytes:
    """The item's ``i``; `value_json` and `vectors_json` are the strict JSON of its value and
    vectors, spliced in as they are (the log entry holds the same bytes)."""
    ns = event.namespace
    body: dict[str, Any] = {
        "n": _joined(tuple(ns)), "ns": ns, "k": event.key, "v": orjson.Fragment(value_json),
        "u": event.at, "d": len(ns), "p": _prefix_tags(tuple(ns)),
        "f": value_tags(event.value), "t": event.ttl_ms, "id": stem,
    }
    if event.vectors:
        body["e"] = orjson.Fragment(vectors_json or vectors_text(event.vectors))
        body["m"] = event.model
        if event.paths is not None:
            body["ep"] = event.paths
    return strict_json(body)


def vectors_text(vectors: Sequence[Sequence[float]]) -> bytes:
    """The JSON of an item's vectors (a list of lists of numbers): in its document and its log entry."""
    return orjson.dumps(vectors)


def deadline_ms(event: ItemPut) -> int:
    """When an expiring item's put makes it expire: the put's time (the writer's clock) plus its
    TTL, in Unix milliseconds; or the deadline the put kept (a re-embedding's)."""
    return event.expires_ms or event.at // 1000 + event.ttl_ms


def vector_field(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The index field of an item's embeddings (``$.i.e[*]``: each one a vector, so the best
    of an item's embedded fields scores it), in redisvl's format; `attrs` as redisvl's
    (``dims``, ``distance_metric``, ``algorithm``, ``datatype``, HNSW tunables)."""
    return {"name": "e", "type": "vector", "path": "$.i.e[*]", "attrs": dict(attrs)}


def put_commands(event: ItemPut, keyspace: Keyspace, value_json: bytes | None = None,
                 vectors_json: bytes | None = None) -> list[Command]:
    """The commands of `project` for a put; `value_json` and `vectors_json`, when the caller has
    them already, are ``strict_json(event.value)`` and ``vectors_text(event.vectors)``."""
    keys = keyspace.store(event.log_id)
    stem = item_stem(event.namespace, event.key)
    doc = keys.item(stem)
    expiring = event.ttl_ms > 0
    expiry: Command = ("PEXPIREAT", doc, str(deadline_ms(event))) if expiring else ("PERSIST", doc)
    document = _document(event, stem, strict_json(event.value) if value_json is None else value_json, vectors_json)
    return [
        (ITEM, doc, str(event.at), document, keys.items, stem, keys.namespaces,
         _joined(tuple(event.namespace)), keys.expiring, "1" if expiring else "0"),
        expiry,
    ]


def project(event: Event, keyspace: Keyspace) -> list[Command]:
    """The commands that apply a store event to the items view (others: none)."""
    if isinstance(event, ItemPut):
        return put_commands(event, keyspace)
    if isinstance(event, ItemDeleted):
        keys = keyspace.store(event.log_id)
        stem = item_stem(event.namespace, event.key)
        return [
            ("DEL", keys.item(stem)),
            (NAMESPACE_REMOVE, keys.items, stem, keys.namespaces, _joined(tuple(event.namespace)), keys.expiring),
        ]
    if isinstance(event, StorePartitionErased):
        keys = keyspace.store(event.log_id)
        return [(PURGE, keys.items, keys.doc_base, "", keys.doc_base, keys.doc_base),
                ("DEL", keys.namespaces, keys.expiring)]
    return []
