"""``list_namespaces`` from the namespace registry, without I/O.

Each store partition keeps, in the same atomic call as its writes, the count of item stems per
namespace and the stems that expire (`projectors.store`); ``store_namespaces.lua`` answers a
partition's live namespaces from them (an expired item's namespace is checked, never listed
without a live item). A listing reads one partition when the prefix condition fixes the first
label (a namespace lives in its first label's partition), else every partition: one script
call each, in one round trip (on Redis Cluster each call goes to its partition's primary). The
namespaces are then matched label by label (``"*"`` matches any one label), cut to
`max_depth`, deduplicated, sorted and paged here, so a page equals that slice of the full listing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from langgraph.store.base import ListNamespacesOp

from streamsaver.log.codec import escape, unescape
from streamsaver.log.keys import Keyspace
from streamsaver.log.routing import Command
from streamsaver.scripts import STORE_NAMESPACES

__all__ = ["list_calls", "namespaces_of"]


def _fixed_prefix(op: ListNamespacesOp) -> tuple[str, ...]:
    """The labels of the prefix condition before its first ``"*"`` (none without one)."""
    for condition in op.match_conditions or ():
        if condition.match_type == "prefix":
            fixed: list[str] = []
            for label in condition.path:
                if label == "*":
                    break
                fixed.append(label)
            return tuple(fixed)
    return ()


def list_calls(keyspace: Keyspace, op: ListNamespacesOp) -> list[Command]:
    """The ``store_namespaces.lua`` calls of a listing: the partition of its fixed first label,
    or every partition; each asked only for the namespaces under the fixed labels."""
    fixed = _fixed_prefix(op)
    if fixed:
        log_ids: Iterable[str] = [keyspace.store_partition(fixed[0])]
    else:
        log_ids = (str(n) for n in range(keyspace.partitions))
    under = ".".join(escape(label) for label in fixed)
    calls: list[Command] = []
    for log_id in log_ids:
        keys = keyspace.store(log_id)
        calls.append(STORE_NAMESPACES.evalsha_args([keys.namespaces, keys.expiring], [keys.doc_base, under]))
    return calls


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _matches(namespace: tuple[str, ...], path: Sequence[str], suffix: bool) -> bool:
    if len(namespace) < len(path):
        return False
    labels = namespace[len(namespace) - len(path):] if suffix else namespace[: len(path)]
    return all(want in ("*", got) for got, want in zip(labels, path, strict=True))


def namespaces_of(replies: Sequence[Sequence[Any]], op: ListNamespacesOp) -> list[tuple[str, ...]]:
    """The listing of `op` from the `list_calls` replies (each a partition's live escaped
    namespaces): matched, cut to `max_depth`, deduplicated, sorted, then paged."""
    found: set[tuple[str, ...]] = set()
    conditions = op.match_conditions or ()
    for reply in replies:
        for joined in reply:
            namespace = tuple(unescape(label) for label in _text(joined).split("."))
            if all(_matches(namespace, c.path, c.match_type == "suffix") for c in conditions):
                found.add(namespace if op.max_depth is None else namespace[: op.max_depth])
    return sorted(found)[op.offset : op.offset + op.limit]
