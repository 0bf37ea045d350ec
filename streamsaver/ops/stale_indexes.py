"""The indexes a slot move left behind on a Redis Cluster, found and dropped.

On a cluster a view's index is one per primary, named with the first hash tag ``{iK}`` whose slot
that primary owns and the primary's id (`streamsaver.log.routing.index_targets`). When the slot
of such a tag moves (resharding, a primary that joins), the next `setup()` makes each primary's
index under its new tag, and the old ones stay: each indexes its node's documents a second time
(memory, and the write cost of every document). Nothing asks them any more (a process on the old
slot map finds no index of the name it asks and sets up again), so they can go: `FT.DROPINDEX`
without ``DD``, which leaves the documents.

The receiving primary's old index is named for a slot it still owns: dropped as usual. The giving
primary's is named for a slot it gave away, and RediSearch answers ``MOVED`` to any command naming
it, ``FT.DROPINDEX`` included. It is dropped on one connection to that primary between
``CLUSTER SETSLOT <slot> IMPORTING <owner>`` and ``CLUSTER SETSLOT <slot> STABLE``, after
``ASKING`` (a primary importing a slot serves a command for it after ``ASKING``): the slot's owner
does not change, and only a client that ``ASKING`` itself could be served there meanwhile (no
primary is migrating that slot: `drop_stale_indexes` refuses while any slot moves). The slot is
made stable again whatever fails, on a new connection if need be (`streamsaver.ops.slot_window`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from projectors.domain import CHECKPOINTS
from projectors.store_domain import STORE
from streamsaver.drivers.cluster import is_cluster
from streamsaver.errors import ConcurrentChangeError
from streamsaver.log.indexes import index_schema_version
from streamsaver.log.keys import Keyspace
from streamsaver.log.routing import Shard, Topology, index_targets, key_slot
from streamsaver.ops.slot_window import drop_in_importing_window
from streamsaver.scripts import Script

__all__ = ["KEPT_CURRENT", "StaleIndex", "drop_on_primary", "drop_stale_indexes", "slot_owner", "stale_indexes"]


@dataclass(frozen=True)
class StaleIndex:
    """An index of the deployment no process on the current slot map asks.

    Attributes:
        node: the primary holding it (``host:port``).
        name: its name.
        slot: the slot of the hash tag in its name.
        owner: the primary that owns that slot now (``host:port``).
        owner_id: that primary's node id.
    """

    node: str
    name: str
    slot: int
    owner: str
    owner_id: str

    @property
    def named_elsewhere(self) -> bool:
        """Whether its name's slot is another primary's (RediSearch answers ``MOVED`` for it)."""
        return self.owner != self.node

    def remedy(self) -> str:
        """What drops it, spelt as commands (`drop_stale_indexes` sends them)."""
        if not self.named_elsewhere:
            return f"FT.DROPINDEX {self.name} on {self.node}"
        return (f"on one connection to {self.node}: CLUSTER SETSLOT {self.slot} IMPORTING {self.owner_id}; ASKING; "
                f"FT.DROPINDEX {self.name}; CLUSTER SETSLOT {self.slot} STABLE")


def _text(value: Any) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)


def _expected(keyspace: Keyspace, topology: Topology) -> dict[str, set[str]]:
    """Per primary (``host:port``), the names of the indexes setup makes there now."""
    expected: dict[str, set[str]] = {shard.node: set() for shard in topology.shards}
    for view in (*CHECKPOINTS.view_names, *STORE.view_names):
        for shard, target in zip(topology.shards, index_targets(keyspace, view, topology), strict=True):
            expected[shard.node].add(target.name)
    return expected


def _tag_slot(name: str, stem: str) -> int | None:
    """The slot of the hash tag after `stem` in an index name (``<stem>{iK}:<node id>``); None
    without one (the index of a single server)."""
    rest = name[len(stem) :]
    return key_slot(rest[: rest.index("}") + 1].encode()) if rest.startswith("{") and "}" in rest else None


def stale_indexes(client: Any, prefix: str) -> list[StaleIndex]:
    """The current-schema indexes of the deployment under `prefix` (checkpoint views and the
    store's items) that a primary holds and is not asked for on the cluster's slot map now
    (none on one server; older schema versions are the upgrade's, docs/operations.md).

    Raises:
        ConcurrentChangeError: a found index's slot has no primary (see `slot_owner`).
        RedisError: a primary refused ``CLUSTER SLOTS`` or ``FT._LIST``.
    """
    if not is_cluster(client):
        return []
    keyspace = Keyspace(prefix)
    topology = Topology.from_slots(client.execute_command("CLUSTER", "SLOTS", target_nodes=client.get_random_node()))
    expected = _expected(keyspace, topology)
    stems = tuple(f"{keyspace.index_stem(view)}v{index_schema_version(view)}:"
                  for view in (*CHECKPOINTS.view_names, *STORE.view_names))
    found = []
    for node in client.get_primaries():
        names = sorted(_text(n) for n in client.execute_command("FT._LIST", target_nodes=node))
        for name in names:
            stem = next((stem for stem in stems if name.startswith(stem)), None)
            slot = None if stem is None else _tag_slot(name, stem)
            if slot is None or name in expected.get(node.name, set()):
                continue
            owner = slot_owner(topology, slot, name)
            found.append(StaleIndex(node.name, name, slot, owner.node, owner.node_id))
    return found


def slot_owner(topology: Topology, slot: int, index: str) -> Shard:
    """The primary serving `slot` on `topology` (that of the index named `index`).

    Raises:
        ConcurrentChangeError: no primary serves the slot (one failed, or the slot is being
            reassigned): run it again once every slot is served.
    """
    owner = next((s for s in topology.shards if any(a <= slot <= b for a, b in s.ranges)), None)
    if owner is None:
        raise ConcurrentChangeError(f"slot {slot} of index {index} has no primary on the cluster's slot map (a primary "
                                    "failed or the slot is being reassigned): run it again once every slot is served")
    return owner


KEPT_CURRENT = "current again on its primary's slot map (its slot moved back, or setup ran on that map)"
"""Why `drop_stale_indexes` kept an index it was given: the message `kept` receives."""

_DROP_IF_STALE = Script.alone("drop_if_stale")


def _drop_if_stale(index: StaleIndex) -> list[Any]:
    """The call that drops `index` unless its primary's slot map makes it current (``drop_if_stale.lua``)."""
    tagged = index.name[index.name.rindex(":idx:v"):]
    tag, _, node_id = tagged[tagged.index("{i") + 2:].partition("}")
    slots = [key_slot(f"{{i{k}}}".encode()) for k in range(int(tag) + 1)]
    return ["EVAL", _DROP_IF_STALE.source, 1, index.name, node_id.removeprefix(":"), *slots]


def drop_on_primary(client: Any, index: StaleIndex, command: Sequence[Any]) -> Any:
    """`command`'s reply, sent on `index`'s primary: directly, or in the window of
    `streamsaver.ops.slot_window` when its name's slot is another primary's on that primary's own
    slot map now (the plan's owner may have changed).

    Raises:
        ConcurrentChangeError: that slot has no primary, or a slot is moving on that primary.
        SlotLeftImportingError: see `streamsaver.ops.slot_window.drop_in_importing_window`.
        RedisError: a primary refused a command, or its connection was lost.
    """
    node = client.get_node(node_name=index.node).redis_connection
    if index.slot < 0:  # a name without a hash tag: no slot to ask about
        return node.execute_command(*command)
    owner = slot_owner(Topology.from_slots(node.execute_command("CLUSTER", "SLOTS")), index.slot, index.name)
    now = replace(index, owner=owner.node, owner_id=owner.node_id)
    return drop_in_importing_window(node, now, command) if now.named_elsewhere else node.execute_command(*command)


def drop_stale_indexes(client: Any, stale: Sequence[StaleIndex],
                       kept: Callable[[StaleIndex, str], object] | None = None) -> list[str]:
    """Drop the `stale` indexes (`FT.DROPINDEX` without ``DD``: the documents stay); the names
    dropped. Each is checked to be still stale and dropped in one atomic call on its primary
    (``drop_if_stale.lua``): one its primary's slot map now makes current again is kept, and
    `kept` (if given) receives it with `KEPT_CURRENT`. An index gone meanwhile is skipped.

    Raises:
        ConcurrentChangeError: a slot is migrating or importing on the primary of an index named
            for another primary's slot, or the slot of an index has no primary (run it again
            once the cluster settles).
        SlotLeftImportingError: a drop of one named elsewhere failed and the slot it made
            ``IMPORTING`` could not be made stable again (the message names the command).
        RedisError: a primary refused a command, or its connection was lost (the slot's state
            is made stable again first, on a new connection if need be).
    """
    dropped = []
    for index in stale:
        outcome = int(drop_on_primary(client, index, _drop_if_stale(index)))
        if outcome == 1:
            dropped.append(index.name)
        elif outcome == 0 and kept is not None:
            kept(index, KEPT_CURRENT)
    return dropped
