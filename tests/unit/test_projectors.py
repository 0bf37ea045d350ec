"""Projectors are pure: an event gives an exact list of commands, and no redis import."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import orjson
from hypothesis import example, given
from hypothesis import strategies as st

from projectors import PROJECTORS, full, shallow
from projectors.documents import checkpoint_document
from streamsaver.log.codec import metadata_tags, tag
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

KS = Keyspace("p", 1)
T = "p:{kind}:{{p0}}:t"
BODY = Blob("msgpack", b"\x00BODY-PAYLOAD\xff")
SAVED = CheckpointSaved(
    thread_id="t",
    checkpoint_ns="ns",
    checkpoint_id="c2",
    parent_checkpoint_id="c1",
    metadata={"source": "loop", "step": 1, "run_id": "r"},
    channel_versions={"a": 2, "b": 1},
    body=BODY,
    values=(ChannelValue("a", 2, Blob("msgpack", b"\x00VALUE-A\xff")),),
)
WRITES = WritesSaved(
    "t", "ns", "c2", "task", "path",
    (
        PendingWrite(0, "a", Blob("msgpack", b"\x00WRITE-0\xff")),
        PendingWrite(-1, "__error__", Blob("msgpack", b"\x00ERR\xff")),
    ),
)


def _key(kind: str, *rest: str) -> str:
    return ":".join([T.format(kind=f"{kind}"), *rest])


def _doc(refs: list[str]) -> dict[str, object]:
    return {
        "thread_id": "t", "checkpoint_ns": "ns", "checkpoint_id": "c2", "parent_checkpoint_id": "c1",
        "th": tag("t"), "nh": tag("ns"), "tk": "t", "nk": "ns",
        # order_key("c2"): "c" and "2" are digits 14 and 4 of base 19, then 10 zero digits
        "ck": (14 * 19 + 4) * 19**10, "ph": tag("c1"),
        "mt": metadata_tags(sorted(SAVED.metadata.items())),
        "metadata": dict(SAVED.metadata), "refs": refs, "source": "loop", "step": 1, "rh": tag("r"),
    }


def test_full_view_stores_a_document_and_points_at_the_body_and_new_channel_versions() -> None:
    commands = full.project(SAVED, KS)
    assert [c[0] for c in commands] == ["JSON.SET", "SS.PTR", "SS.PTRNX", "ZADD", "SADD"]
    assert commands[0][:3] == ("JSON.SET", _key("full:cp", "ns", "c2"), "$")
    assert orjson.loads(commands[0][3]) == _doc(["@body:c2", "a:2", "b:1"])
    assert commands[1:] == [
        ("SS.PTR", _key("full:ptrs", "ns"), "@body:c2"),
        ("SS.PTRNX", _key("full:ptrs", "ns"), "a:2"),
        ("ZADD", _key("full:ids", "ns"), "0", "c2"),
        ("SADD", _key("full:ns"), "ns"),
    ]


def test_no_payload_is_copied_into_a_view() -> None:
    payloads = {BODY.data, b"\x00VALUE-A\xff", b"\x00WRITE-0\xff", b"\x00ERR\xff"}
    for project in PROJECTORS.values():
        for command in project(SAVED, KS) + project(WRITES, KS):
            assert not any(isinstance(arg, bytes) and any(p in arg for p in payloads) for arg in command)


def test_writes_keep_the_first_ordinary_write_and_overwrite_special_ones() -> None:
    key = _key("full:writes", "ns", "c2")
    assert full.project(WRITES, KS) == [("SS.PTRNX", key, "task:0"), ("SS.PTR", key, "task:-1")]


def test_several_first_pointers_of_one_hash_are_one_op() -> None:
    both = ChannelValue("b", 1, Blob("msgpack", b"")), *SAVED.values
    saved = CheckpointSaved(**{**SAVED.__dict__, "values": both})
    assert full.project(saved, KS)[2] == ("SS.PTRNX", _key("full:ptrs", "ns"), "b:1", "a:2")
    blob = Blob("msgpack", b"")
    writes = WritesSaved("t", "ns", "c2", "task", "", (PendingWrite(0, "a", blob), PendingWrite(1, "b", blob)))
    assert full.project(writes, KS) == [("SS.PTRNX", _key("full:writes", "ns", "c2"), "task:0", "task:1")]
    assert shallow.project(writes, KS)[-1] == ("SS.PTRNX", _key("shallow:writes", "ns"), "task:0", "task:1")


def test_shallow_view_replaces_the_latest_checkpoint_only_with_a_newer_one() -> None:
    writes, ptrs = _key("shallow:writes", "ns"), _key("shallow:ptrs", "ns")
    commands = shallow.project(SAVED, KS)
    assert commands[:2] == [
        ("SS.FOLLOW", writes, "@cid", "c2"),
        ("SS.IFNEWER", ptrs, "@cid", "c2"),
    ]
    assert orjson.loads(commands[2][3]) == _doc(["@body", "a", "b"])
    assert commands[3:] == [
        ("HSET", ptrs, "@cid", "c2"),
        ("SS.PTR", ptrs, "@body", "a"),
        ("SADD", _key("shallow:ns"), "ns"),
    ]


def test_shallow_view_keeps_writes_of_the_newest_checkpoint_even_saved_before_it() -> None:
    writes = _key("shallow:writes", "ns")
    assert shallow.project(WRITES, KS) == [
        ("SS.FOLLOW", writes, "@cid", "c2"),
        ("SS.IFEQ", writes, "@cid", "c2"),
        ("SS.PTRNX", writes, "task:0"),
        ("SS.PTR", writes, "task:-1"),
    ]


def test_thread_deleted_purges_every_key_family_of_each_view_and_the_audit() -> None:
    audit = KS.thread("t").audit
    assert full.project(ThreadDeleted("t"), KS) == [
        ("SS.PURGE", _key("full:ns"), _key("full:cp"), _key("full:ids"), _key("full:ptrs"), _key("full:writes")),
        ("DEL", audit),
    ]
    purge, erase_audit = shallow.project(ThreadDeleted("t"), KS)
    assert purge[3] == "" and erase_audit == ("DEL", audit)


def test_projecting_twice_gives_the_same_commands() -> None:
    for project in PROJECTORS.values():
        assert project(SAVED, KS) == project(SAVED, KS)


def test_projectors_never_import_redis() -> None:
    code = "import sys, projectors, projectors.full, projectors.shallow; print('redis' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_pointer_fields_of_equal_numbers_of_different_types_stay_apart() -> None:
    from projectors.documents import versioned_field

    assert versioned_field("c", 1) == "c:1"
    assert versioned_field("c", 1.0) == "c:1.0"  # asked second: a shared cache entry would say c:1


def test_a_document_is_the_json_of_its_fields_in_order_with_or_without_the_tail() -> None:
    bare = replace(SAVED, metadata={"parents": {}}, parent_checkpoint_id=None)
    for event, tail in ((SAVED, {"source": "loop", "step": 1, "rh": tag("r")}), (bare, {})):
        doc = {
            **_doc(["@body", "x"]),
            "metadata": dict(event.metadata),
            "mt": metadata_tags(sorted(event.metadata.items())),
        }
        doc = {k: v for k, v in doc.items() if k not in ("source", "step", "rh")} | tail
        doc["parent_checkpoint_id"], doc["ph"] = event.parent_checkpoint_id, tag(event.parent_checkpoint_id or "")
        assert checkpoint_document(event, ["@body", "x"]) == orjson.dumps(doc)
        assert checkpoint_document(event, []) == orjson.dumps(doc | {"refs": []})


_SCALARS = st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats() | st.text()
_JSON = st.recursive(
    _SCALARS, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(), c, max_size=3), max_leaves=8
)
_INDEXED = st.fixed_dictionaries(
    {}, optional={"source": _SCALARS, "step": st.floats() | _SCALARS, "run_id": _SCALARS, "parents": _JSON}
)
_METADATA = st.builds(
    lambda indexed, rest: {**rest, **indexed}, _INDEXED, st.dictionaries(st.text(), _JSON, max_size=3)
)


@given(_METADATA, st.lists(st.text(), max_size=3), st.none() | st.text(min_size=1))
@example({"step": float("nan")}, [], None)  # JSON has no NaN: the log holds null
@example({"step": float("-inf"), "source": "é\"\\", "run_id": "r"}, ["@body", ""], "c1")
def test_a_document_is_compact_json_and_the_same_from_the_event_as_from_its_log_entry(
    metadata: dict[str, object], refs: list[str], parent: str | None
) -> None:
    event = replace(SAVED, metadata=metadata, parent_checkpoint_id=parent)
    doc = checkpoint_document(event, refs)
    # what replay gives (another event object, so no document remembered for `event` is used)
    assert checkpoint_document(from_fields(to_fields(event), "1-0", payloads=False), refs) == doc
    assert orjson.dumps(orjson.loads(doc)) == doc and orjson.loads(doc)["refs"] == refs
