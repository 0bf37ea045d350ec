"""The store domain, pure: its events' stored form round-trips, every key an append names is in
its partition's slot, its projections are what the view promises, and ops are checked before
anything is built."""

from __future__ import annotations

import pytest
from langgraph.store.base import InvalidNamespaceError, ListNamespacesOp, MatchCondition, PutOp, SearchOp

from projectors.store import field_tag, namespace_tag, project, value_tags
from projectors.store_domain import STORE
from streamsaver.errors import EventDecodeError, InvalidInputError
from streamsaver.log.append import append_batch_call
from streamsaver.log.events import ItemDeleted, ItemPut, RunContext, StorePartitionErased
from streamsaver.log.items import item_fields, item_from_fields
from streamsaver.log.keys import Keyspace
from streamsaver.store.namespaces import list_calls
from streamsaver.store.queries import search_request
from streamsaver.store.validation import check_ops

KS = Keyspace("p", 8)


@pytest.mark.parametrize(
    "event",
    [
        ItemPut("3", ("alice", "mem ories", "é"), "k:1/2", {"a": [1, {"b": None}], "c": 2.5}, 1_700_000_000, 60_000),
        ItemPut("1", ("a",), "k", {"t": "x"}, 5, 0, ((0.5, -1.25),), "some-model", ("t", "u[*]"), 1_800_000_000_000),
        ItemPut("1", ("a",), "k", {"t": "x"}, 5, 0, ((0.5, -1.25),), "some-model"),
        ItemPut("1", ("a",), "k", {"t": "x"}, 5, writer="agent é", run=RunContext("t-1", "node:0f9b", "r-1")),
        ItemPut("1", ("a",), "k", {"t": "x"}, 5, writer="agent", run=RunContext(thread_id="t-1")),
        ItemDeleted("3", ("alice",), "k", 17),
        ItemDeleted("3", ("alice",), "k", 17, "svc", RunContext("t", "", "r")),
        StorePartitionErased("3"),
    ],
)
def test_store_events_round_trip_through_their_stored_form(event: object) -> None:
    assert item_from_fields(item_fields(event)) == event  # type: ignore[arg-type]


def test_a_version_1_item_put_still_reads() -> None:
    """Logs written before the embedding's model was logged replay as they are."""
    v1 = {b"type": b"ItemPut", b"v": b"1", b"thread": b"2", b"labels": b'["a"]', b"key": b"k", b"at": b"7",
          b"value": b'{"t":"x"}', b"ttl": b"0", b"vectors": b"[[0.5,1.0]]"}
    assert item_from_fields(v1) == ItemPut("2", ("a",), "k", {"t": "x"}, 7, 0, ((0.5, 1.0),))
    assert item_fields(item_from_fields(v1))[b"v"] == b"3"


def test_writes_logged_before_writers_were_read_with_no_writer_and_no_run() -> None:
    """ItemPut v2 and ItemDeleted v1 entries (no ``writer``, no ``run``) read as they always did."""
    v2 = {b"type": b"ItemPut", b"v": b"2", b"thread": b"2", b"labels": b'["a"]', b"key": b"k", b"at": b"7",
          b"value": b'{"t":"x"}', b"ttl": b"0", b"vectors": b"[[0.5,1.0]]", b"embedding": b'{"model":"m","dims":2}'}
    deleted = {b"type": b"ItemDeleted", b"v": b"1", b"thread": b"2", b"labels": b'["a"]', b"key": b"k", b"at": b"8"}
    assert item_from_fields(v2) == ItemPut("2", ("a",), "k", {"t": "x"}, 7, 0, ((0.5, 1.0),), "m")
    assert item_from_fields(deleted) == ItemDeleted("2", ("a",), "k", 8)
    put = item_from_fields(v2)
    assert isinstance(put, ItemPut) and (put.writer, put.run) == ("", None)


def test_who_wrote_a_put_is_plain_text_in_its_log_entry() -> None:
    fields = item_fields(ItemPut("1", ("a",), "k", {}, 5, writer="svc", run=RunContext("t-1", "n:x")))
    assert (fields[b"v"], fields[b"writer"]) == (b"3", b"svc")
    assert fields[b"run"] == b'{"thread_id":"t-1","checkpoint_ns":"n:x"}'  # only what the run named
    assert b"run" not in item_fields(ItemPut("1", ("a",), "k", {}, 5, writer="svc"))


@pytest.mark.parametrize("run", [b'"t"', b'{"thread_id":1}', b"[]", b'{"run_id":null}'])
def test_a_run_field_that_is_not_an_object_of_strings_is_refused(run: bytes) -> None:
    fields = {**item_fields(ItemDeleted("3", ("a",), "k", 1, "svc")), b"run": run}
    with pytest.raises(EventDecodeError):
        item_from_fields(fields)


def test_every_key_of_a_batch_append_carries_the_partition_tag() -> None:
    log_id = KS.store_partition("alice")
    events = [ItemPut(log_id, ("alice", str(n)), "k", {"n": n}, n, 1000 * n) for n in range(3)]
    events.append(ItemDeleted(log_id, ("alice", "0"), "k", 9))  # type: ignore[arg-type]
    call = append_batch_call(STORE, events, KS, ("items",))  # type: ignore[arg-type]
    tag = f"{{p{log_id}}}"
    keys = [str(arg) for arg in call[3 : 3 + int(call[2])]]
    assert keys and all(tag in key for key in keys)
    for event in events:
        for command in project(event, KS):
            assert tag in str(command[1])


def test_a_put_writes_its_document_once_and_counts_its_namespace() -> None:
    keys = KS.store("0")
    [write, expiry] = project(ItemPut("0", ("a", "b c"), "k", {"v": 1}, 42, 0), KS)
    assert write[:3] == ("SS.ITEM", keys.item("a.b%20c:k"), "42")  # the created time of a new document
    assert write[4:] == (keys.items, "a.b%20c:k", keys.namespaces, "a.b%20c", keys.expiring, "0")
    assert expiry == ("PERSIST", keys.item("a.b%20c:k"))
    expiring = project(ItemPut("0", ("a",), "k", {"v": 1}, 42, 60_000), KS)
    assert expiring[0][-1] == "1" and expiring[1][0] == "PEXPIREAT"
    for event in (ItemPut("0", ("a",), "k", {"v": 1}, 42, 0), ItemDeleted("0", ("a",), "k", 43)):
        call = append_batch_call(STORE, [event], KS, ("items",))  # type: ignore[list-item]
        declared = call[3 : 3 + int(call[2])]
        assert keys.namespaces in declared and keys.expiring in declared  # every key it writes (Redis Cluster)


def test_namespace_digests_are_label_exact() -> None:
    assert namespace_tag(("alice",)) != namespace_tag(("malice",))
    assert namespace_tag(("a", "b")) != namespace_tag(("a.b",))
    assert field_tag(("a", "b"), 1) in value_tags({"a": {"b": 1}})
    assert field_tag(("a",), {"b": 1}) in value_tags({"a": {"b": 1}})
    assert field_tag(("n",), 2) == field_tag(("n",), 2.0)


def test_a_search_applies_every_condition_before_its_limit() -> None:
    command = [str(a) for a in search_request("idx", SearchOp(("u",), {"n": {"$gt": 1}, "k": "x"}, 5, 10))]
    assert command.index("FILTER") < command.index("LIMIT")
    assert command[command.index("LIMIT") + 1 : command.index("LIMIT") + 3] == ["10", "5"]
    assert len(list_calls(KS, ListNamespacesOp(None, None, 10, 0))) == KS.partitions
    fixed = list_calls(KS, ListNamespacesOp((MatchCondition("prefix", ("u", "*", "x")),), None, 10, 0))
    assert [call[3:5] for call in fixed] == [[KS.store(KS.store_partition("u")).namespaces,
                                             KS.store(KS.store_partition("u")).expiring]]
    assert fixed[0][-1] == "u"


@pytest.mark.parametrize(
    "op",
    [
        PutOp(("a.b",), "k", {}),
        PutOp(("langgraph",), "k", {}),
        PutOp(("ok",), "k", {}, ttl=-1),
        SearchOp(("ok",), {"v": {"$regex": "x"}}, 10, 0),
        SearchOp(("ok",), {"v": {"$in": "x"}}, 10, 0),
        SearchOp(("ok",), None, -1, 0),
        ListNamespacesOp((MatchCondition("infix", ("a",)),), None, 10, 0),  # type: ignore[arg-type]
    ],
)
def test_invalid_ops_are_refused(op: object) -> None:
    with pytest.raises((InvalidNamespaceError, InvalidInputError)):
        check_ops([op])  # type: ignore[list-item]


@pytest.mark.parametrize(
    "value", ["x", "é", 0, -(2**63), 2**64 - 1, True, None, 2.0, 2.5, [1, 2.0], {"b": 1, "a": 2.0}]
)
def test_equality_digests_are_of_canonical_json(value: object) -> None:
    """The fast spelling of plain values gives the canonical digest (2.0 matches 2)."""
    from streamsaver.log.codec import canonical_json, tag

    assert field_tag(("k", "n"), value) == tag(canonical_json([["k", "n"], value]))
    assert namespace_tag(("a", "b")) == tag(canonical_json(["a", "b"]))


def test_a_lone_put_of_a_partition_goes_as_store_put() -> None:
    """`StreamStore.put` sends ``store_put.lua``; a partition with several writes, or a delete,
    ``append_batch.lua`` (`streamsaver.store.put`)."""
    from langgraph.store.base import PutOp

    from streamsaver.scripts import APPEND_BATCH, STORE_PUT
    from streamsaver.store.core import StoreCore

    core = StoreCore("p")
    lone = [PutOp(("alice",), "k", {"v": 1})]
    shared = [*lone, PutOp(("alice",), "j", {"v": 2})]
    deleted = [PutOp(("alice",), "k", None)]
    [step] = core.requests(lone, {}, [[]])
    assert step[1] == STORE_PUT.sha
    for ops in (shared, deleted):
        [step] = core.requests(ops, {}, [[]] * len(ops))
        assert step[1] == APPEND_BATCH.sha
    apart = [*lone, PutOp(("bob",), "k", {"v": 3})]
    assert {step[1] for step in core.requests(apart, {}, [[], []])} == {STORE_PUT.sha}  # different partitions


@pytest.mark.parametrize("event", [
    ItemPut("3", ("users", "ada"), "k", {"v": 1}, 5),
    ItemPut("3", ("users",), "k:1", {"v": 1}, 5, 60_000, ((0.5, 0.25),), "m", ("v",), 99),
])
def test_a_lone_puts_feed_pointer_is_its_entrys_type_thread_labels_and_key(event: ItemPut) -> None:
    """``store_put.lua`` writes the feed pointer from the entry's fields at `POINTER_PAIRS`."""
    from streamsaver.log.items import POINTER_PAIRS, item_pointer

    pairs = list(item_fields(event).items())
    picked = [part for n in POINTER_PAIRS for part in pairs[n]]
    assert picked == [part.encode() if isinstance(part, str) else part for part in item_pointer(event)]
