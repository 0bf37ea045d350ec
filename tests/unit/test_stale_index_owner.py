"""`drop-stale-indexes` names the primary serving a stale index's slot; a slot no primary serves
(a failed primary, a slot being reassigned) is a named error, never a bare StopIteration (no Redis)."""

from __future__ import annotations

import re

import pytest

from streamsaver.errors import ConcurrentChangeError
from streamsaver.log.routing import Topology
from streamsaver.ops.stale_indexes import slot_owner

GAP = [[0, 8000, [b"127.0.0.1", 7000, b"a"]], [8002, 16383, [b"127.0.0.1", 7001, b"b"]]]


def test_the_primary_serving_the_slot_is_named() -> None:
    topology = Topology.from_slots(GAP)
    assert slot_owner(topology, 8000, "p:full:idx:v5:{x}:a").node_id == "a"
    assert slot_owner(topology, 8002, "p:full:idx:v5:{x}:a").node_id == "b"


def test_a_slot_no_primary_serves_is_a_named_error() -> None:
    with pytest.raises(ConcurrentChangeError, match=re.escape("slot 8001 of index p:full:idx:v5:{x}:a has no primary")):
        slot_owner(Topology.from_slots(GAP), 8001, "p:full:idx:v5:{x}:a")
