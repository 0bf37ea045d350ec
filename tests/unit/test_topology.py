"""Routing without a server: the slot map gives every primary a hash tag of its own, the same for
every process; what has no key is routed by a key of the right slot; a listing over several
indexes merges their pages newest first and asks an index again only when its rows ran out."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from redis.crc import key_slot

from streamsaver.checkpoints import programs
from streamsaver.checkpoints.core import SaverCore
from streamsaver.checkpoints.listing import FIRST_WIDTH, ListPager
from streamsaver.checkpoints.windows import FRESH_S, WindowHints
from streamsaver.errors import ConfigurationError
from streamsaver.log.keys import Keyspace
from streamsaver.log.program import Owner
from streamsaver.log.routing import IndexTarget, Routed, Topology, command_key, index_targets

SLOTS_OF_THREE = [
    [0, 5460, [b"127.0.0.1", 7001, b"a"]],
    [5461, 10922, [b"127.0.0.1", 7002, b"b"]],
    [10923, 16383, [b"127.0.0.1", 7003, b"c"], [b"127.0.0.1", 7013, b"c-replica"]],
]


def _owner(ranges: tuple[tuple[int, int], ...], tag: str) -> bool:
    slot = key_slot(tag.encode())
    return any(start <= slot <= end for start, end in ranges)


def test_every_primary_gets_the_first_tag_it_owns() -> None:
    topology = Topology.from_slots(SLOTS_OF_THREE)

    assert [shard.node for shard in topology.shards] == ["127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"]
    for shard in topology.shards:
        assert _owner(shard.ranges, shard.tag)
        k = int(shard.tag[2:-1])
        assert not any(_owner(shard.ranges, f"{{i{j}}}") for j in range(k)), "not the first tag it owns"
    assert Topology.from_slots(list(reversed(SLOTS_OF_THREE))) == topology


def test_a_primary_with_split_ranges_and_one_slot_still_gets_a_tag() -> None:
    slot = key_slot(b"{i0}")
    reply = [
        [0, slot - 1, [b"h", 1, b"a"]], [slot, slot, [b"h", 2, b"b"]], [slot + 1, 16383, [b"h", 1, b"a"]],
    ]

    topology = Topology.from_slots(reply)

    assert {shard.node: shard.tag for shard in topology.shards}["h:2"] == "{i0}"
    assert len(topology.shards[0].ranges) == 2


def test_a_cluster_without_slots_is_refused() -> None:
    with pytest.raises(ConfigurationError):
        Topology.from_slots([])


def test_indexes_are_one_per_primary_on_a_cluster_and_one_on_a_server() -> None:
    keyspace = Keyspace("p")
    topology = Topology.from_slots(SLOTS_OF_THREE)

    assert index_targets(keyspace, "full", None) == (IndexTarget("p:full:idx:v5"),)
    targets = index_targets(keyspace, "full", topology)
    # the node's id in the name: a tag that moves to another node names no index there
    assert [t.name for t in targets] == [f"p:full:idx:v5:{s.tag}:{s.node_id}" for s in topology.shards]
    assert [s.node_id for s in topology.shards] == ["a", "b", "c"]
    assert targets[0].query(["FT._LIST"]) == Routed(topology.shards[0].tag, ["FT._LIST"])


def test_the_wait_after_an_append_goes_where_the_append_goes() -> None:
    core = SaverCore.configure(JsonPlusSerializer(), view="full", projections=["full"], prefix="p", partitions=4,
                               durability="aof")
    core.keyspace = Keyspace("p", 4)
    append = ["EVALSHA", "sha", 3, "p:log:{p1}:t", "p:feed:{p1}", "p:pos:{p1}:t", "arg"]

    program = programs.durable(core, list(append))
    assert program.send(None) == Owner("p:log:{p1}:t")
    call = program.send(None)
    assert call.steps == [append, Routed("p:log:{p1}:t", ["WAITAOF", 1, 0, 5000])]
    assert command_key(append) == "p:log:{p1}:t"
    assert command_key(["XRANGE", b"p:log:{p2}:t", "-", "+"]) == "p:log:{p2}:t"


def _row(cid: str, thread: str) -> list[Any]:
    return [b"checkpoint_id", cid.encode(), b"tk", thread.encode(), b"nk", b""]


def _windows(*replies: list[Any]) -> list[list[Any]]:
    """The replies of ``list_window.lua`` calls holding these FT.AGGREGATE replies."""
    return [[361, reply] for reply in replies]


def _pager(indexes: int, limit: int | None = None) -> ListPager:
    targets = [IndexTarget(f"i{n}", f"{{i{n}}}") for n in range(indexes)]
    return ListPager.plan(Keyspace("p"), "full", JsonPlusSerializer(), None, None, None, limit, targets)


def test_pages_of_several_indexes_merge_newest_first() -> None:
    pager = _pager(3, limit=4)
    queries = pager.next_request()
    assert queries is not None and [q.key for q in queries] == ["{i0}", "{i1}", "{i2}"]  # type: ignore[union-attr]

    pager.feed(
        _windows(
            [2, _row("c9", "a"), _row("c5", "a")],
            [1, _row("c7", "b")],
            [3, _row("c8", "c"), _row("c6", "c"), _row("c1", "c")],
        )
    )

    assert [cid for _, _, cid in pager._found] == ["c9", "c8", "c7", "c6"]


def test_an_index_is_asked_again_only_when_its_rows_ran_out() -> None:
    pager = _pager(2, limit=3)
    pager.next_request()
    # index 0 returned a full page (3 rows: it may hold more), index 1 fewer (it is exhausted)
    pager.feed(_windows([9, _row("c9", "a"), _row("c8", "a"), _row("c7", "a")], [1, _row("c1", "b")]))
    assert [cid for _, _, cid in pager._found] == ["c9", "c8", "c7"]

    pager._found = []  # as if the fetch was read
    pager._emitted = 0
    again = pager.next_request()

    assert again is not None and [q.key for q in again] == ["{i0}"]  # type: ignore[union-attr]
    # it starts strictly after the last row it returned (a keyset cursor: list_window.lua
    # ARGV[2] its id, ARGV[10..12] '1', its tk and nk), at offset 0, a page of 3 (ARGV[4], ARGV[5])
    args = again[0].command[3 + 1 :]  # type: ignore[union-attr]
    assert args[1] == "c7" and args[3:5] == [0, 3] and args[9:] == ["1", "a", ""]


def test_a_row_of_a_document_from_before_schema_v2_asks_for_a_replay() -> None:
    pager = _pager(1)
    pager.next_request()

    with pytest.raises(ConfigurationError, match="streamsaver replay"):
        pager.feed(_windows([1, [b"checkpoint_id", b"c1"]]))


def test_an_index_that_may_hold_more_stops_the_merge_when_its_rows_run_out() -> None:
    pager = _pager(2, limit=4)
    pager.next_request()
    # index 0 returns a full page (it may hold more), index 1 fewer (it is done)
    pager.feed(
        _windows(
            [9, _row("c9", "a"), _row("c7", "a"), _row("c5", "a"), _row("c3", "a")],
            [2, _row("c8", "b"), _row("c1", "b")],
        )
    )
    assert [cid for _, _, cid in pager._found] == ["c9", "c8", "c7", "c5"]

    pager._found, pager._emitted = [], 0  # as if the page was fetched; the next page of 4
    pager.next_request()
    # c3 is taken, then index 0 has run dry: its next rows may be newer than index 1's c1
    assert [cid for _, _, cid in pager._found] == ["c3"]
    pager._found, pager._emitted = [], 0
    again = pager.next_request()
    assert again is not None and [q.key for q in again] == ["{i0}"]  # type: ignore[union-attr]
    pager.feed(_windows([2, _row("c2", "a"), _row("c0", "a")]))
    assert [cid for _, _, cid in pager._found] == ["c2", "c1", "c0"]


def test_equal_ids_from_several_indexes_merge_in_one_index_order() -> None:
    pager = _pager(3, limit=10)
    pager.next_request()
    # a copied thread keeps its source's ids: the same id in three threads on three primaries
    pager.feed(_windows([1, _row("c5", "t2")], [1, _row("c5", "t0")], [2, _row("c5", "t1"), _row("c4", "t9")]))
    assert [(t, cid) for t, _, cid in pager._found] == [("t0", "c5"), ("t1", "c5"), ("t2", "c5"), ("t9", "c4")]


def test_a_match_without_an_order_key_asks_for_a_replay() -> None:
    pager = _pager(1)
    pager.next_request()

    with pytest.raises(ConfigurationError, match=r"before index schema v3.*streamsaver replay"):
        pager.feed([[b"missing"]])


def test_an_index_is_asked_again_from_the_window_its_last_page_needed() -> None:
    pager = _pager(2, limit=3)
    first = pager.next_request()
    # from the end: width (ARGV[7]) at -6, fresh (ARGV[9]) at -4, then the cursor (ARGV[10..12])
    assert first is not None and [q.command[-6] for q in first] == [FIRST_WIDTH, FIRST_WIDTH]  # type: ignore[union-attr]
    pager.feed([[5000, [9, _row("c9", "a"), _row("c8", "a"), _row("c7", "a")]], [2**53, [1, _row("c1", "b")]]])
    pager._found, pager._emitted = [], 0

    again = pager.next_request()

    assert again is not None and [q.key for q in again] == ["{i0}"]  # type: ignore[union-attr]
    assert again[0].command[-6] == 5000  # type: ignore[union-attr]


def test_a_listing_starts_from_the_window_the_last_listing_of_its_query_needed() -> None:
    hints = WindowHints()
    targets = [IndexTarget("i0", "{i0}")]

    def plan(before: str | None = None) -> ListPager:
        config = {"configurable": {"checkpoint_id": before}} if before else None
        return ListPager.plan(Keyspace("p"), "full", JsonPlusSerializer(), None, {"k": 1}, config, 3, targets, hints)  # type: ignore[arg-type]

    first = plan()
    first.next_request()
    first.feed([[500, [1, _row("c9", "a")]]])
    second = plan()
    [query] = second.next_request() or []

    assert query.command[-6] == max(second.top - (first.top - 500), 1)  # type: ignore[union-attr]
    [bounded] = plan("c5").next_request() or []
    assert bounded.command[-6] == FIRST_WIDTH  # type: ignore[union-attr]  # `before` sets its own top


def test_a_fresh_remembered_window_is_sorted_before_counting_and_only_on_the_first_page() -> None:
    now = [100.0]
    hints = WindowHints(clock=lambda: now[0])
    targets = [IndexTarget("i0", "{i0}")]

    def plan() -> ListPager:
        return ListPager.plan(Keyspace("p"), "full", JsonPlusSerializer(), None, {"k": 1}, None, 1, targets, hints)

    first = plan()
    [query] = first.next_request() or []
    assert query.command[-4] == 0  # type: ignore[union-attr]  # nothing remembered yet
    first.feed([[500, [1, _row("c9", "a")]]])
    now[0] += FRESH_S / 2
    fresh = plan()
    [query] = fresh.next_request() or []
    assert query.command[-4] == 1  # type: ignore[union-attr]
    fresh.feed([[500, [1, _row("c9", "a")]]])
    fresh._found, fresh._emitted, fresh.limit = [], 0, 2  # as if the page was fetched; a next page
    [later] = fresh.next_request() or []
    assert later.command[-4] == 0  # type: ignore[union-attr]  # a page further down is counted
    now[0] += FRESH_S
    [stale] = plan().next_request() or []
    assert stale.command[-4] == 0  # type: ignore[union-attr]
