"""The store's check that a cluster gained primaries since setup read its slot map (no Redis)."""

from __future__ import annotations

from langgraph.store.base import GetOp, SearchOp

from streamsaver.log.routing import Routed, Topology, key_slot
from streamsaver.store.slot_map import joined, on_new_primaries, slot_map_request

TWO = [[0, 8000, [b"127.0.0.1", 7000, b"a"]], [8001, 16383, [b"127.0.0.1", 7001, b"b"]]]


def test_a_primary_that_took_slots_is_named_and_a_slot_moved_between_known_ones_is_not() -> None:
    topology = Topology.from_slots(TWO)
    grown = [TWO[0], [8001, 9000, ["127.0.0.1", 7002, "c"]], [9001, 16383, [b"127.0.0.1", 7001, b"b"]]]
    assert joined(topology, [grown]) == ["127.0.0.1:7002"]
    moved = [[0, 7000, [b"127.0.0.1", 7000, b"a"]], [7001, 16383, [b"127.0.0.1", 7001, b"b"]]]
    assert joined(topology, [moved]) == [] and joined(topology, [TWO]) == []
    assert joined(None, []) == [] and joined(topology, []) == []


def test_only_a_batch_with_a_search_on_a_cluster_asks_for_the_slot_map() -> None:
    topology = Topology.from_slots(TWO)
    search, get = SearchOp(("a",)), GetOp(("a",), "k")
    assert slot_map_request(topology, [get, search]) == [Routed(topology.shards[0].tag, ["CLUSTER", "SLOTS"])]
    assert slot_map_request(topology, [get]) == [] and slot_map_request(None, [search]) == []


def test_after_a_lost_script_only_the_calls_on_a_joined_primary_are_sent_again() -> None:
    before = Topology.from_slots(TWO)
    slot = key_slot(b"p3")
    after = Topology.from_slots([[0, slot - 1, [b"127.0.0.1", 7000, b"a"]], [slot, slot, [b"127.0.0.1", 7002, b"c"]],
                                 [slot + 1, 16383, [b"127.0.0.1", 7001, b"b"]]])
    there: list[str | bytes | int] = ["EVALSHA", "sha", 1, "P:slog:{p3}:3", "x"]
    elsewhere: list[str | bytes | int] = ["EVALSHA", "sha", 1, "P:slog:{p4}:4", "x"]
    assert on_new_primaries(before, after, [elsewhere, there]) == [there]
    assert on_new_primaries(before, before, [elsewhere, there]) == []
