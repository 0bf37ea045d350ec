"""Whether the deployment's items index is the one a store's index config declares, without I/O.

The items index has one name whatever the config (``P:items:idx:v5``), and setup creates it only
when it is missing: a store set up without vectors (or without ``text_fields``) and later with
them would otherwise search an index that has no vector field, or the wrong one, and find
nothing or fail per query. A store with an index config compares it at setup with the index's
``FT.INFO``: the vector field (dimensions, metric, algorithm, type, and the HNSW ``M`` and
``ef_construction`` when the config names them) and the text fields; a difference is an
`IndexConfigMismatchError` that says what to run. A store without an index config reads any
items index (the CLI's store tools, a store that only puts and gets).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any

from streamsaver.errors import IndexConfigMismatchError

__all__ = ["check_index", "declared", "found"]

Signature = dict[str, tuple[Any, ...]]
"""Per field that can differ (the vector field ``e``, the text fields): what must match."""
_VECTOR_TUNABLES = {"m": "M", "ef_construction": "ef_construction"}


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def declared(fields: Iterable[Mapping[str, Any]]) -> Signature:
    """The signature of the index fields a store's config declares (redisvl's format)."""
    signature: Signature = {}
    for field in fields:
        attrs = dict(field.get("attrs") or {})
        if field["type"] == "vector":
            tunables = tuple((_VECTOR_TUNABLES[k], int(v)) for k, v in sorted(attrs.items()) if k in _VECTOR_TUNABLES)
            signature["e"] = (field["path"], str(attrs["algorithm"]).upper(), str(attrs["datatype"]).upper(),
                              int(attrs["dims"]), str(attrs["distance_metric"]).upper(), *tunables)
        elif str(field["name"]).startswith("x") and field["type"] == "text":
            signature[str(field["name"])] = (field["path"],)
    return signature


def _attributes(info: Any) -> list[dict[str, Any]]:
    """The attributes of an ``FT.INFO`` reply (RESP3 maps or RESP2 flat lists), keys as text."""
    if isinstance(info, dict):
        listed = info.get(b"attributes") or info.get("attributes") or []
    else:
        pairs = [_text(value) for value in info]
        listed = info[pairs.index("attributes") + 1]
    out = []
    for attribute in listed:
        if isinstance(attribute, dict):
            out.append({_text(key): _text(value) for key, value in attribute.items()})
            continue
        # RESP2 lists flags (SORTABLE, UNF, NOINDEX, ...) as bare words among the pairs: each word
        # maps to the next, the first time it is seen (the named keys come before their values).
        described: dict[str, Any] = {}
        for key, value in pairwise(attribute):
            described.setdefault(_text(key), _text(value))
        out.append(described)
    return out


def found(info: Any, wanted: Signature) -> Signature:
    """The signature of the index `info` describes (its tunables as far as `wanted` names them)."""
    signature: Signature = {}
    for attribute in _attributes(info):
        name = attribute.get("attribute")
        if attribute.get("type") == "VECTOR" and name == "e":
            named = [tunable for tunable, _ in (wanted.get("e") or ())[5:]]
            signature["e"] = (attribute.get("identifier"), attribute.get("algorithm"), attribute.get("data_type"),
                              int(attribute.get("dim", 0)), attribute.get("distance_metric"),
                              *((tunable, int(attribute.get(tunable, 0))) for tunable in named))
        elif attribute.get("type") == "TEXT" and isinstance(name, str) and name[:1] == "x" and name[1:].isdigit():
            signature[name] = (attribute.get("identifier"),)
    return signature


def check_index(index: str, fields: Sequence[Mapping[str, Any]], infos: Sequence[Any]) -> None:
    """Raise when an items index (`infos`: its ``FT.INFO`` on every primary) differs from the
    `fields` the store declares.

    Raises:
        IndexConfigMismatchError: the index has another vector field or other text fields.
    """
    wanted = declared(fields)
    for info in infos:
        have = found(info, wanted)
        if have != wanted:
            raise IndexConfigMismatchError(
                f"the items index {index} was made with {have or 'no vectors nor text fields'}, this store declares "
                f"{wanted}: the index is left as it is. To move to the new config: FT.DROPINDEX {index} (without DD: "
                "the items stay), then setup() with the new index config (the new index indexes the items there), "
                "then reembed(everything=True) when the vectors' model or dimensions changed; items put while the "
                "store had no vectors get theirs when put again"
            )
