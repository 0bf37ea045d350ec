"""The indexes a newer schema version superseded, found and dropped once the newer one is built.

A view's index name carries its schema version (``P:<view>:idx:vN``, `streamsaver.log.indexes`).
The first `setup()` of a release with a newer schema builds the new index beside the old one
and waits for its scan; the old one stays, kept current by RediSearch (every document is indexed
twice) and queried by any process of the older release still running, until an operator drops
it (docs/operations.md, "upgrading the index schema"). `superseded_indexes` finds every index of
an older schema of the deployment's views (the checkpoint views' and the store's items index),
on the one server or on every primary of a cluster, and tells whether the index superseding it
on the same node has finished its scan (it exists and reports ``indexing 0``: it then holds every
document the old one does, since both cover the same key prefix on that node).
`drop_superseded_indexes` drops those, and only those (``FT.DROPINDEX`` without ``DD``: the
documents are the live views'). An index named for a hash tag whose slot its primary gave away
answers ``MOVED``; it is dropped as `streamsaver.ops.stale_indexes` drops a stale one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from projectors.domain import CHECKPOINTS
from projectors.store_domain import STORE
from streamsaver.drivers.cluster import is_cluster
from streamsaver.log.indexes import index_schema_version
from streamsaver.log.keys import Keyspace
from streamsaver.log.routing import Topology, index_targets, key_slot
from streamsaver.ops.stale_indexes import StaleIndex, drop_on_primary

__all__ = ["KEPT_NOT_READY", "SupersededIndex", "drop_superseded_indexes", "superseded_indexes"]

_VERSION = re.compile(r"v(\d+)(?::|$)")


@dataclass(frozen=True)
class SupersededIndex:
    """An index of an older schema version of a view.

    Attributes:
        node: the server or primary holding it (``host:port``; "" on one server).
        name: its name.
        view: the view it indexes.
        version: its schema version.
        current: the index of the view's current schema on the same node.
        ready: whether `current` exists there and has finished its scan (then it may go).
    """

    node: str
    name: str
    view: str
    version: int
    current: str
    ready: bool


def _text(value: Any) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)


def _views() -> list[str]:
    """Every view the deployment may index (the checkpoint views, the store's items)."""
    return [view for domain in (CHECKPOINTS, STORE) for view in domain.view_names if domain.view(view).index_fields]


def _scanned(run: Callable[..., Any], index: str) -> bool:
    """Whether `index` has finished indexing the documents there (``FT.INFO``: ``indexing 0``)."""
    reply = run("FT.INFO", index)
    info = reply if isinstance(reply, dict) else dict(zip(reply[::2], reply[1::2], strict=True))
    return not int(_text(info.get(b"indexing", info.get("indexing", 0)) or 0))


def _on_node(keyspace: Keyspace, node: str, names: Sequence[str], current: dict[str, str],
             run: Callable[..., Any]) -> list[SupersededIndex]:
    """The superseded indexes among one node's `names` (`current`: per view, its index there)."""
    found = []
    for view, now in current.items():
        stem = keyspace.index_stem(view)
        ready: bool | None = None
        for name in names:
            match = _VERSION.match(name[len(stem):]) if name.startswith(stem) else None
            if match is None or int(match[1]) >= index_schema_version(view):
                continue
            if ready is None:
                ready = now in names and _scanned(run, now)
            found.append(SupersededIndex(node, name, view, int(match[1]), now, ready))
    return found


def superseded_indexes(client: Any, prefix: str) -> list[SupersededIndex]:
    """The indexes of an older schema version of the deployment under `prefix` (checkpoint
    views and the store's items), on one server or on every primary of a cluster, sorted by
    node and name.

    Raises:
        RedisError: the server (a primary) refused ``FT._LIST``, ``FT.INFO`` or ``CLUSTER SLOTS``.
    """
    keyspace = Keyspace(prefix)
    views = _views()
    if not is_cluster(client):
        names = sorted(_text(n) for n in client.execute_command("FT._LIST"))
        return _on_node(keyspace, "", names, {v: keyspace.index(v) for v in views}, client.execute_command)
    topology = Topology.from_slots(client.execute_command("CLUSTER", "SLOTS", target_nodes=client.get_random_node()))
    found: list[SupersededIndex] = []
    for node in sorted(client.get_primaries(), key=lambda n: str(n.name)):
        connection = node.redis_connection
        current = {
            view: target.name
            for view in views
            for shard, target in zip(topology.shards, index_targets(keyspace, view, topology), strict=True)
            if shard.node == node.name
        }
        names = sorted(_text(n) for n in connection.execute_command("FT._LIST"))
        found += _on_node(keyspace, node.name, names, current, connection.execute_command)
    return found


def _as_stale(index: SupersededIndex, topology: Topology) -> StaleIndex:
    """`index` as `drop_stale_indexes` drops one: with the slot of its tag and that slot's owner
    (itself when the name carries no tag)."""
    rest = index.name[index.name.index(":idx:v") :]
    tag = rest[rest.index("{") : rest.index("}") + 1] if "{" in rest and "}" in rest else ""
    slot = key_slot(tag.encode()) if tag else None
    owner = next((s for s in topology.shards if slot is not None and any(a <= slot <= b for a, b in s.ranges)), None)
    if slot is None or owner is None:
        return StaleIndex(index.node, index.name, -1, index.node, "")
    return StaleIndex(index.node, index.name, slot, owner.node, owner.node_id)


KEPT_NOT_READY = "the current index on its server is now missing or indexing"
"""Why `drop_superseded_indexes` kept an index it was given as ready: the message `kept` receives."""


def _still_ready(run: Callable[..., Any], index: SupersededIndex, listed: set[str]) -> bool:
    """Whether `index.current` is still `listed` and has finished its scan (read just before the drop)."""
    return index.current in listed and _scanned(run, index.current)


def drop_superseded_indexes(client: Any, superseded: Sequence[SupersededIndex],
                            kept: Callable[[SupersededIndex, str], object] | None = None) -> list[str]:
    """Drop those of `superseded` that are `ready` (``FT.DROPINDEX`` without ``DD``); the names
    dropped. Right before each drop, the index superseding it is read again: one whose current
    index is now missing or indexing is kept, and `kept` (if given) receives it with
    `KEPT_NOT_READY` (a separate read: RediSearch has no conditional drop, and the two names may
    hash to different slots). One gone meanwhile is skipped; one not ready is kept.

    Raises:
        ConcurrentChangeError: a slot is migrating on a primary whose index is named for a
            slot it gave away (see `streamsaver.ops.stale_indexes.drop_stale_indexes`).
        RedisError: the server (a primary) refused a command.
    """
    ready = [index for index in superseded if index.ready]
    if not ready:
        return []
    topology = None if not is_cluster(client) else Topology.from_slots(
        client.execute_command("CLUSTER", "SLOTS", target_nodes=client.get_random_node()))
    dropped = []
    for index in ready:
        run = client.execute_command if topology is None else \
            client.get_node(node_name=index.node).redis_connection.execute_command
        listed = {_text(n) for n in run("FT._LIST")}
        if index.name not in listed:
            continue
        if not _still_ready(run, index, listed):
            if kept is not None:
                kept(index, KEPT_NOT_READY)
            continue
        if topology is None:
            run("FT.DROPINDEX", index.name)
        else:
            drop_on_primary(client, _as_stale(index, topology), ["FT.DROPINDEX", index.name])
        dropped.append(index.name)
    return dropped
