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
memory goes. Why python-zstandard rather than the stdlib's `compression.zstd` (3.14, and its
backport): its contexts are reused call after call, where the stdlib's one-shot calls make a
context each (~8-10 µs, more than expanding a step's payload: reading a checkpoint expands
three).
"""

from __future__ import annotations

from typing import Any

import zstandard
from langgraph.checkpoint.serde.base import SerializerProtocol

from streamsaver.log import deltas
from streamsaver.log.events import Blob

__all__ = [
    "LEVEL", "LOAD_ERRORS", "MIN_BYTES", "Expanded", "expand", "is_compressed", "joined", "keep", "load", "load_linked",
    "load_stored",
    "remembering_expand", "shrink",
]

MIN_BYTES = 4096
"""Smaller payloads are stored as they are. A step's body, its writes and the deltas of a growing
list (`streamsaver.log.deltas`) are below it; whole lists are above. At 512 those small payloads
compressed too (7.8 KiB a checkpoint of the benchmark's conversation, against 9.0 at 4096),
but each compression releases the GIL, and on LangGraph's sync loop, where `put` runs on a pool
thread beside the next superstep, getting it back can wait for the switch interval: the agent
loop ran 5-12% more supersteps a second at 4096 (alternated runs, benchmarks/README.md)."""

LEVEL = 3
"""zstd's default level: ratio close to zlib's level 6 at a sixth of its cost."""

LOAD_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError, NotImplementedError)
"""What a malformed payload raises while being unpacked or loaded (orjson's and the serdes'
decode errors are ValueErrors, UnicodeDecodeError and a damaged zstd frame too;
JsonPlusSerializer raises NotImplementedError for a type it does not know)."""

_ZSTD = "zstd:"
_RAW = "raw:"
_RATIO_BITS = 15
"""A frame of n bytes holds at most n << 15 bytes of content: every block of up to 128 KiB
takes at least 4 bytes (an RLE block); 100 MiB of zeros at any level take ~3.2 KiB."""

_IDLE_MAX = 16
"""How many idle contexts of each kind are kept for later calls (more are dropped): a context
of the 16 KiB class holds ~0.15 MB, of the 128 KiB class ~0.95 MB (`_CLASSES`), and the lists
never give one back to the allocator, so they hold ~18 MB at worst (LangGraph's sync loop
makes up to six calls at once)."""

_idle_compressors: dict[int, list[zstandard.ZstdCompressor]] = {}
"""Idle contexts per size class (the class's bound, `_CLASSES`)."""
_idle_decompressors: list[zstandard.ZstdDecompressor] = []


def _sized(window_log: int, tables_log: int) -> zstandard.ZstdCompressionParameters:
    return zstandard.ZstdCompressionParameters(
        window_log=window_log, hash_log=tables_log, chain_log=tables_log, search_log=1, min_match=5,
        target_length=0, strategy=zstandard.STRATEGY_DFAST, write_checksum=1, write_content_size=1,
    )


_CLASSES = ((16 << 10, _sized(14, 11)), (128 << 10, _sized(17, 12)))
"""Contexts by input size, below each bound: level 3's strategy (``dfast``) with a window that
holds the whole input and match tables of 2 x 8 KiB (below 16 KiB: a delta's elements) or
2 x 16 KiB (below 128 KiB: a whole message list). A frame is compressed on a cold cache (the
serde ran in between): level 3 sizes its tables from the input's size, 96 KiB at 7 KiB and
384 KiB at 50 KiB, and resets and probes them from memory on every call, so a 7 KiB delta cost
~77 µs and a 50 KiB list ~245 µs inside a put against ~28 and ~125 on a warm cache. With these
tables: ~50 and ~125 µs, frames within 0.15% of level 3's size (the put benchmark's
conversation, `benchmarks/compression_tables.py`). Every reader expands any frame (its header
names its window)."""


def _new_compressor(params: zstandard.ZstdCompressionParameters | None = None) -> zstandard.ZstdCompressor:
    if params is not None:
        return zstandard.ZstdCompressor(compression_params=params)
    return zstandard.ZstdCompressor(level=LEVEL, write_checksum=True, write_content_size=True)


def _compress(data: bytes) -> bytes:
    """One zstd frame of `data`, with its size and a checksum.

    Contexts are reused call after call from process-wide free lists (one per size class,
    `_CLASSES`), not one per thread: LangGraph runs each `invoke`'s checkpointer calls on a new
    thread pool, so a context per thread was made anew (and sized anew on its first frame:
    ~80 us for a 5 KiB frame, against ~20 us on a reused one) several times per invoke.
    ``list.pop`` and ``append`` are atomic, so a context is used by one call at a time.
    Payloads of 128 KiB or more get a level-3 context of their own, freed after: a context
    keeps the tables its largest input needed (~1.3 MB after 128 KiB, ~2.6 MB after 1 MiB),
    and making one costs ~20-80 µs, little beside compressing 128 KiB (~0.3 ms). Frames carry
    their content size (read in one call) and a checksum of the content (4 bytes): without
    one, a damaged frame often decompresses to other, wrong bytes instead of failing. One-shot
    calls reset the context's session, so no frame carries another's bytes."""
    sized = next((c for c in _CLASSES if len(data) < c[0]), None)
    if sized is None:
        return _new_compressor().compress(data)
    bound, params = sized
    idle = _idle_compressors.setdefault(bound, [])
    try:
        compressor = idle.pop()
    except IndexError:
        compressor = _new_compressor(params)
    try:
        return compressor.compress(data)
    finally:
        if len(idle) < _IDLE_MAX:
            idle.append(compressor)


def _decompress(data: bytes) -> bytes:
    """The content of one zstd frame; bytes after it, a truncated frame, a checksum that does
    not match or a header whose content size the frame cannot hold raise `zstandard.ZstdError`.
    Contexts come from a free list, as in `_compress`."""
    size = zstandard.frame_content_size(data)
    if size > len(data) << _RATIO_BITS:
        # The header's size is not covered by the checksum, and the one-shot call allocates it.
        raise zstandard.ZstdError(
            f"the header claims {size} bytes of content, more than a frame of {len(data)} bytes holds"
        )
    if size <= 0:
        # A header without the size (not one this package writes) or claiming none (damage: the
        # one-shot call answers b"" unread, checksum unchecked) is read as a stream, which checks
        # both; with a context of its own, so that a window a damaged header asks for is not kept.
        stream = zstandard.ZstdDecompressor().decompressobj()
        content = stream.decompress(data)
        if not stream.eof or stream.unused_data:
            raise zstandard.ZstdError("a frame without its size that is truncated or followed by other bytes")
        return content
    try:
        decompressor = _idle_decompressors.pop()
    except IndexError:
        decompressor = zstandard.ZstdDecompressor()
    try:
        return decompressor.decompress(data, allow_extra_data=False)
    finally:
        if len(_idle_decompressors) < _IDLE_MAX:
            _idle_decompressors.append(decompressor)


def shrink(blob: Blob) -> Blob:
    """`blob` as it is stored: compressed when it is large and compression pays."""
    if len(blob.data) >= MIN_BYTES:
        packed = _compress(blob.data)
        if len(packed) <= len(blob.data) - (len(blob.data) >> 3):
            return Blob(_ZSTD + blob.type, packed)
    return keep(blob)


def keep(blob: Blob) -> Blob:
    """`blob` as it is stored uncompressed (its type escaped when it collides with a marker)."""
    if blob.type.startswith((_ZSTD, _RAW, deltas.MARK)):
        return Blob(_RAW + blob.type, blob.data)
    return blob


def is_compressed(blob: Blob) -> bool:
    """Whether `blob` (as stored) holds a compressed payload (a delta: its elements)."""
    return blob.type.removeprefix(deltas.MARK).startswith(_ZSTD)


def expand(blob: Blob) -> Blob:
    """The blob the serde wrote, from its stored form.

    Raises:
        ValueError: a compressed payload that does not decompress (readers report it as a
            `PayloadDecodeError` naming its log entry, like any payload the serde refuses).
    """
    type_name, data = _serde_form(blob.type, blob.data)
    return Blob(type_name, data)


def load(serde: SerializerProtocol, blob: Blob) -> Any:
    """The value `blob` (as stored) holds, loaded by `serde`.

    Raises:
        ValueError: a corrupt compressed payload; and whatever `serde.loads_typed` raises.
    """
    return serde.loads_typed(_serde_form(blob.type, blob.data))


def load_stored(serde: SerializerProtocol, type_name: str, data: bytes) -> Any:
    """`load` of a stored blob given by its parts, as the read path has them (no `Blob` made).

    Raises:
        ValueError: a corrupt compressed payload; and whatever `serde.loads_typed` raises.
    """
    return serde.loads_typed(_serde_form(type_name, data))


def load_linked(
    serde: SerializerProtocol, type_name: str, data: bytes, links: deltas.Lookup, expand: deltas.Expand | None = None
) -> Any:
    """`load_stored` of a channel value that may be a delta (`streamsaver.log.deltas`), whose links
    `links` finds: the one place every reader joins a delta. `expand` (default: expand anew)
    may be a `remembering_expand` shared by the values of one read.

    Raises:
        ValueError: a corrupt payload or a broken chain; and whatever `serde.loads_typed` raises.
    """
    return serde.loads_typed(deltas.join(type_name, data, links, expand or _serde_form))


def remembering_expand() -> deltas.Expand:
    """An expand for `load_linked` that expands each stored payload once: the rows of one read
    (a page of a thread) join with the same base, a large value to decompress again per row."""
    seen: dict[tuple[str, bytes], tuple[str, bytes]] = {}

    def expand(type_name: str, data: bytes) -> tuple[str, bytes]:
        if not type_name.startswith(_ZSTD):
            return _serde_form(type_name, data)  # nothing to save: keep no reference to it
        key = (type_name, data)
        found = seen.get(key)
        if found is None:
            found = seen[key] = _serde_form(type_name, data)
        return found

    return expand


class Expanded:
    """The serde forms of compressed payloads, by their stored form, at most about `max_bytes`
    of them, shared by the reads of one saver (its read cache's): the base of a thread's
    ``messages`` deltas is joined by every read of its later checkpoints, and expanding it
    again each time was a tenth of a read's client instructions. Bytes only, never decoded
    values; nothing to invalidate (a stored form always expands to the same bytes). Forgets
    everything when full (cheaper than keeping an order; safe between threads under the GIL,
    the count of bytes only approximate)."""

    __slots__ = ("forms", "max_bytes", "size")

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes, self.size = max_bytes, 0
        self.forms: dict[tuple[str, bytes], tuple[str, bytes]] = {}

    def expand(self, type_name: str, data: bytes) -> tuple[str, bytes]:
        """`deltas.Expand`, remembering what it decompressed.

        Raises:
            ValueError: as `expand`.
        """
        if not type_name.startswith(_ZSTD):
            return _serde_form(type_name, data)
        key = (type_name, data)
        found = self.forms.get(key)
        if found is None:
            found = _serde_form(type_name, data)
            cost = len(found[1]) + len(data)
            if self.size + cost > self.max_bytes:
                self.forms.clear()
                self.size = 0
            if cost <= self.max_bytes:
                self.forms[key] = found
                self.size += cost
        return found


def joined(blob: Blob, links: deltas.Lookup) -> Blob:
    """The serde form of a stored channel value that may be a delta (for a rewrite that stores
    it whole: `shrink` or `keep` it again).

    Raises:
        ValueError: a corrupt payload or a broken chain.
    """
    return Blob(*deltas.join(blob.type, blob.data, links, _serde_form))



def _serde_form(type_name: str, data: bytes) -> tuple[str, bytes]:
    """The type name and bytes the serde wrote, from a stored payload's.

    Raises:
        ValueError: a compressed payload that does not decompress, or a delta (which needs
            its links: `load_linked`).
    """
    if type_name.startswith(deltas.MARK):
        raise ValueError("a delta read without the values it extends")
    if type_name.startswith(_ZSTD):
        try:
            return type_name[len(_ZSTD):], _decompress(data)
        except zstandard.ZstdError as exc:
            raise ValueError(f"a compressed payload is corrupt: {exc}") from exc
    return type_name.removeprefix(_RAW), data
