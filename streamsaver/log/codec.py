"""Binary-safe encodings shared by events, projectors and savers. Pure, no I/O.

* `pack` / `unpack`: a list of byte strings as one byte string (4-byte big-endian length before
  each part). Used for stream fields and view hash values that hold several parts, such as a
  serialized value's type and bytes.
* `escape`: a key component made safe and unambiguous. Bytes outside ``[A-Za-z0-9._-]`` become
  ``%XX``, so ``:`` never appears inside a component, ``{``/``}`` never break a hash tag, and
  ordinary ids (uuids, slugs) stay readable. ``scripts/_esc.lua`` holds the same rule.
* `tag`: a fixed-length hex digest of a value, the only form in which user input reaches a
  RediSearch query, so no id, namespace or metadata value can change a query's meaning.
* `canonical_json`: metadata values in one stable spelling, so equal values give equal tags.
* `order_key`: a number that never orders two checkpoint ids against their string order, so a
  listing can narrow the index to the newest matches by a numeric range (see the function).
"""

from __future__ import annotations

import hashlib
import re
import struct
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any
from urllib.parse import unquote_to_bytes

import orjson

__all__ = [
    "canonical_json", "escape", "metadata_tags", "order_key", "pack", "strict_json", "tag", "unpack", "unpack_head",
    "unpack_head_1_of_3", "unpack_head_2_of_4", "unpack_none_of_2",
]

_LEN = struct.Struct(">I")
_READ_LEN = _LEN.unpack_from
_PACK_LEN = _LEN.pack
_UNSAFE = re.compile(rb"[^A-Za-z0-9._-]")
_SAFE = re.compile(r"[A-Za-z0-9._-]*")
_TAG_BYTES = 10


def pack(parts: Iterable[bytes]) -> bytes:
    """Join byte strings into one, each preceded by its 4-byte length."""
    # One join: growing a bytearray and copying it into bytes copied each payload twice.
    joined: list[bytes] = []
    for part in parts:
        joined += (_PACK_LEN(len(part)), part)
    return b"".join(joined)


def unpack(data: bytes) -> list[bytes]:
    """Split what `pack` joined.

    Raises:
        ValueError: when `data` is not a well-formed packing.
    """
    parts: list[bytes] = []
    pos, end = 0, len(data)
    read_len = _LEN.unpack_from
    while pos < end:
        if pos + 4 > end:
            raise ValueError("truncated length prefix")
        start = pos + 4
        pos = start + read_len(data, pos)[0]
        if pos > end:
            raise ValueError("truncated part")
        parts.append(data[start:pos])
    return parts


def unpack_head(data: bytes, keep: int, parts: int) -> list[bytes]:
    """The first `keep` parts of `data`, which must be a packing of exactly `parts` parts; the
    rest are checked but not copied (a payload that is not needed costs nothing to skip).

    Raises:
        ValueError: when `data` is not a well-formed packing of `parts` parts.
    """
    head: list[bytes] = []
    pos = 0
    read_len = _LEN.unpack_from
    try:
        for k in range(parts):
            start = pos + 4
            pos = start + read_len(data, pos)[0]
            if k < keep:
                head.append(data[start:pos])
    except struct.error as exc:  # a length prefix past the end
        raise ValueError("truncated length prefix") from exc
    if pos != len(data):  # a part past the end, or more parts than `parts`
        raise ValueError(f"not a packing of {parts} parts")
    return head


# `unpack_head` unrolled for the packings events hold (payload-free decoding runs them for
# every field of every replayed event, and the loop cost more than the reads).


def unpack_none_of_2(data: bytes) -> None:
    """``unpack_head(data, 0, 2)``: check that `data` is a packing of 2 parts."""
    try:
        end = 4 + _READ_LEN(data, 0)[0]
        end += 4 + _READ_LEN(data, end)[0]
    except struct.error as exc:
        raise ValueError("truncated length prefix") from exc
    if end != len(data):
        raise ValueError("not a packing of 2 parts")


def unpack_head_1_of_3(data: bytes) -> bytes:
    """``unpack_head(data, 1, 3)[0]``: the first part of a packing of 3 parts."""
    try:
        first = 4 + _READ_LEN(data, 0)[0]
        end = first + 4 + _READ_LEN(data, first)[0]
        end += 4 + _READ_LEN(data, end)[0]
    except struct.error as exc:
        raise ValueError("truncated length prefix") from exc
    if end != len(data):
        raise ValueError("not a packing of 3 parts")
    return data[4:first]


def unpack_head_2_of_4(data: bytes) -> tuple[bytes, bytes]:
    """``tuple(unpack_head(data, 2, 4))``: the first two parts of a packing of 4 parts."""
    try:
        first = 4 + _READ_LEN(data, 0)[0]
        second = first + 4 + _READ_LEN(data, first)[0]
        end = second + 4 + _READ_LEN(data, second)[0]
        end += 4 + _READ_LEN(data, end)[0]
    except struct.error as exc:
        raise ValueError("truncated length prefix") from exc
    if end != len(data):
        raise ValueError("not a packing of 4 parts")
    return data[4:first], data[first + 4 : second]


@lru_cache(maxsize=16384)
def escape(component: str) -> str:
    """Spell one key component with ``[A-Za-z0-9._-%]`` only; distinct inputs stay distinct."""
    # Cached: the same thread ids, namespaces and channel names recur in every event.
    if _SAFE.fullmatch(component):
        return component
    raw = component.encode("utf-8", "surrogatepass")
    return _UNSAFE.sub(lambda m: b"%%%02X" % m.group()[0], raw).decode("ascii")


def unescape(component: str) -> str:
    """The string `escape` spelled as `component`."""
    return unquote_to_bytes(component).decode("utf-8", "surrogatepass")


def tag(value: str | bytes) -> str:
    """A 20-hex-digit digest of `value`, safe to place in any RediSearch TAG query."""
    # Short values (thread ids, namespaces, most metadata pairs) recur in every event of a
    # thread: cached. Long ones are not, so the cache's memory stays small.
    return _short_tag(value) if len(value) <= 256 else _digest(value)


def _digest(value: str | bytes) -> str:
    data = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value
    return hashlib.blake2b(data, digest_size=_TAG_BYTES).hexdigest()


_short_tag = lru_cache(maxsize=65536, typed=True)(_digest)


_INT64 = range(-(2**63), 2**64)  # what orjson writes as an integer


def _normalize(value: Any) -> Any:
    # An integral float beyond 64 bits stays a float: orjson writes no such integer.
    if isinstance(value, float) and value.is_integer() and int(value) in _INT64:
        return int(value)
    if isinstance(value, dict):
        return {str(k): _normalize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normalize(v) for v in value]
    return value


_STRICT = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS


def strict_json(value: Any) -> bytes:
    """JSON of `value`, refusing datetimes, dataclasses and builtin subclasses, which would read
    back as another type; tuples become lists, as in every saver.

    Raises:
        TypeError: when `value` holds such a value or anything else that is not JSON.
    """
    return orjson.dumps(value, option=_STRICT)


def canonical_json(value: Any) -> bytes:
    """One spelling per value: sorted keys, integral floats as ints (``2.0`` equals ``2``).

    Raises:
        TypeError: when `value` is not JSON-serializable.
    """
    return orjson.dumps(_normalize(value), option=_STRICT | orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


_PLAIN = (str, int, bool, type(None))
_CONTAINERS = (dict, list)


def metadata_tags(items: Sequence[tuple[str, Any]]) -> list[str]:
    """The tags that make equality on each ``(key, value)`` pair a TAG query."""
    return [
        # A string, int, bool or None, or an empty dict or list (LangGraph's "parents": {}), is
        # already canonical: skip the normalizing walk.
        tag(
            orjson.dumps([key, value])
            if type(value) in _PLAIN or (not value and type(value) in _CONTAINERS)
            else canonical_json([key, value])
        )
        for key, value in items
    ]


_ORDER_ALPHABET = b"-0123456789abcdef"
_ORDER_BASE = len(_ORDER_ALPHABET) + 2
_ORDER_DIGITS = 12
ORDER_KEY_MAX = _ORDER_BASE**_ORDER_DIGITS - 1
"""The largest `order_key` (below 2**53)."""
_ORDER_RANK = {c: i + 1 for i, c in enumerate(_ORDER_ALPHABET)}
_ORDER_ABOVE = [
    next((i + 1 for i, a in enumerate(_ORDER_ALPHABET) if a > c), len(_ORDER_ALPHABET) + 1) for c in range(256)
]


def order_key(checkpoint_id: str) -> int:
    """A number below 2**53 (exact in a double, as RediSearch stores numbers) that never
    contradicts the string order of ids: ``a < b`` implies ``order_key(a) <= order_key(b)``.

    Ids that share their first characters tie, so a reader orders a tie by the id itself. The
    first 12 bytes are digits in base 19: the 17 bytes of a lowercase uuid (``-0-9a-f``, the
    ids LangGraph makes) each have a digit of their own, which separates uuid6 ids created
    ~6.5 ms apart; any other byte takes the digit of the next such byte above it and ends the
    key (the digits after it are 0), which keeps the order for every string.
    """
    key, digits = 0, 0
    for byte in checkpoint_id.encode("utf-8", "surrogatepass")[:_ORDER_DIGITS]:
        rank = _ORDER_RANK.get(byte)
        digits += 1
        if rank is None:
            key = key * _ORDER_BASE + _ORDER_ABOVE[byte]
            break
        key = key * _ORDER_BASE + rank
    return int(key * _ORDER_BASE ** (_ORDER_DIGITS - digits))
