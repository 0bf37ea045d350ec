"""Values decoded while a read is in flight (`streamsaver.checkpoints.guesses`), without Redis: a
guess is handed out only for the very bytes it was decoded from, joined with the very same links,
and only once."""

from __future__ import annotations

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from streamsaver.checkpoints.guesses import GUESS_MIN_BYTES, Guesses, expected
from streamsaver.log import deltas
from streamsaver.log.codec import pack

SERDE = JsonPlusSerializer()
FIELD = b"c:messages"


def packed(value: object, version: bytes = b'"1"') -> bytes:
    type_, data = SERDE.dumps_typed(value)
    return pack([b"messages", version, type_.encode(), data])


def delta(base_entry: bytes, base: bytes, added: list[str], count: int) -> bytes:
    _, elements = SERDE.dumps_typed(added)
    header = deltas.read_header(elements)
    assert header is not None
    type_, data = deltas.encode(base_entry.decode(), b'"1"', len(base), count, "msgpack", elements[header[1] :])
    return pack([b"messages", b'"2"', type_.encode(), data])


def test_a_value_decoded_ahead_is_handed_out_once_for_the_same_bytes() -> None:
    stored = packed(["a", "b"])
    guesses = Guesses()
    guesses.decode(SERDE, [stored], {})
    assert guesses.take(packed(["a", "c"]), {}) == (False, None)
    assert guesses.take(bytes(stored), {}) == (True, ["a", "b"])  # equal bytes, another object
    assert guesses.take(stored, {}) == (False, None)  # handed out once: LangGraph mutates it


def test_a_delta_is_taken_only_when_its_link_holds_the_same_bytes() -> None:
    base, other_base = packed(["a", "b"]), packed(["x", "y"])
    assert len(base) == len(other_base)
    stored = delta(b"1-0", base, ["c"], 3)
    guesses = Guesses()
    guesses.decode(SERDE, [stored], {(b"1-0", FIELD): base})
    assert guesses.take(stored, {(b"1-0", FIELD): other_base}) == (False, None)

    guesses = Guesses()
    guesses.decode(SERDE, [stored], {(b"1-0", FIELD): base})
    assert guesses.take(stored, {(b"1-0", FIELD): bytes(base)}) == (True, ["a", "b", "c"])


def test_a_value_that_does_not_decode_is_left_to_the_read() -> None:
    broken = delta(b"1-0", packed(["a"]), ["b"], 2)
    guesses = Guesses()
    guesses.decode(SERDE, [b"not a packing", broken], {})  # the delta's link is not at hand
    assert not guesses
    assert guesses.take(broken, {}) == (False, None)


class Refusing(JsonPlusSerializer):
    """A custom serde that raises its own error (none of `compression.LOAD_ERRORS`) on a value."""

    def loads_typed(self, data: tuple[str, bytes]) -> object:
        if b"refused" in data[1]:
            raise LookupError("this serde refuses the value")
        return super().loads_typed(data)


def test_a_value_the_serde_raises_anything_on_is_left_to_the_read() -> None:
    refused, fine = packed(["refused"]), packed(["fine"])
    guesses = Guesses()
    guesses.decode(Refusing(), [refused, fine], {})
    assert guesses.take(refused, {}) == (False, None)
    assert guesses.take(fine, {}) == (True, ["fine"])


def test_decoding_runs_once_per_read() -> None:
    stored = packed(["a"])
    guesses = Guesses()
    guesses.decode(SERDE, [stored], {})
    assert guesses.take(stored, {}) == (True, ["a"])
    guesses.decode(SERDE, [stored], {})  # a driver that sent again
    assert guesses.take(stored, {}) == (False, None)


def entry(kind: bytes, cid: bytes, ns: bytes = b"", **channels: bytes) -> dict[bytes, bytes]:
    out = {b"type": kind, b"ns": ns, b"cid": cid}
    out.update({b"c:" + name.encode(): value for name, value in channels.items()})
    return out


def test_the_expected_values_are_the_deltas_and_large_values_of_the_checkpoint_asked_for() -> None:
    big, small = packed(["m" * GUESS_MIN_BYTES]), packed(1)
    base = packed(["a"])
    linked = delta(b"1-0", base, ["b"], 2)
    entries = {
        b"9-0": entry(b"CheckpointSaved", b"c9", ns=b"sub", messages=big),
        b"3-0": entry(b"CheckpointSaved", b"c3", messages=linked, step=small),
        b"3-1": entry(b"WritesSaved", b"c3"),
        b"10-0": entry(b"CheckpointSaved", b"c10", messages=big, step=small),
        b"1-0": entry(b"CheckpointSaved", b"c1", messages=base),
    }
    assert expected(entries, b"", b"") == [big]  # the newest of the namespace (10-0 sorts after 9-0)
    assert expected(entries, b"", b"c3") == [linked]
    assert expected(entries, b"sub", b"") == [big]
    assert expected(entries, b"", b"c7") == []
