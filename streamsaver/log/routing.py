"""Where a command goes, as data: steps, the slot map and index placement (no I/O).

A command that has no key, or must reach one primary of a Redis Cluster in particular, is a
`Routed` step (a command and the key whose node it goes to); on one server it is a plain
command, so the cores emit the same requests for both. The slot map (`Topology`) is read once
with ``CLUSTER SLOTS`` by `setup()`; on a cluster each view's index is one index per primary,
named with a hash tag that primary owns (`index_targets`). `streamsaver.drivers.cluster` places
steps on redis-py clients.
"""

from __future__ import annotations

import binascii
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from streamsaver.errors import ConfigurationError
from streamsaver.log.keys import Keyspace, ViewName

__all__ = ["SLOTS", "Command", "IndexTarget", "Routed", "Shard", "Step", "Topology", "command_key", "index_targets",
           "key_slot", "script_key"]


Command = list[str | bytes | int]


SLOTS = 16384


_TAG_SEARCH = 1 << 20


@dataclass(frozen=True)
class Routed:
    """A command for the primary that owns the slot of `key` (which the command need not name)."""

    key: str
    command: Command


Step = Command | Routed
"""One command of a request: routed by its own keys, or by a `Routed` key."""


@dataclass(frozen=True)
class Shard:
    """One primary: its address, the slot ranges it owns, and a hash tag of one of its slots."""

    node: str
    ranges: tuple[tuple[int, int], ...]
    tag: str
    node_id: str = ""


@dataclass(frozen=True)
class Topology:
    """The primaries of a cluster, in address order, each with a hash tag it owns."""

    shards: tuple[Shard, ...]

    @classmethod
    def from_slots(cls, reply: Sequence[Any]) -> Topology:
        """Decode a ``CLUSTER SLOTS`` reply (``[start, end, [host, port, ...], replicas...]``).

        Raises:
            ConfigurationError: the reply covers no slot.
        """
        ranges: dict[str, list[tuple[int, int]]] = {}
        ids: dict[str, str] = {}
        for start, end, primary, *_replicas in reply:
            host = primary[0].decode() if isinstance(primary[0], bytes) else str(primary[0])
            node = f"{host}:{int(primary[1])}"
            ranges.setdefault(node, []).append((int(start), int(end)))
            if len(primary) > 2:
                ids[node] = primary[2].decode() if isinstance(primary[2], bytes) else str(primary[2])
        if not ranges:
            raise ConfigurationError("CLUSTER SLOTS names no primary: the cluster has no slots assigned")
        owner = [""] * SLOTS
        for node, spans in ranges.items():
            for start, end in spans:
                owner[start : end + 1] = [node] * (end - start + 1)
        tags = _tags(owner, set(ranges))
        return cls(tuple(
            Shard(node, tuple(sorted(ranges[node])), tags[node], ids.get(node, "")) for node in sorted(ranges)
        ))

    def on_every_node(self, command: Command) -> list[Routed]:
        """`command` once per primary."""
        return [Routed(shard.tag, command) for shard in self.shards]


def _tags(owner: Sequence[str], nodes: set[str]) -> dict[str, str]:
    """Per node, the first hash tag ``{iK}`` whose slot it owns."""
    tags: dict[str, str] = {}
    for k in range(_TAG_SEARCH):
        tag = f"{{i{k}}}"
        node = owner[key_slot(tag.encode())]
        if node and node not in tags:
            tags[node] = tag
            if len(tags) == len(nodes):
                return tags
    raise ConfigurationError(f"no hash tag found for nodes {sorted(nodes - set(tags))}")


@dataclass(frozen=True)
class IndexTarget:
    """One index of a view: its name, and where to send a query on it."""

    name: str
    route: str | None = None

    def query(self, command: Command) -> Step:
        """`command` (which names this index) sent where the index lives."""
        return command if self.route is None else Routed(self.route, command)


def index_targets(keyspace: Keyspace, view: ViewName, topology: Topology | None) -> tuple[IndexTarget, ...]:
    """The indexes of `view`: one on a single server, one per primary on a cluster."""
    if topology is None:
        return (IndexTarget(keyspace.index(view)),)
    # The node id in the name: after slots move, a process still on the old map asks for an index
    # that the tag's new owner does not have ("no such index": it re-reads the map) instead of
    # one that owner made under the same tag, which would answer for the wrong node's keys.
    return tuple(
        IndexTarget(keyspace.index(view, f"{shard.tag}:{shard.node_id}" if shard.node_id else shard.tag), shard.tag)
        for shard in topology.shards
    )


def script_key(command: Command) -> str | None:
    """The first key of a script call (every key of one call shares a slot)."""
    if str(command[0]).upper() in ("EVALSHA", "EVAL") and int(command[2]) > 0:
        key = command[3]
        return key.decode("utf-8", "surrogateescape") if isinstance(key, bytes) else str(key)
    return None


def command_key(command: Command) -> str:
    """The key a command is routed by: a script call's first key, else its first argument (every
    command the bulk tools send names its key there: XRANGE, XADD, DEL, ...)."""
    key = script_key(command)
    if key is not None:
        return key
    first = command[1]
    return first.decode("utf-8", "surrogateescape") if isinstance(first, bytes) else str(first)


def key_slot(key: bytes) -> int:
    """The cluster slot of `key`: CRC16 (XMODEM) of its hash tag (the first non-empty ``{...}``)
    or of the whole key, modulo 16384."""
    start = key.find(b"{")
    if start > -1:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            key = key[start + 1 : end]
    return binascii.crc_hqx(key, 0) % SLOTS
