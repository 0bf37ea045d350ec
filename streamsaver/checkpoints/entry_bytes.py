"""A thread log entry as the read cache holds it (stored bytes, never decoded), without I/O: what
its deltas link to, where its id falls in log order, and an append's argument as the server
stores it (`streamsaver.checkpoints.entry_cache`)."""

from __future__ import annotations

import struct
from collections.abc import Sequence

from streamsaver.log import deltas
from streamsaver.log.codec import unpack

__all__ = ["Arg", "Entry", "entry_of", "id_order", "links_of", "stored_type", "wire_bytes"]

Entry = dict[bytes, bytes]
"""A log entry: field -> stored value."""

Arg = str | bytes | int | float
"""An append's argument, as the saver sent it."""

_LENGTH = struct.Struct(">I").unpack_from
_DELTA = deltas.MARK.encode()


def links_of(entry: Entry) -> tuple[bytes, ...] | None:
    """The entries the deltas among `entry`'s channel values link to; None when a value cannot
    be read (such an entry is never named to the server, so a read ships it and the reader
    names it in its `PayloadDecodeError`)."""
    links = []
    try:
        for name, value in entry.items():
            if name[:2] == b"c:":
                # the stored type is the third part of the packing: found without copying the data
                at = 4 + _LENGTH(value, 0)[0]
                at += 4 + _LENGTH(value, at)[0]
                if value.startswith(_DELTA, at + 4):
                    _, _, type_, data = unpack(value)
                    links.append(deltas.split(type_.decode(), data).link.encode())
                elif at + 4 > len(value):
                    return None
    except (ValueError, UnicodeDecodeError, struct.error):
        return None
    return tuple(links)


def stored_type(value: bytes) -> bytes | None:
    """The serde type of a packed channel value (`streamsaver.log.stored`), found without copying
    its data; None when it cannot be read."""
    try:
        at = 4 + _LENGTH(value, 0)[0]
        at += 4 + _LENGTH(value, at)[0]
        size = _LENGTH(value, at)[0]
    except struct.error:
        return None
    return value[at + 4 : at + 4 + size] if at + 4 + size <= len(value) else None


def id_order(entry_id: bytes) -> tuple[int, int]:
    """A stream entry id as numbers, in log order (unreadable ids first)."""
    ms, _, seq = entry_id.partition(b"-")
    try:
        return int(ms), int(seq or 0)
    except ValueError:
        return -1, -1


def wire_bytes(value: Arg) -> bytes:
    """An argument as the server stores it (as redis-py encodes it)."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return repr(value).encode() if isinstance(value, float) else str(value).encode()


def entry_of(flat: Sequence[bytes]) -> Entry:
    """An entry from a reply's flat field/value list."""
    return dict(zip(flat[::2], flat[1::2], strict=True))
