"""The partition-consumer core's pure decisions, shared by subscribers and the projector worker:
shares per roster, lease replies turned into entries, options, deployments (no Redis)."""

from __future__ import annotations

import pytest
from redis.exceptions import ResponseError

from streamsaver.errors import ConfigurationError, InvalidInputError
from streamsaver.feeds.consumer_data import ConsumerOptions, Lane, assignment
from streamsaver.feeds.worker_core import WorkerCore
from streamsaver.feeds.worker_units import Unit, WorkerStats
from streamsaver.log.deployment import keyspace_of
from streamsaver.log.keys import Keyspace


def test_each_roster_shares_out_its_own_partitions() -> None:
    units = [("a", p) for p in range(4)] + [("b", p) for p in range(4)]
    lanes = {u: Lane(f"group-{u[0]}", u[1], f"lease-{u}", f"roster-{u[0]}") for u in units}
    rosters = {"roster-a": ["x", "y", "z"], "roster-b": ["y"]}

    assert assignment(units, lanes, rosters, "x") == [("a", 0), ("a", 3), ("b", 0), ("b", 2)]  # x, y in b
    assert assignment(units, lanes, rosters, "y") == [("a", 1), ("b", 0), ("b", 1), ("b", 2), ("b", 3)]
    # a name missing from a roster (its heartbeat not seen yet) counts itself in: y and z share b
    assert assignment(units, lanes, rosters, "z") == [("a", 2), ("b", 1), ("b", 3)]


def test_a_lease_read_becomes_entries_and_a_lost_group_is_repaired() -> None:
    core = WorkerCore("t", ["shallow"], "w", lease_ms=1000, batch=10)
    core.keyspace = Keyspace("t", 2)
    stats = WorkerStats()
    pointer = [b"id", b"5-0"]
    replies = [[3, [[b"1-0", pointer], [b"2-0", None]], False, []], ResponseError("NOGROUP no such group")]

    batch, failed = core._read(core.units(), replies, stats)

    assert stats.claimed == 3 and core.owned == {Unit("shallow", 0)}
    ((unit, taken),) = batch
    assert unit == Unit("shallow", 0) and [(t.entry, t.raw) for t in taken] == [("1-0", {b"id": b"5-0"}), ("2-0", {})]
    assert isinstance(failed, ResponseError)
    assert core.later == [["XGROUP", "CREATE", "t:feed:{p1}", "projector:shallow", "0", "MKSTREAM"]]


def test_options_every_consumer_shares_are_checked() -> None:
    ConsumerOptions(name="n").check()
    for bad in ({"batch": 0}, {"lease_ms": 5}, {"poll_ms": -1}, {"start": "1"}, {"batch": "10"}):
        with pytest.raises(InvalidInputError):
            ConsumerOptions(name="n", **bad).check()  # type: ignore[arg-type]
    assert ConsumerOptions(name="n", poll_ms=0).idle_ms == 1
    assert ConsumerOptions(name="n", lease_ms=30).idle_ms == 10


def test_a_deployment_is_found_from_its_partition_count() -> None:
    assert keyspace_of("p", b"8") == Keyspace("p", 8)
    for missing in (None, ResponseError("WRONGTYPE")):
        with pytest.raises(ConfigurationError, match="no streamsaver deployment"):
            keyspace_of("p", missing)
