"""Append-only list deltas: a channel value stored as the elements added since a full value
of the same channel (its *base*). Pure, no I/O.

LangGraph hands the saver the whole ``messages`` list at every step; the log would keep every
version of it. When the new value's msgpack array (serde type ``msgpack``) is the base's array
with elements added at the end, the log stores only those elements:

* stored type ``delta:<stored type of the elements>`` (``delta:msgpack`` or
  ``delta:zstd:msgpack``: the added elements compressed when that pays);
* stored data: a `codec.pack` of the linked entry's id (the *link*), that entry's channel
  version (JSON) and the size of its stored field, the new element count, and the elements.

The link and the checks sit before the (maybe compressed) elements so that a Lua script can
follow a chain without decompressing. `join` rebuilds, from a delta and the chain of values it
links to, the exact bytes ``serde.dumps_typed`` produced: an array header for the new count (the
minimal form, as msgpack writes it; a value whose header is not minimal is never stored as a
delta) then the base's elements then each delta's. msgpack is self-delimiting, so a body that
starts with the previous body's bytes starts with its elements: no element is parsed.

The writer (`streamsaver.checkpoints.delta_plan`) links every delta straight to its base, so a read
follows one link, and stores every `MAX_LINKS` + 1-th version whole. The format does not say
what the link holds: writers before base links linked each delta to the version before, a
chain of up to `MAX_LINKS` links; `join` and the read scripts follow any chain up to
`READ_LIMIT` links, so those logs read unchanged.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from streamsaver.log.codec import pack, unpack

__all__ = [
    "MARK", "MAX_LINKS", "READ_LIMIT", "DeltaLink", "array_header", "encode", "is_delta", "join", "read_header",
    "split",
]

MARK = "delta:"
_MARK_BYTES = MARK.encode()
"""The stored type prefix of a delta."""

MAX_LINKS = 7
"""Deltas linked to one full value before the next full one (every 8th version is whole)."""

READ_LIMIT = 64
"""The longest chain a reader follows (a bound on damage, not a layout: writers link one hop,
and older writers at most `MAX_LINKS`)."""

DELTA_TYPE = "msgpack"
"""The only serde type stored as deltas (JsonPlusSerializer's msgpack form)."""

_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")


def array_header(count: int) -> bytes:
    """The minimal msgpack array header for `count` elements (fixarray, array 16, array 32)."""
    if count < 16:
        return bytes((0x90 | count,))
    if count < 0x10000:
        return b"\xdc" + _U16.pack(count)
    return b"\xdd" + _U32.pack(count)


def read_header(data: bytes) -> tuple[int, int] | None:
    """``(element count, header length)`` when `data` starts with a msgpack array header in its
    minimal form; None otherwise (not an array, a truncated or a non-minimal header)."""
    if not data:
        return None
    first = data[0]
    if 0x90 <= first <= 0x9F:
        return first & 0x0F, 1
    if first == 0xDC and len(data) >= 3:
        count = _U16.unpack_from(data, 1)[0]
        return (count, 3) if count >= 16 else None
    if first == 0xDD and len(data) >= 5:
        count = _U32.unpack_from(data, 1)[0]
        return (count, 5) if count >= 0x10000 else None
    return None


def is_delta(type_name: str | bytes) -> bool:
    """Whether a stored type names a delta."""
    if isinstance(type_name, str):
        return type_name.startswith(MARK)
    return type_name.startswith(_MARK_BYTES)


class DeltaLink:
    """The parts of a stored delta (see the module docstring)."""

    __slots__ = ("count", "elements", "elements_type", "link", "link_size", "link_version")

    def __init__(self, link: str, link_version: bytes, link_size: int, count: int, elements_type: str, elements: bytes):
        self.link, self.link_version, self.link_size = link, link_version, link_size
        self.count, self.elements_type, self.elements = count, elements_type, elements


def encode(
    link: str, link_version: bytes, link_size: int, count: int, elements_type: str, elements: bytes
) -> tuple[str, bytes]:
    """The stored ``(type, data)`` of a delta: `elements` (stored as `elements_type`) added to
    the value held by entry `link` (channel version `link_version`, stored field of
    `link_size` bytes), making `count` elements in all."""
    parts = [link.encode(), link_version, b"%d" % link_size, b"%d" % count, elements]
    return MARK + elements_type, pack(parts)


def split(type_name: str, data: bytes) -> DeltaLink:
    """The parts of a stored delta.

    Raises:
        ValueError: not a delta, or a malformed one.
    """
    if not is_delta(type_name):
        raise ValueError(f"{type_name!r} is not a delta")
    parts = unpack(data)
    if len(parts) != 5:
        raise ValueError("a delta is a packing of 5 parts")
    link, version, size, count, elements = parts
    return DeltaLink(link.decode(), version, int(size), int(count), type_name[len(MARK):], elements)


Expand = Callable[[str, bytes], tuple[str, bytes]]
"""`compression`'s stored form -> serde form of one payload (type and bytes)."""
Lookup = Callable[[str], bytes | None]
"""The stored field (a packed channel value) of the same channel in the log entry named, or None."""


def join(type_name: str, data: bytes, lookup: Lookup, expand: Expand) -> tuple[str, bytes]:
    """The serde form (type, bytes) of a stored channel value, following its chain when it is a
    delta (a value that is not a delta is only expanded).

    Raises:
        ValueError: a link that is missing or holds another value than the delta names, a
            chain longer than `READ_LIMIT`, a base that is not a msgpack array, or a malformed
            delta or payload.
    """
    if not is_delta(type_name):
        return expand(type_name, data)
    pieces: list[bytes | memoryview] = []
    total = -1
    while is_delta(type_name):
        if len(pieces) >= READ_LIMIT:
            raise ValueError(f"a delta chain longer than {READ_LIMIT} entries")
        delta = split(type_name, data)
        elements_type, elements = expand(delta.elements_type, delta.elements)
        if elements_type != DELTA_TYPE:
            raise ValueError(f"a delta of serde type {elements_type!r}")
        if total < 0:
            total = delta.count
        pieces.append(elements)
        stored = lookup(delta.link)
        if stored is None:
            raise ValueError(f"the log entry {delta.link} a delta extends holds no value of its channel")
        if len(stored) != delta.link_size:
            raise ValueError(f"the log entry {delta.link} holds another value than the delta extends")
        _channel, version, link_type, data = unpack(stored)
        if version != delta.link_version:
            raise ValueError(f"the log entry {delta.link} holds another version than the delta extends")
        type_name = link_type.decode()
    base_type, base = expand(type_name, data)
    header = read_header(base)
    if base_type != DELTA_TYPE or header is None:
        raise ValueError("the base of a delta is not a msgpack array")
    pieces.append(memoryview(base)[header[1]:])  # not copied before the join: a base is most of a value
    pieces.append(array_header(total))
    pieces.reverse()
    return DELTA_TYPE, b"".join(pieces)
