"""Whether a cluster gained primaries since the store read its slot map, without I/O.

On Redis Cluster the items index is one index per primary of the slot map setup read
(`streamsaver.log.routing.index_targets`), and a search asks each of them. Slots that move
between those primaries take their items along (``MIGRATE``: the receiving primary's index
indexes them on arrival), and a query naming an index whose hash tag moved is answered ``no
such index`` (the batch then sets up again). A primary added to the cluster and given slots
is different: it holds items under no index a search asks, so the search would quietly miss
them. So a batch with a search on a cluster also asks ``CLUSTER SLOTS`` (in the same round trip;
the runtime ACL grants it, docs/security.md), and `joined` names the primaries that hold slots
and are not in the store's slot map: the batch then sets up again (an index on the new primary,
waited for until it has indexed its items, and the scripts there) and reads again. A write or
``get`` routed to such a primary meets ``NOSCRIPT`` even after the driver loaded the scripts on
every primary it knew, which the batch treats the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.store.base import Op, SearchOp

from streamsaver.log.routing import Routed, Step, Topology, key_slot, script_key

__all__ = ["joined", "on_new_primaries", "slot_map_request"]


def slot_map_request(topology: Topology | None, ops: Sequence[Op]) -> list[Step]:
    """``CLUSTER SLOTS`` when `ops` hold a search on a cluster (nothing otherwise)."""
    if topology is None or not any(isinstance(op, SearchOp) for op in ops):
        return []
    return [Routed(topology.shards[0].tag, ["CLUSTER", "SLOTS"])]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def joined(topology: Topology | None, replies: Sequence[Any]) -> list[str]:
    """The primaries (``host:port``) holding slots in the reply to `slot_map_request` that
    `topology` does not know, sorted (none without a reply)."""
    if topology is None or not replies:
        return []
    known = {shard.node for shard in topology.shards}
    return sorted({f"{_text(primary[0])}:{int(primary[1])}" for _, _, primary, *_ in replies[0]} - known)


def _owner(topology: Topology, key: str) -> str:
    slot = key_slot(key.encode("utf-8", "surrogateescape"))
    return next(shard.node for shard in topology.shards if any(start <= slot <= end for start, end in shard.ranges))


def on_new_primaries(before: Topology, after: Topology, calls: Sequence[Step]) -> list[Step]:
    """Those of the script `calls` whose keys a primary of `after` owns that `before` did not
    know: after a ``NOSCRIPT`` that survived the scripts' reload, the calls that ran nothing (the
    others ran on primaries that had the scripts)."""
    known = {shard.node for shard in before.shards}
    return [call for call in calls if isinstance(call, list) and (key := script_key(call)) is not None
            and _owner(after, key) not in known]
