"""Deltas join back to exactly the bytes the serde wrote (`streamsaver.log.deltas`), whatever the
list holds and however long it grows; the plan stores a delta only for a list that extends the
remembered one, starts a new chain every 8 versions, and a join refuses a chain it cannot trust.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import ormsgpack
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from streamsaver.checkpoints.delta_plan import DeltaMemory
from streamsaver.log import compression, deltas
from streamsaver.log.events import Blob, ChannelValue
from streamsaver.log.stored import encode_channel_value

SERDE = JsonPlusSerializer()


def _element(rng: random.Random, n: int) -> Any:
    kind = rng.randrange(6)
    text = " ".join(rng.choice(["a", "tool", "call", "ünïcode", "x" * 40]) for _ in range(rng.randrange(1, 60)))
    if kind == 0:
        return HumanMessage(text, id=f"h{n}")
    if kind == 1:
        return AIMessage(text, id=f"a{n}", tool_calls=[{"name": "t", "args": {"q": text[:10]}, "id": f"c{n}"}])
    if kind == 2:
        return ToolMessage(text, tool_call_id=f"c{n}", id=f"t{n}")
    if kind == 3:
        return {"n": n, "nested": [text, {"when": datetime(2026, 1, 1, tzinfo=UTC)}]}
    if kind == 4:
        return n
    return (text, n)


class Log:
    """Entries as the log holds them: id -> the stored field of the channel."""

    def __init__(self) -> None:
        self.fields: dict[str, bytes] = {}
        self.memory = DeltaMemory()
        self.version = 0

    def put(self, value: Any, compress: bool = True) -> Blob:
        self.version += 1
        plan = self.memory.plan("t", "", compress)
        blob = plan.blob("messages", self.version, *SERDE.dumps_typed(value))
        entry = f"{self.version}-0"
        self.fields[entry] = encode_channel_value(ChannelValue("messages", self.version, blob))
        if "messages" in plan.pending and not deltas.is_delta(blob.type):
            assert plan.pending["messages"].size == len(self.fields[entry])
        self.memory.commit(plan, entry)
        return blob

    def read(self, blob: Blob) -> tuple[str, bytes]:
        joined = compression.joined(blob, self.fields.get)
        return joined.type, joined.data


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("compress", [True, False])
def test_random_growing_lists_join_to_the_serde_bytes(seed: int, compress: bool) -> None:
    rng = random.Random(seed)
    log, value, stored = Log(), [], []
    for step in range(30):
        if rng.random() < 0.1 and value:
            value = value[: rng.randrange(len(value))]  # a list that shrank: stored whole
        elif rng.random() < 0.05 and value:
            value = [_element(rng, -1), *value[1:]]  # a list that changed inside: stored whole
        value = value + [_element(rng, step * 10 + k) for k in range(rng.randrange(0, 4))]
        blob = log.put(value, compress)
        stored.append(blob)
        assert log.read(blob) == SERDE.dumps_typed(value)
    assert any(deltas.is_delta(b.type) for b in stored)


@pytest.mark.parametrize("sizes", [(10, 15, 16, 17), (14, 16, 40), (65_530, 65_535, 65_536, 65_540)])
def test_array_headers_change_size_at_16_and_65536_elements(sizes: tuple[int, ...]) -> None:
    log = Log()
    padding = "p" * 200  # the first value is large enough for a delta to pay
    for size in sizes:
        value = [padding, *range(size - 1)]
        blob = log.put(value)
        assert log.read(blob) == SERDE.dumps_typed(value)
        assert SERDE.dumps_typed(value)[1].startswith(deltas.array_header(size))
    assert deltas.is_delta(blob.type)


def _growing(steps: int, base: int = 5000, step: int = 100) -> list[list[str]]:
    """Lists that grow by one small element a step after a large first one (deltas stay small
    next to the base, so only the cadence starts new bases)."""
    rng = random.Random(steps)
    elements = ["".join(rng.choice("abcdefghij") for _ in range(base if n == 0 else step)) for n in range(steps)]
    return [elements[: n + 1] for n in range(steps)]


@pytest.mark.parametrize("compress", [True, False])
def test_every_delta_links_to_the_last_full_value_and_holds_everything_since(compress: bool) -> None:
    log = Log()
    values = _growing(20)
    blobs = [log.put(value, compress) for value in values]
    full = [i for i, b in enumerate(blobs) if not deltas.is_delta(b.type)]
    assert full == list(range(0, 20, deltas.MAX_LINKS + 1)) == [0, 8, 16]
    for i, blob in enumerate(blobs):
        if i in full:
            continue
        base = max(f for f in full if f < i)
        delta = deltas.split(blob.type, blob.data)
        assert delta.link == f"{base + 1}-0"  # the base's entry, not the version before
        assert delta.count == len(values[i])
        elements = compression.expand(Blob(delta.elements_type, delta.elements)).data
        assert elements == b"".join(ormsgpack.packb(e) for e in values[i][len(values[base]):])
        followed: list[str] = []
        joined = compression.joined(blob, lambda link, followed=followed: followed.append(link) or log.fields.get(link))
        assert followed == [delta.link]  # a read follows one link
        assert (joined.type, joined.data) == SERDE.dumps_typed(values[i])


def test_a_list_edited_after_the_base_is_still_a_delta() -> None:
    log = Log()
    values = _growing(4)
    for value in values:
        log.put(value)
    edited = [*values[-1][:-1], "an edited last element"]  # after the base's end
    blob = log.put(edited)
    assert deltas.is_delta(blob.type) and log.read(blob) == SERDE.dumps_typed(edited)
    inside = ["an edited base", *values[-1][1:]]
    assert not deltas.is_delta(log.put(inside).type)


@pytest.mark.parametrize("at", [2, 8])
def test_a_retried_put_stores_what_the_first_try_stored(at: int) -> None:
    log = Log()
    values = _growing(10)
    blobs = [log.put(value) for value in values[: at + 1]]
    log.version -= 1  # the same version again, after the first try was logged
    again = log.put(values[at])
    assert again == blobs[at]
    assert deltas.is_delta(again.type) == (at % (deltas.MAX_LINKS + 1) != 0)
    nxt = log.put(values[at + 1])
    base = at - at % (deltas.MAX_LINKS + 1)
    assert deltas.is_delta(nxt.type) and deltas.split(nxt.type, nxt.data).link == f"{base + 1}-0"


def test_a_reader_follows_a_chain_of_links_to_versions_before_as_older_writers_stored() -> None:
    # Writers before base links linked each delta to the version before (up to 7 links).
    values = _growing(8)
    fields: dict[str, bytes] = {}
    for i, value in enumerate(values):
        if i == 0:
            blob = Blob(*SERDE.dumps_typed(value))
        else:
            added = b"".join(ormsgpack.packb(e) for e in value[len(values[i - 1]):])
            link = f"{i}-0"
            blob = Blob(*deltas.encode(link, b"%d" % i, len(fields[link]), len(value), "msgpack", added))
        fields[f"{i + 1}-0"] = encode_channel_value(ChannelValue("messages", i + 1, blob))
    followed: list[str] = []
    joined = compression.joined(blob, lambda link: followed.append(link) or fields.get(link))
    assert followed == [f"{n}-0" for n in range(7, 0, -1)]
    assert (joined.type, joined.data) == SERDE.dumps_typed(values[-1])


def test_values_that_are_not_msgpack_arrays_are_stored_whole() -> None:
    log = Log()
    for value in ["x" * 600, {"a": list(range(300))}, {"a": list(range(301))}, b"\x00" * 700]:
        assert not deltas.is_delta(log.put(value).type)


def test_non_minimal_array_headers_are_not_read_as_arrays() -> None:
    assert deltas.read_header(b"\xdc\x00\x05") is None
    assert deltas.read_header(b"\xdd\x00\x00\x00\x05") is None
    assert deltas.read_header(ormsgpack.packb(list(range(20)))) == (20, 3)


def test_a_join_refuses_a_missing_or_different_link() -> None:
    log = Log()
    log.put(["a" * 300])
    blob = log.put(["a" * 300, "b"])
    assert deltas.is_delta(blob.type)
    missing = dict(log.fields)
    del missing["1-0"]
    with pytest.raises(ValueError, match="holds no value"):
        compression.joined(blob, missing.get)
    other = {"1-0": encode_channel_value(ChannelValue("messages", 99, Blob("msgpack", ormsgpack.packb(["a" * 300]))))}
    with pytest.raises(ValueError, match="another"):
        compression.joined(blob, other.get)
    with pytest.raises(ValueError, match="delta read without"):
        compression.expand(blob)


def test_a_serde_type_that_looks_like_a_delta_is_stored_escaped() -> None:
    assert compression.keep(Blob("delta:msgpack", b"x")).type == "raw:delta:msgpack"
    assert compression.expand(Blob("raw:delta:msgpack", b"x")) == Blob("delta:msgpack", b"x")


def test_the_memory_keeps_the_most_recent_threads_and_forgets_deleted_ones() -> None:
    memory = DeltaMemory(threads=2)
    for thread in ("a", "b", "c"):
        plan = memory.plan(thread, "", True)
        plan.blob("messages", 1, *SERDE.dumps_typed(["x" * 300]))
        memory.commit(plan, "1-0")
    assert not memory.plan("a", "", True).held
    assert memory.plan("b", "", True).held and not memory.plan("b", "ns", True).held
    memory.forget("c")
    assert not memory.plan("c", "", True).held


def test_the_memory_compares_values_by_a_digest_keyed_with_its_own_secret() -> None:
    # `hash()` alone is keyed by PYTHONHASHSEED: a deployment that fixes it (reproducible builds
    # and tests often do) would let anyone who knows the seed craft a same-length edit of a
    # message whose digest matches, and the saver would store a delta joining to the old text.
    # Each memory keys its digests with a secret of its own, so no digest follows from the bytes.
    type_, data = SERDE.dumps_typed(["x" * 300, "y" * 300])
    body = memoryview(data)[deltas.read_header(data)[1]:]  # type: ignore[index]
    digests = []
    for memory in (DeltaMemory(), DeltaMemory()):
        plan = memory.plan("t", "", False)
        plan.blob("messages", 1, type_, data)
        held = plan.pending["messages"]
        assert held.end == len(body)
        digests.append(held.digest)
    assert hash(body) not in digests
    assert digests[0] != digests[1]


def test_one_read_expands_a_shared_base_once_and_joins_as_a_fresh_expand_does(monkeypatch: pytest.MonkeyPatch) -> None:
    serde = JsonPlusSerializer()
    stored = compression.shrink(Blob(*serde.dumps_typed([f"message {n} " * 40 for n in range(60)])))
    assert stored.type.startswith("zstd:"), "the base is stored compressed"
    calls: list[bytes] = []
    real = compression._decompress
    monkeypatch.setattr(compression, "_decompress", lambda data: calls.append(data) or real(data))
    expand = compression.remembering_expand()
    first, second = expand(stored.type, stored.data), expand(stored.type, bytes(stored.data))
    assert first == second == compression._serde_form(stored.type, stored.data)
    assert len(calls) == 2, "two expands of one read decompress once (the third call is the check's)"
