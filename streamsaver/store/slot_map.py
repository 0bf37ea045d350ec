"""Whether a cluster gained primaries since the store read its slot map, without I/O: the
store's use of `streamsaver.log.new_primaries` (which says why a query across primaries asks
``CLUSTER SLOTS``).

A batch with a search on a cluster asks ``CLUSTER SLOTS`` in its round trip; when primaries
joined, the batch sets up again (an index on the new primary, waited for until it has indexed its
items, and the scripts there) and reads again. A write or ``get`` routed to such a primary that
still meets ``NOSCRIPT`` after the driver loaded the scripts on every primary it knows is
treated the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

from langgraph.store.base import Op, SearchOp

from streamsaver.log.new_primaries import joined, on_new_primaries, slot_map_check
from streamsaver.log.routing import Step, Topology

__all__ = ["joined", "on_new_primaries", "slot_map_request"]


def slot_map_request(topology: Topology | None, ops: Sequence[Op]) -> list[Step]:
    """``CLUSTER SLOTS`` when `ops` hold a search on a cluster (nothing otherwise)."""
    return slot_map_check(topology) if any(isinstance(op, SearchOp) for op in ops) else []
