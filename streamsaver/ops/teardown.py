"""Teardown: remove a whole deployment from a Redis server (``streamsaver drop``).

What belongs to the deployment under ``P``: every key ``P:<kind>:...`` of a key kind
(`streamsaver.log.keys.KEY_KINDS`: thread logs, feeds and their consumer groups, views,
positions, leases, projector and subscriber state, dead letters, the memory store's partition
logs, feeds and items), ``P:meta``, and the scratch deployments nested under it (``P:shadow:...``
of a shadow rebuild, ``P:verify.<hex>:...`` of an interrupted verify); every RediSearch index
named ``P:<view>:idx:...`` (also the nested ones, on every primary of a cluster). Another
deployment whose prefix starts with ``P:`` (``P:tenant2``) is not touched: its keys are left,
and named in the plan. Loaded Lua scripts are shared by every deployment of the server (they
are addressed by their SHA), so they are left.

`plan_drop` only reads; `drop` removes what a plan names (the indexes first, so deleting the
documents costs no index updates, then the keys, ``UNLINK`` a page at a time); on a cluster an
index a slot move left behind is dropped as `streamsaver.ops.stale_indexes` drops it (one named
for a slot its primary gave away answers ``MOVED`` to a plain ``FT.DROPINDEX``). Writers still
running meanwhile would recreate keys: stop the application first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from redis import Redis

from streamsaver.drivers.cluster import is_cluster
from streamsaver.log.keys import KEY_KINDS, Keyspace
from streamsaver.ops.shadow import SHADOW
from streamsaver.ops.stale_indexes import drop_stale_indexes, stale_indexes

__all__ = ["DropPlan", "drop", "plan_drop"]

PAGE = 500
_OWN_WORDS = KEY_KINDS | {"probe", SHADOW}


def _text(value: Any) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)


def _owned(prefix: str, name: str) -> bool:
    """Whether a key or index name belongs to the deployment under `prefix` (see the module
    docstring), rather than to another one nested under it."""
    if not name.startswith(prefix + ":"):
        return False
    word = name[len(prefix) + 1:].split(":", 1)[0]
    return word in _OWN_WORDS or word.startswith("verify.")


@dataclass
class DropPlan:
    """What `drop` would remove under a prefix.

    Attributes:
        keys: the deployment's keys (names, as the server spells them).
        indexes: its RediSearch indexes, each with the node it lives on (None: the only one).
        threads: how many thread logs are among the keys.
        kept: other deployments whose prefix starts with this one's (left alone).
    """

    prefix: str
    keys: list[Any] = field(default_factory=list)
    indexes: list[tuple[str, Any]] = field(default_factory=list)
    threads: int = 0
    kept: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.keys and not self.indexes

    def as_dict(self) -> dict[str, Any]:
        return {"prefix": self.prefix, "keys": len(self.keys), "threads": self.threads,
                "indexes": sorted(name for name, _ in self.indexes), "kept_deployments": self.kept}


def plan_drop(client: Redis, prefix: str) -> DropPlan:
    """What belongs to the deployment under `prefix` (only reads).

    Raises:
        ConfigurationError: `prefix` is not a valid key prefix.
    """
    keyspace = Keyspace(prefix)
    plan = DropPlan(prefix)
    any_client: Any = client
    nested: set[str] = set()
    for key in any_client.scan_iter(match=keyspace.pattern, count=1000):
        name = _text(key)
        if _owned(prefix, name):
            plan.keys.append(key)
            plan.threads += name.startswith(keyspace.log_stem())
        elif name.endswith(":meta"):
            nested.add(name.removesuffix(":meta"))
    plan.kept = sorted(nested)
    nodes = any_client.get_primaries() if is_cluster(client) else [None]
    for node in nodes:
        names = any_client.execute_command("FT._LIST", **({"target_nodes": node} if node else {}))
        plan.indexes += [(_text(n), node) for n in names if _owned(prefix, _text(n))]
    return plan


def drop(client: Redis, plan: DropPlan) -> int:
    """Remove what `plan` names: its indexes, then its keys.

    Returns:
        How many keys were removed (keys gone meanwhile, e.g. expired, are not counted).
    """
    any_client: Any = client
    stale = set(drop_stale_indexes(client, stale_indexes(client, plan.prefix))) if plan.indexes else set()
    for name, node in plan.indexes:
        if name not in stale:
            any_client.execute_command("FT.DROPINDEX", name, **({"target_nodes": node} if node else {}))
    removed = 0
    for start in range(0, len(plan.keys), PAGE):
        pipe = any_client.pipeline(transaction=False)
        for key in plan.keys[start:start + PAGE]:
            pipe.unlink(key)  # one key a command: keys of different partitions live in different slots
        removed += sum(int(n) for n in pipe.execute())
    return removed
