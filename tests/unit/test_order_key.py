"""`order_key` never orders two checkpoint ids against their string order (the index finds the
newest checkpoints through it, and the exact order among ties comes from the ids), it is exact
in a double, and it separates uuid6 ids made a few milliseconds apart."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.base.id import uuid6

from streamsaver.log.codec import order_key

uuid_like = st.text(alphabet=st.sampled_from("-0123456789abcdef"), max_size=16)
odd_bytes = st.text(alphabet=st.sampled_from("-0123456789abcdef:zA_.\x00\x7fé字"), max_size=16)
ids = st.one_of(uuid_like, odd_bytes, st.text(max_size=14))


def _utf8(s: str) -> bytes:
    return s.encode("utf-8", "surrogatepass")


@settings(max_examples=3000)
@given(ids, ids)
def test_the_key_never_contradicts_the_order_of_ids(a: str, b: str) -> None:
    if _utf8(a) < _utf8(b):
        assert order_key(a) <= order_key(b)
    assert 0 <= order_key(a) < 2**53


def _uuid6(ticks: int) -> str:
    """A version-6 uuid string for a time in 100 ns ticks (the layout LangGraph's ids have)."""
    return f"{ticks >> 28:08x}-{(ticks >> 12) & 0xFFFF:04x}-6{ticks & 0xFFF:03x}-8000-000000000000"


def test_uuid6_ids_7_ms_apart_get_increasing_keys() -> None:
    now = 139_000_000_000_000_000  # 2023 in 100 ns ticks since 1582
    made = [_uuid6(now + k * 70_000) for k in range(50)]
    assert made == sorted(made)
    assert str(uuid6(clock_seq=0))[:8] > made[0][:8]  # the same layout as LangGraph's own ids
    keys = [order_key(i) for i in made]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)


def test_ids_sharing_the_first_twelve_characters_tie() -> None:
    assert order_key("1f1e7380-c3e0") == order_key("1f1e7380-c3e9") == order_key("1f1e7380-c3e")
    assert order_key("1f1e7380-c3e") < order_key("1f1e7380-c3f")
