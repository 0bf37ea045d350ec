"""Item values that are not all plain JSON: the parts that are not (LangChain messages, datetimes,
UUIDs, sets, dataclasses, pydantic models...) go through the store's ``serde``, the rest stays
JSON, so filters on the plain parts work as on any value.

A part the serde encodes is stored as ``{"\\u0000serde": [type, base64 bytes]}`` in its place
(the serde's ``dumps_typed``; with an ``EncryptedSerializer`` the bytes are encrypted). A value of
plain JSON is stored as it is (one ``orjson`` pass finds out). A read turns every such part back
through ``loads_typed``; only a document holding the marker is walked. The key ``"\\u0000serde"``
is reserved: a dict holding it is read as an encoded part.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol

from streamsaver.errors import InvalidInputError
from streamsaver.log.codec import strict_json

__all__ = ["MARKER", "MAX_VALUE_DEPTH", "decoded", "encoded", "holds_encoded"]

MARKER = "\x00serde"
_MARKER_JSON = b'"\\u0000serde"'
_PLAIN = (str, int, float, bool)
MAX_VALUE_DEPTH = 100
"""How deep an item's value may nest (its document adds two levels; RedisJSON refuses a document
nested past 128, after the put's log entry was appended)."""


def _wrap(value: Any, serde: SerializerProtocol) -> Any:
    if type(value) is dict and all(type(key) is str for key in value):
        return {key: _wrap(inner, serde) for key, inner in value.items()}
    if type(value) is list:
        return [_wrap(inner, serde) for inner in value]
    if value is None or type(value) in _PLAIN:
        return value
    try:
        type_name, data = serde.dumps_typed(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"an item's value holds {type(value).__name__}, which the serde cannot encode") from exc
    return {MARKER: [type_name, base64.b64encode(data).decode("ascii")]}


def encoded(value: Mapping[str, Any], serde: SerializerProtocol) -> dict[str, Any]:
    """`value` as plain JSON: itself when it is, else with each part that is not encoded by `serde`.

    Raises:
        InvalidInputError: a part the serde cannot encode either, a plain part JSON cannot hold
            (an int beyond 64 bits, a string with a lone surrogate, a NaN or infinite float), or
            nesting deeper than `MAX_VALUE_DEPTH` (the item's document could not hold it).
    """
    try:
        text = strict_json(value)
        plain = dict(value)
    except TypeError:
        plain = dict(_wrap(dict(value), serde))
        try:
            text = strict_json(plain)  # the plain parts stay as they are: one JSON cannot hold fails here
        except TypeError as exc:
            raise InvalidInputError(f"an item's value holds a part JSON cannot store: {exc}") from exc
    # JSON nests a level per '{' or '[' at most, and orjson writes a NaN or infinite float as null:
    # a value without that many brackets nor a null needs no walk.
    if b"null" in text or text.count(b"{") + text.count(b"[") > MAX_VALUE_DEPTH:
        _check_storable(plain)
    return plain


def _check_storable(value: Any) -> None:
    """Refuse a value nested deeper than `MAX_VALUE_DEPTH` or holding a NaN or infinite float
    (iteratively: no recursion limit).

    Raises:
        InvalidInputError: such a value.
    """
    todo = [(value, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, (dict, list, tuple)):
            if level > MAX_VALUE_DEPTH:
                raise InvalidInputError(f"an item's value nests deeper than {MAX_VALUE_DEPTH} levels")
            todo.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
        elif isinstance(item, float) and not math.isfinite(item):
            raise InvalidInputError(f"an item's value holds {item!r}, which JSON has no form for (it reads as None)")


def holds_encoded(document: bytes | str) -> bool:
    """Whether a stored document's text holds an encoded part (so its value needs `decoded`)."""
    raw = document.encode() if isinstance(document, str) else document
    return _MARKER_JSON in raw


def decoded(value: Any, serde: SerializerProtocol) -> Any:
    """`value` with every encoded part loaded back through `serde`."""
    if isinstance(value, dict):
        if len(value) == 1 and MARKER in value:
            type_name, data = value[MARKER]
            return serde.loads_typed((type_name, base64.b64decode(data)))
        return {key: decoded(inner, serde) for key, inner in value.items()}
    if isinstance(value, list):
        return [decoded(inner, serde) for inner in value]
    return value
