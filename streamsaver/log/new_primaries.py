"""Whether a cluster gained primaries since a client read its slot map, without I/O.

On Redis Cluster a view's index is one index per primary of the slot map `setup()` read
(`streamsaver.log.routing.index_targets`), and a query across partitions asks each of them.
Slots that move between those primaries take their documents along (``MIGRATE``: the receiving
primary's index indexes them on arrival), and a query naming an index whose hash tag moved is
answered ``no such index`` (the caller sets up again). A primary added to the cluster and given
slots is different: it holds documents under no index a query asks, so the query would quietly
miss them. So a query across the primaries also asks ``CLUSTER SLOTS`` (`slot_map_check`, in the
same round trip; the runtime ACL grants it, docs/security.md), and `joined` names the primaries
that hold slots and are not in the slot map: the caller then sets up again (an index on the new
primary, waited for until it has indexed its documents, and the scripts there) and asks again.
The store's searches (`streamsaver.store.slot_map`) and the savers' listings across threads
(`streamsaver.checkpoints.programs.list_checkpoints`) do so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from streamsaver.log.routing import Routed, Step, Topology, key_slot, script_key

__all__ = ["joined", "on_new_primaries", "slot_map_check"]


def slot_map_check(topology: Topology | None) -> list[Step]:
    """``CLUSTER SLOTS`` on a cluster (any primary answers), nothing on one server."""
    return [] if topology is None else [Routed(topology.shards[0].tag, ["CLUSTER", "SLOTS"])]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def joined(topology: Topology | None, replies: Sequence[Any]) -> list[str]:
    """The primaries (``host:port``) holding slots in the reply to `slot_map_check` (the first
    of `replies`) that `topology` does not know, sorted (none without a reply, or when the reply
    is an error)."""
    if topology is None or not replies or isinstance(replies[0], Exception):
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
