"""Fuzzed input (hypothesis) round-trips, stays isolated and filters exactly, against a real Redis.

Thread ids, namespaces, channel names, metadata keys and values are drawn from text with
query-syntax characters, braces, colons, unicode, empty and very long strings; channel values from
nested JSON-like data and bytes, and so are the pending writes put after the
checkpoint (task ids fuzzed too). Each example is put into a `StreamSaver` and into LangGraph's
`InMemorySaver` (the oracle), both accumulating over the run, then:

* `get_tuple` returns exactly the values, metadata and pending writes the oracle returns;
* `list` of the example's (thread, namespace) returns the oracle's checkpoint ids, in order;
* `list(None, filter=...)` across every thread returns exactly the oracle's ids, for a filter on
  the example's metadata and for one on a value nobody stored.

Where the two savers disagree by design (metadata values compare as canonical JSON here, so
``True != 1``; Python's ``==`` says ``True == 1``) the oracle's answer is corrected for that one
rule, and a filter on ``None`` matches only metadata holding that key with ``None`` (the
oracle's ``metadata.get(k) == v`` also matches metadata without the key); see
docs/architecture.md, "Indexes". Example counts are bounded (``FUZZ_EXAMPLES``, or the
``STREAMSAVER_FUZZ_EXAMPLES`` environment variable) so the suite stays fast.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

import pytest
import redis
from helpers import config, new_checkpoint
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.memory import InMemorySaver

from streamsaver import StreamSaver

pytestmark = pytest.mark.slow

FUZZ_EXAMPLES = int(os.environ.get("STREAMSAVER_FUZZ_EXAMPLES", "150"))
TRICKY = "{}[]()|@*:;,.-_~'\"\\/%$#!^&+=<>? \t\n\x00é字🦜"
LONG = "{@*|" * 1500 + "é" * 500

tricky_text = st.one_of(
    st.text(alphabet=st.sampled_from(TRICKY), max_size=12),
    st.text(max_size=12),
    st.just(""),
    st.just(LONG),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    tricky_text,
)
json_like = st.recursive(
    scalars | st.binary(max_size=64),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(tricky_text, inner, max_size=4),
    max_leaves=12,
)
metadata_values = st.one_of(
    st.none(), st.booleans(), st.integers(-1000, 1000), tricky_text, st.lists(tricky_text, max_size=3)
)
examples = st.fixed_dictionaries(
    {
        "thread": tricky_text,
        "ns": tricky_text,
        "values": st.dictionaries(tricky_text, json_like, max_size=4),
        "metadata": st.dictionaries(tricky_text, metadata_values, min_size=1, max_size=4),
        "task": tricky_text,
        "writes": st.lists(st.tuples(tricky_text, json_like), max_size=3),
    }
)


def _same_kind(a: Any, b: Any) -> bool:
    """Canonical-JSON equality differs from Python's in booleans versus numbers."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_kind(x, y) for x, y in zip(a, b, strict=True))
    return isinstance(a, bool) == isinstance(b, bool)


def _oracle_ids(oracle: InMemorySaver, filter: dict[str, Any]) -> list[str]:
    return sorted(
        t.checkpoint["id"]
        for t in oracle.list(None, filter=filter)
        if all(k in t.metadata and _same_kind(t.metadata[k], v) for k, v in filter.items())
    )


def _ids(saver: StreamSaver, cfg: Any, filter: dict[str, Any] | None = None) -> list[str]:
    return [t.checkpoint["id"] for t in saver.list(cfg, filter=filter)]


@pytest.mark.parametrize("view", ["full", "shallow"])
def test_fuzzed_ids_metadata_and_values_round_trip_stay_isolated_and_filter_exactly(
    client: redis.Redis, prefix: str, view: str
) -> None:
    saver = StreamSaver(client, prefix=f"{prefix}{view}", view=view)
    saver.setup()
    oracle = InMemorySaver()
    ran = 0

    @settings(
        max_examples=FUZZ_EXAMPLES if view == "full" else FUZZ_EXAMPLES // 3,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(example=examples)
    def check(example: dict[str, Any]) -> None:
        nonlocal ran
        ran += 1
        thread, ns, metadata = example["thread"], example["ns"], example["metadata"]
        checkpoint, _ = new_checkpoint(example["values"])
        # hypothesis seeds `random`, which versions use; uuid4 keeps each version unique
        versions = {ch: f"{1:032}.{uuid.uuid4().hex}" for ch in example["values"]}
        checkpoint["channel_versions"] = dict(versions)
        saved = saver.put(config(thread, ns), checkpoint, metadata, versions)
        oracle_saved = oracle.put(config(thread, ns), checkpoint, metadata, versions)
        saver.put_writes(saved, example["writes"], example["task"])
        oracle.put_writes(oracle_saved, example["writes"], example["task"])

        got = saver.get_tuple(config(thread, ns))
        assert got is not None and got.config == saved
        assert got.checkpoint["channel_values"] == example["values"]
        expected_metadata = oracle.get_tuple(config(thread, ns)).metadata  # type: ignore[union-attr]
        assert got.metadata == expected_metadata
        assert got.pending_writes == oracle.get_tuple(config(thread, ns)).pending_writes  # type: ignore[union-attr]
        mine = _ids(saver, config(thread, ns))
        if view == "full":
            assert mine == _ids(oracle, config(thread, ns))  # type: ignore[arg-type]
        else:
            assert mine == [checkpoint["id"]]
        key = min(expected_metadata)
        value = expected_metadata[key]  # type: ignore[literal-required]
        for wanted in ({key: value}, {key: value, "absent{": "*"}):
            expected = _oracle_ids(oracle, wanted)
            if view == "shallow":
                latest = {t.checkpoint["id"] for t in saver.list(None)}
                expected = [i for i in expected if i in latest]
            assert sorted(_ids(saver, None, wanted)) == expected

    check()
    print(f"{view}: {ran} fuzzed examples")
    assert ran >= (FUZZ_EXAMPLES if view == "full" else FUZZ_EXAMPLES // 3) // 2
