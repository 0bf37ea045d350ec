"""The stored form of a payload: large compressible ones compressed, every one recovered exactly,
and no serde type name mistaken for a marker."""

from __future__ import annotations

import os
import random
from concurrent.futures import ThreadPoolExecutor

import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from streamsaver.log import compression
from streamsaver.log.compression import MIN_BYTES, expand, keep, shrink
from streamsaver.log.events import Blob

type_names = st.one_of(
    st.sampled_from(
        ["msgpack", "json", "bytes", "null", "empty", "msgpack+aes", "zstd:", "raw:", "zstd:msgpack", "raw:raw:x"]
    ),
    st.text(max_size=20),
)
payloads = st.one_of(
    st.binary(max_size=3 * MIN_BYTES),
    st.builds(lambda word, n: word * n, st.binary(min_size=1, max_size=8), st.integers(0, 2 * MIN_BYTES)),
)


@given(type_names, payloads)
def test_every_stored_form_expands_to_what_the_serde_wrote(type_: str, data: bytes) -> None:
    blob = Blob(type_, data)
    assert expand(shrink(blob)) == blob
    assert expand(keep(blob)) == blob


def test_a_large_repetitive_payload_is_compressed_and_a_small_one_is_not() -> None:
    large = Blob("msgpack", b"agent tool call result " * 200)
    small = Blob("msgpack", b"agent tool call result " * 10)
    assert shrink(large).type == "zstd:msgpack" and len(shrink(large).data) < len(large.data) // 10
    assert shrink(small) == small


def test_random_bytes_are_kept_as_they_are() -> None:
    noise = Blob("bytes", os.urandom(4 * MIN_BYTES))
    assert shrink(noise) == noise


def test_ordinary_type_names_are_stored_unchanged_so_old_logs_read_the_same() -> None:
    for name in ("msgpack", "json", "bytes", "null", "empty", "msgpack+aes"):
        assert keep(Blob(name, b"x")) == Blob(name, b"x")
        assert expand(Blob(name, b"x")) == Blob(name, b"x")


def test_each_stored_payload_is_one_whole_frame_from_any_thread() -> None:
    """Compressors are reused frame after frame, shared by every thread (one call at a time): no
    frame may carry another's bytes, however the threads interleave."""
    blobs = [Blob("msgpack", os.urandom(48) * (k + MIN_BYTES // 48 + 1)) for k in range(60)]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(4):
            for blob, stored in zip(blobs, pool.map(shrink, blobs), strict=True):
                assert stored.type == "zstd:msgpack"
                assert zstandard.frame_content_size(stored.data) == len(blob.data)
                assert expand(stored) == blob


def test_threads_that_come_and_go_reuse_the_same_contexts() -> None:
    """LangGraph runs each invoke's saver calls on a new thread pool: a thread started after
    another has ended takes the context that one left, instead of making (and sizing) its own."""
    large = Blob("msgpack", b"agent tool call result " * 200)
    stored = shrink(large)
    compressors = sum(map(len, compression._idle_compressors.values()))
    decompressors = len(compression._idle_decompressors)
    for _ in range(8):
        with ThreadPoolExecutor(1) as pool:  # a new thread each time, the previous one ended
            assert pool.submit(shrink, large).result() == stored
            assert pool.submit(expand, stored).result() == large
    assert sum(map(len, compression._idle_compressors.values())) == compressors
    assert len(compression._idle_decompressors) == max(decompressors, 1)


def test_a_frame_with_bytes_after_it_or_cut_short_is_refused_as_damage() -> None:
    """A stored payload is one whole frame: trailing bytes (another frame too), a frame cut
    short or one whose checksum fails raise ValueError (readers name the entry), never a
    quietly different value."""
    stored = shrink(Blob("msgpack", b"agent tool call result " * 200))
    frame = stored.data
    flipped = frame[:20] + bytes([frame[20] ^ 1]) + frame[21:]
    for damaged in (frame + b"xy", frame + frame, frame[:-3], flipped):
        with pytest.raises(ValueError, match="corrupt"):
            expand(Blob(stored.type, damaged))


def test_a_frame_without_its_size_in_the_header_still_reads() -> None:
    """Frames written by another zstd writer may leave the content size out (streaming mode)."""
    data = b"agent tool call result " * 200
    stream = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    frame = stream.compress(data) + stream.flush()
    assert zstandard.frame_content_size(frame) == -1  # unknown
    assert expand(Blob("zstd:msgpack", frame)) == Blob("msgpack", data)
    with pytest.raises(ValueError, match="corrupt"):
        expand(Blob("zstd:msgpack", frame[:-2]))


def test_a_payload_of_128_kib_or_more_compresses_to_one_frame_and_reads_back() -> None:
    """Large payloads get a context of their own (a thread's reused one would keep their tables)."""
    blob = Blob("msgpack", b"".join(b"message %d: agent tool call result " % n for n in range(40_000)))
    assert len(blob.data) >= 128 << 10
    stored = shrink(blob)
    assert stored.type == "zstd:msgpack" and zstandard.frame_content_size(stored.data) == len(blob.data)
    assert expand(stored) == blob


def test_a_saver_expands_each_compressed_payload_once_within_its_bound() -> None:
    stored = [shrink(Blob("msgpack", bytes([n]) * 3 * MIN_BYTES)) for n in range(3)]
    assert all(blob.type == "zstd:msgpack" for blob in stored)
    expanded = compression.Expanded(max_bytes=7 * MIN_BYTES)  # room for two
    first = expanded.expand(stored[0].type, stored[0].data)
    assert first == ("msgpack", bytes([0]) * 3 * MIN_BYTES)
    assert expanded.expand(stored[0].type, bytes(stored[0].data)) is first  # the same stored bytes
    expanded.expand(stored[1].type, stored[1].data)
    expanded.expand(stored[2].type, stored[2].data)  # full: forgets the others
    assert list(expanded.forms) == [(stored[2].type, stored[2].data)]
    assert expanded.expand("msgpack", b"plain") == ("msgpack", b"plain")  # nothing kept of it
    with pytest.raises(ValueError, match="corrupt"):
        expanded.expand("zstd:msgpack", stored[2].data[:-3])
    assert len(expanded.forms) == 1


@pytest.mark.parametrize("size", [5 << 10, 15 << 10, 17 << 10, 100 << 10, 200 << 10])
def test_frames_of_every_size_class_carry_size_and_checksum_and_read_with_a_default_decompressor(size: int) -> None:
    """Frames below 16 KiB and below 128 KiB come from contexts with small match tables, larger
    ones from level 3: each is one frame with its content size and a checksum, that a default
    context (any reader's, of any version) expands to the payload."""
    words = [b"agent", b"tool", b"result", b"thread", b"state", b"graph"]
    rng = random.Random(size)
    data = b" ".join(rng.choice(words) for _ in range(size // 4))[:size]
    stored = shrink(Blob("msgpack", data))
    assert stored.type == "zstd:msgpack"
    parameters = zstandard.get_frame_parameters(stored.data)
    assert parameters.content_size == len(data)
    assert parameters.has_checksum
    assert zstandard.ZstdDecompressor().decompress(stored.data) == data
    assert expand(stored) == Blob("msgpack", data)
