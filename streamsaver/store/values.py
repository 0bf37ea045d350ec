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
from collections.abc import Mapping
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol

from streamsaver.errors import InvalidInputError
from streamsaver.log.codec import strict_json

__all__ = ["MARKER", "decoded", "encoded", "holds_encoded"]

MARKER = "\x00serde"
_MARKER_JSON = b'"\\u0000serde"'
_PLAIN = (str, int, float, bool)


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
        InvalidInputError: a part the serde cannot encode either, or a plain part JSON cannot
            hold (an int beyond 64 bits, a string with a lone surrogate).
    """
    try:
        strict_json(value)
        return dict(value)
    except TypeError:
        wrapped = dict(_wrap(dict(value), serde))
    try:
        strict_json(wrapped)  # the plain parts stay as they are: one JSON cannot hold fails here
    except TypeError as exc:
        raise InvalidInputError(f"an item's value holds a part JSON cannot store: {exc}") from exc
    return wrapped


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
