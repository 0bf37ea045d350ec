"""The stored form of a payload: large compressible ones compressed, every one recovered exactly,
and no serde type name mistaken for a marker."""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor

from hypothesis import given
from hypothesis import strategies as st

from streamsaver.compression import MIN_BYTES, expand, keep, shrink
from streamsaver.events import Blob

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

type_names = st.one_of(
    st.sampled_from(["msgpack", "json", "bytes", "null", "empty", "msgpack+aes", "zstd:", "raw:", "zstd:msgpack", "raw:raw:x"]),
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
    """Compressors are reused frame after frame, one per thread: no frame may carry another's
    bytes, however the threads interleave."""
    blobs = [Blob("msgpack", os.urandom(48) * (k + 12)) for k in range(60)]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(4):
            for blob, stored in zip(blobs, pool.map(shrink, blobs)):
                assert stored.type == "zstd:msgpack"
                assert zstd.get_frame_size(stored.data) == len(stored.data)
                assert expand(stored) == blob
