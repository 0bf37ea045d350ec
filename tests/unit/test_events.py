"""Events survive their stored form; unknown or newer events are refused; old ones upcast."""

from __future__ import annotations

import pytest

from projectors import PROJECTORS
from streamsaver.errors import EventDecodeError
from streamsaver.log import events, stored
from streamsaver.log.events import (
    Blob,
    ChannelValue,
    CheckpointSaved,
    PendingWrite,
    ThreadDeleted,
    WritesSaved,
)
from streamsaver.log.keys import Keyspace
from streamsaver.log.stored import from_fields, to_fields

SAVED = CheckpointSaved(
    thread_id="t:{1}",
    checkpoint_ns="sub:ü",
    checkpoint_id="1ef",
    parent_checkpoint_id=None,
    metadata={"source": "loop", "step": 3, "parents": {}, "x": [1, None]},
    channel_versions={"messages": "0002.5", "n": 3},
    body=Blob("msgpack", b"\x00\xffbody"),
    values=(ChannelValue("messages", "0002.5", Blob("msgpack", b"\x01")), ChannelValue("n", 3, Blob("empty", b""))),
)
WRITES = WritesSaved("t", "", "1ef", "task", "~__pregel_pull, a", (PendingWrite(-1, "__error__", Blob("str", b"x")),))


@pytest.mark.parametrize("event", [SAVED, WRITES, ThreadDeleted("t \u2603")])
def test_an_event_reads_back_from_its_stream_fields(event: events.Event) -> None:
    assert from_fields(to_fields(event), "1-0") == event


def test_fields_lead_with_type_and_schema_version() -> None:
    fields = to_fields(SAVED)
    assert fields[b"type"] == b"CheckpointSaved" and fields[b"v"] == b"1"


def test_unknown_types_and_newer_versions_are_refused_with_the_event_id() -> None:
    with pytest.raises(EventDecodeError, match=r"unknown event type.*7-1"):
        from_fields({b"type": b"Nope", b"v": b"1"}, "7-1")
    with pytest.raises(EventDecodeError, match="newer"):
        from_fields({**to_fields(WRITES), b"v": b"2"})
    with pytest.raises(EventDecodeError, match="malformed"):
        from_fields({**to_fields(WRITES), b"w:0": b"\x00"})


def test_an_old_version_is_lifted_through_the_upcaster_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    def v0_to_v1(fields: dict[bytes, bytes]) -> dict[bytes, bytes]:
        return {**fields, b"thread": fields.pop(b"thread_v0")}

    monkeypatch.setitem(stored.UPCASTERS, ("ThreadDeleted", 0), v0_to_v1)
    assert from_fields({b"type": b"ThreadDeleted", b"v": b"0", b"thread_v0": b"old"}) == ThreadDeleted("old")


def test_a_version_without_an_upcaster_is_refused() -> None:
    with pytest.raises(EventDecodeError, match="no upcaster"):
        from_fields({b"type": b"ThreadDeleted", b"v": b"0", b"thread": b"t"})


@pytest.mark.parametrize("event", [SAVED, WRITES, ThreadDeleted("t")])
def test_without_payloads_an_event_projects_the_same(event: events.Event) -> None:
    bare = from_fields(to_fields(event), "1-0", payloads=False)
    keyspace = Keyspace("p", 4)
    for project in PROJECTORS.values():
        assert project(bare, keyspace) == project(event, keyspace)
    blobs = [getattr(bare, "body", None), *(v.blob for v in getattr(bare, "values", ()))]
    blobs += [w.blob for w in getattr(bare, "writes", ())]
    assert all(blob is events.OMITTED for blob in blobs if blob is not None)


def test_without_payloads_a_malformed_packing_is_still_refused() -> None:
    with pytest.raises(EventDecodeError, match="malformed"):
        from_fields({**to_fields(WRITES), b"w:-1": b"\x00\x00\x00\x01x"}, payloads=False)
    with pytest.raises(EventDecodeError, match="malformed"):
        from_fields({**to_fields(SAVED), b"body": b"\x00\x00\x00\x09short"}, payloads=False)
