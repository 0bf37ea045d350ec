"""The subscriber's pure decisions: filters, partition shares, group names, payload decoding,
task paths to nodes, and the audit chain's hashing (no Redis)."""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from streamsaver.errors import InvalidInputError
from streamsaver.examples.analytics import node_of
from streamsaver.examples.audit import GENESIS, verify
from streamsaver.feeds.event import EventFilter, decode_payload
from streamsaver.feeds.ownership import share
from streamsaver.feeds.subscriber_core import check_group
from streamsaver.log.events import (
    Blob,
    ChannelValue,
    CheckpointSaved,
    PendingWrite,
    ThreadDeleted,
    WritesSaved,
)


def test_filters_compare_types_and_top_level_metadata() -> None:
    only_inputs = EventFilter.of(None, {"source": "input", "step": 2})
    assert only_inputs.admits("CheckpointSaved", {"source": "input", "step": 2.0, "other": 1})
    assert not only_inputs.admits("CheckpointSaved", {"source": "input"})
    assert not only_inputs.admits("WritesSaved", None)  # only checkpoints carry metadata
    assert not EventFilter.of(None, {"flag": True}).admits("CheckpointSaved", {"flag": 1})
    writes = EventFilter.of(["WritesSaved"], None)
    assert writes.admits("WritesSaved", None) and not writes.admits_type("CheckpointSaved")
    assert EventFilter().admits("ThreadDeleted", None)


def test_partitions_are_shared_out_and_every_one_has_one_owner() -> None:
    names = ["c", "a", "b"]
    shares = {n: share(range(16), names, n) for n in names}
    assert sorted(p for s in shares.values() for p in s) == list(range(16))
    assert shares["a"] == [0, 3, 6, 9, 12, 15]
    assert share(range(4), [], "alone") == [0, 1, 2, 3]


@pytest.mark.parametrize("bad", ["", "a:b", "x" * 65, "sp ace", "{p1}"])
def test_group_names_stay_inside_one_key_component(bad: str) -> None:
    with pytest.raises(InvalidInputError):
        check_group(bad)
    assert check_group("audit-v2.eu_1") == "audit-v2.eu_1"


def test_payloads_decode_with_the_serde() -> None:
    serde = JsonPlusSerializer()
    body = Blob(*serde.dumps_typed({"id": "c1", "v": 4}))
    saved = CheckpointSaved(
        "t", "", "c1", None, {"source": "loop"}, {"a": 1, "b": 1}, body,
        (ChannelValue("a", 1, Blob(*serde.dumps_typed([1, 2]))), ChannelValue("b", 1, Blob("empty", b""))),
    )
    assert decode_payload(saved, serde) == {
        "checkpoint": {"id": "c1", "v": 4, "channel_values": {"a": [1, 2]}},
        "metadata": {"source": "loop"}, "parent_checkpoint_id": None}
    writes = WritesSaved(
        "t", "", "c1", "task", "~__pregel_pull, agent", (PendingWrite(0, "a", Blob(*serde.dumps_typed("x"))),)
    )
    assert decode_payload(writes, serde) == {
        "task_id": "task",
        "task_path": "~__pregel_pull, agent",
        "writes": [("a", "x")],
    }
    assert decode_payload(ThreadDeleted("t"), serde) == {}


def test_task_paths_name_their_node() -> None:
    assert node_of("~__pregel_pull, review") == "review"
    assert node_of("~__pregel_push, 0, False") == "(push)"
    assert node_of("") == "(unknown)"


def test_an_empty_trail_verifies_and_garbage_does_not(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert verify(empty).ok and verify(empty).head == GENESIS
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"not json\n")
    assert not verify(garbage).ok and verify(garbage).broken_line == 1
