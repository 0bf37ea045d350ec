"""Binary packing, key escaping, tags and canonical JSON behave as their contracts say."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamsaver.log.codec import (
    canonical_json,
    escape,
    metadata_tags,
    pack,
    tag,
    unpack,
    unpack_head,
    unpack_head_1_of_3,
    unpack_head_2_of_4,
    unpack_none_of_2,
)


@given(st.lists(st.binary(max_size=64), max_size=20))
def test_pack_then_unpack_gives_back_the_parts(parts: list[bytes]) -> None:
    assert unpack(pack(parts)) == parts


@pytest.mark.parametrize("bad", [b"\x00\x00", b"\x00\x00\x00\x05abc"])
def test_unpack_rejects_truncated_input(bad: bytes) -> None:
    with pytest.raises(ValueError, match="truncated"):
        unpack(bad)


@given(st.lists(st.binary(max_size=64), min_size=1, max_size=6), st.data())
def test_unpack_head_gives_the_first_parts_of_a_packing_of_exactly_that_many(
    parts: list[bytes], data: st.DataObject
) -> None:
    keep = data.draw(st.integers(0, len(parts)))
    assert unpack_head(pack(parts), keep, len(parts)) == parts[:keep]
    with pytest.raises(ValueError, match="truncated length prefix"):
        unpack_head(pack(parts), keep, len(parts) + 1)
    with pytest.raises(ValueError, match="not a packing of"):
        unpack_head(pack(parts), 0, len(parts) - 1)


@given(st.text(), st.text())
def test_escape_is_injective_and_uses_only_safe_characters(a: str, b: str) -> None:
    assert re.fullmatch(r"[A-Za-z0-9._%-]*", escape(a))
    assert (escape(a) == escape(b)) == (a == b)


def test_escape_keeps_ordinary_ids_readable_and_hides_separators() -> None:
    assert escape("1ef-abc_9.x") == "1ef-abc_9.x"
    assert escape("a:b{c}") == "a%3Ab%7Bc%7D"
    assert escape("é") == "%C3%A9"


def test_tag_is_a_fixed_length_hex_digest() -> None:
    assert re.fullmatch(r"[0-9a-f]{20}", tag("@th:{x} | *"))
    assert tag("a") != tag("b")
    assert tag("") == tag(b"")


def test_canonical_json_ignores_key_order_and_integral_float_spelling() -> None:
    assert canonical_json({"b": 2.0, "a": [1.0]}) == canonical_json({"a": [1], "b": 2})
    assert canonical_json(True) != canonical_json(1)
    assert canonical_json(2.5) != canonical_json(2)


def test_metadata_tags_differ_by_key_and_by_value() -> None:
    tags = metadata_tags([("step", 1), ("step", "1"), ("stage", 1)])
    assert len(set(tags)) == 3


def test_strict_json_refuses_values_that_would_read_back_as_another_type() -> None:
    import dataclasses
    import datetime

    from streamsaver.log.codec import strict_json

    @dataclasses.dataclass
    class Point:
        x: int

    class Name(str):
        pass

    for value in (datetime.datetime(2026, 1, 1), Point(1), Name("n")):
        with pytest.raises(TypeError):
            strict_json({"k": value})
    assert strict_json({"pair": (1, 2)}) == b'{"pair":[1,2]}'


_METADATA_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@given(st.text(max_size=20), _METADATA_VALUES)
def test_metadata_tags_are_the_digest_of_the_canonical_pair_whatever_the_value(key: str, value: object) -> None:
    assert metadata_tags([(key, value)]) == [tag(canonical_json([key, value]))]


@pytest.mark.parametrize("value", [{}, [], 2.0, {"b": 1, "a": 2.0}, [1.0]])
def test_metadata_tags_of_empty_and_normalized_values_are_canonical(value: object) -> None:
    assert metadata_tags([("k", value)]) == [tag(canonical_json(["k", value]))]


@given(st.lists(st.binary(max_size=64), min_size=2, max_size=5))
def test_the_unrolled_heads_read_and_refuse_as_unpack_head_does(parts: list[bytes]) -> None:
    unrolled = {(0, 2): unpack_none_of_2, (1, 3): unpack_head_1_of_3, (2, 4): unpack_head_2_of_4}
    for (keep, count), head in unrolled.items():
        data = pack(parts)
        if len(parts) == count:
            assert head(data) == {0: None, 1: parts[0], 2: tuple(parts[:2])}[keep]
            for bad in (data[:-1], data + b"\x00", data + b"\x00\x00\x00\x00"):
                with pytest.raises(ValueError, match=r"truncated|not a packing of"):
                    head(bad)
        else:
            with pytest.raises(ValueError, match=r"truncated|not a packing of"):
                head(data)
