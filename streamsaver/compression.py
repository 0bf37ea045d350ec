"""Compression of large payloads, between the serde and the log. Pure, no I/O.

A serialized value (`Blob`) of at least `MIN_BYTES` is stored zstd-compressed when that saves at
least an eighth of its size; its stored type name then reads ``zstd:<serde type>``. Every
reader passes stored blobs through `expand` before the serde sees them, so a saver, a
subscriber or a tool decodes a compressed payload whatever its own compression setting.
Payloads from an `EncryptedSerializer` do not compress (ciphertext looks random): the saver
does not try (see `SaverCore.compress`).

The stored type names stay unambiguous: a serde type that itself starts with ``zstd:`` or
``raw:`` is stored as ``raw:<type>``. Ordinary serde types (``msgpack``, ``json``, ``bytes``,
``null``, ``empty``, ...) are stored as they are, so logs written before compression existed
read back unchanged.

Why zstd: on LangGraph message lists (JsonPlusSerializer's msgpack) level 3 shrinks ~5-6x at
~2 µs per KiB to compress and ~1 µs per KiB to expand, against zlib's ~4.6x at 4.5 µs per KiB
(level 1); the log, which holds every version of every large channel, is where a deployment's
memory goes.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol

from streamsaver.events import Blob

if sys.version_info >= (3, 14):
    from compression import zstd
    from compression.zstd import CompressionParameter
else:
    from backports import zstd
    from backports.zstd import CompressionParameter

__all__ = ["LEVEL", "LOAD_ERRORS", "MIN_BYTES", "expand", "keep", "load", "shrink"]

MIN_BYTES = 512
"""Smaller payloads are stored as they are: below this, compression saves little and costs a call.
At 512, a step's checkpoint body (~580 bytes, to ~300) and the write of its new messages (~700,
to ~340) compress too: ~0.6 KiB less per checkpoint than at 1 KiB."""

LEVEL = 3
"""zstd's default level: ratio close to zlib's level 6 at a sixth of its cost."""

LOAD_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError, NotImplementedError)
"""What a malformed payload raises while being unpacked or loaded (orjson's and the serdes'
decode errors are ValueErrors, UnicodeDecodeError and a damaged zstd frame too;
JsonPlusSerializer raises NotImplementedError for a type it does not know)."""

_ZSTD = "zstd:"
_RAW = "raw:"
_OPTIONS: dict[int, int] = {CompressionParameter.compression_level: LEVEL, CompressionParameter.checksum_flag: 1}
"""Each frame carries a checksum of its content (4 bytes): without one, a damaged frame often
decompresses to other, wrong bytes instead of failing."""


_local = threading.local()


_REUSED_BELOW = 8192
"""Payloads smaller than this share a compressor: a context reused for inputs of very different
sizes is resized at each switch, which made a step's large messages list slower to compress."""


def _compress(data: bytes) -> bytes:
    """One zstd frame of `data`. A small payload takes this thread's compressor, reused frame
    after frame: making one costs ~8 µs, more than compressing 1 KiB with it (~2.5 µs)."""
    if len(data) >= _REUSED_BELOW:
        fresh: bytes = zstd.compress(data, options=_OPTIONS)
        return fresh
    compressor = getattr(_local, "compressor", None)
    if compressor is None:
        compressor = _local.compressor = zstd.ZstdCompressor(options=_OPTIONS)
    try:
        packed: bytes = compressor.compress(data, mode=zstd.ZstdCompressor.FLUSH_FRAME)
    except BaseException:
        _local.compressor = None  # a frame left half-written must not begin the next one
        raise
    return packed


def shrink(blob: Blob) -> Blob:
    """`blob` as it is stored: compressed when it is large and compression pays."""
    if len(blob.data) >= MIN_BYTES:
        packed = _compress(blob.data)
        if len(packed) <= len(blob.data) - (len(blob.data) >> 3):
            return Blob(_ZSTD + blob.type, packed)
    return keep(blob)


def keep(blob: Blob) -> Blob:
    """`blob` as it is stored uncompressed (its type escaped when it collides with a marker)."""
    if blob.type.startswith((_ZSTD, _RAW)):
        return Blob(_RAW + blob.type, blob.data)
    return blob


def expand(blob: Blob) -> Blob:
    """The blob the serde wrote, from its stored form.

    Raises:
        ValueError: a compressed payload that does not decompress (readers report it as a
            `PayloadDecodeError` naming its log entry, like any payload the serde refuses).
    """
    if blob.type.startswith(_ZSTD):
        try:
            return Blob(blob.type[len(_ZSTD):], zstd.decompress(blob.data))
        except zstd.ZstdError as exc:
            raise ValueError(f"a compressed payload is corrupt: {exc}") from exc
    if blob.type.startswith(_RAW):
        return Blob(blob.type[len(_RAW):], blob.data)
    return blob


def load(serde: SerializerProtocol, blob: Blob) -> Any:
    """The value `blob` (as stored) holds, loaded by `serde`.

    Raises:
        ValueError: a corrupt compressed payload; and whatever `serde.loads_typed` raises.
    """
    plain = expand(blob)
    return serde.loads_typed((plain.type, plain.data))
