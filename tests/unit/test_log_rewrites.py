"""What copy, prune and delete_for_runs keep of a log, decided without Redis; the maintenance
events survive their stored form and project exactly the commands they should."""

from __future__ import annotations

from typing import Any

import pytest

from projectors import full, shallow
from streamsaver.checkpoints.compaction import (
    LogIndex,
    compact,
    delta_ancestors,
    removed_for_prune,
    removed_for_runs,
    retarget,
)
from streamsaver.log.events import (
    Blob,
    ChannelValue,
    CheckpointSaved,
    Event,
    PendingWrite,
    RunsDeleted,
    ThreadCopied,
    ThreadPruned,
    ValuesRetained,
    WritesSaved,
)
from streamsaver.log.keys import Keyspace
from streamsaver.log.stored import from_fields, to_fields

KS = Keyspace("p", 1)


def value(channel: str, version: int, kind: str = "msgpack") -> ChannelValue:
    return ChannelValue(channel, version, Blob(kind, f"{channel}{version}".encode()))


def checkpoint(cid: str, parent: str | None, versions: dict[str, int], values: tuple[ChannelValue, ...],
               ns: str = "", **metadata: Any) -> CheckpointSaved:
    return CheckpointSaved("t", ns, cid, parent, metadata, versions, Blob("msgpack", cid.encode()), values)


def writes(cid: str, ns: str = "") -> WritesSaved:
    return WritesSaved("t", ns, cid, "task", "", (PendingWrite(0, "d", Blob("msgpack", b"w" + cid.encode())),))


# c1 sets a (kept by everyone after), c2 a delta step, c3 a snapshot of d, c4 and c5 delta steps.
LOG: list[tuple[str, Event]] = [
    ("1-0", checkpoint("c1", None, {"a": 1}, (value("a", 1),), run_id="r1")),
    ("2-0", writes("c1")),
    ("3-0", checkpoint("c2", "c1", {"a": 1, "d": 2}, (value("d", 2, "empty"),), run_id="r1",
                       counters_since_delta_snapshot={"d": [1, 1]})),
    ("4-0", writes("c2")),
    ("5-0", checkpoint("c3", "c2", {"a": 1, "d": 3}, (value("d", 3),), run_id="r2")),
    ("6-0", writes("c3")),
    ("7-0", checkpoint("c4", "c3", {"a": 1, "d": 4}, (value("d", 4, "empty"),), run_id="r2",
                       counters_since_delta_snapshot={"d": [1, 1]})),
    ("8-0", writes("c4")),
    ("9-0", checkpoint("c5", "c4", {"a": 1, "d": 5}, (value("d", 5, "empty"),), run_id="r2",
                       counters_since_delta_snapshot={"d": [2, 2]})),
]


def test_keep_latest_keeps_the_ancestors_back_to_the_delta_snapshot() -> None:
    index = LogIndex.of(LOG)
    assert delta_ancestors(index, index.checkpoints[("", "c5")]) == [("", "c4"), ("", "c3")]
    assert removed_for_prune(index, "keep_latest") == {("", "c1"), ("", "c2")}
    assert removed_for_prune(index, "delete") == set(index.checkpoints)


def test_compaction_keeps_ids_and_only_the_values_survivors_point_at() -> None:
    kept = compact(LOG, {("", "c1"), ("", "c2")})
    assert kept == [
        ("1-0", ValuesRetained("t", "", "c1", (value("a", 1),))),
        *LOG[4:],
    ]


def test_runs_are_found_by_the_run_id_in_metadata() -> None:
    index = LogIndex.of(LOG)
    assert removed_for_runs(index, ["r1", "nobody"]) == {("", "c1"), ("", "c2")}
    assert removed_for_runs(index, []) == set()


def test_a_copy_renames_content_and_a_fork_ends_before_the_next_checkpoint_of_its_namespace() -> None:
    log: list[tuple[str, Event]] = [("0-1", ThreadCopied("t", "older", "")), *LOG]
    assert [e.thread_id for e in retarget(log, "u", None) or []] == ["u"] * len(LOG)
    fork = retarget(log, "u", "c2")
    assert fork is not None and [(type(e).__name__, getattr(e, "checkpoint_id", "")) for e in fork] == [
        ("CheckpointSaved", "c1"), ("WritesSaved", "c1"), ("CheckpointSaved", "c2"), ("WritesSaved", "c2"),
    ]
    assert retarget(log, "u", "missing") is None


@pytest.mark.parametrize(
    "event",
    [
        ThreadCopied("t:{1}", "s ü", "1718000000000"),
        ValuesRetained("t", "ns", "c", (value("a", 1), value("b", 2, "empty"))),
        ThreadPruned("t", "keep_latest", 3),
        RunsDeleted("t", ("r1", 'r"2')),
    ],
)
def test_maintenance_events_survive_their_stored_form(event: Event) -> None:
    assert from_fields(to_fields(event)) == event


def test_markers_project_nothing_and_retained_values_point_like_their_checkpoint() -> None:
    for marker in (ThreadCopied("t", "s", ""), ThreadPruned("t", "delete", 0), RunsDeleted("t", ("r",))):
        assert full.project(marker, KS) == shallow.project(marker, KS) == []
    retained = ValuesRetained("t", "ns", "c1", (value("a", 1),))
    assert full.project(retained, KS) == [
        ("SS.PTRNX", "p:full:ptrs:{p0}:t:ns", "a:1"),
        ("SADD", "p:full:ns:{p0}:t", "ns"),
    ]
    assert shallow.project(retained, KS) == [
        ("SADD", "p:shallow:ns:{p0}:t", "ns"),
        ("SS.IFNEWER", "p:shallow:ptrs:{p0}:t:ns", "@cid", "c1"),
        ("SS.PTR", "p:shallow:ptrs:{p0}:t:ns", "a"),
    ]
    assert full.project(ValuesRetained("t", "ns", "c1", ()), KS) == []
