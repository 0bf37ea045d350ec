"""Analytics: per-node step counts, write sizes and interrupts, counted from the event feed.

A node's *step* is one task run, which LangGraph saves as one `WritesSaved` (its task path
``~__pregel_pull, <node>`` names the node; push tasks count under ``(push)``); its write size is
the stored bytes of its writes (serialized, compressed when large); an *interrupt* is a write to
``__interrupt__``. Checkpoints
are counted by their metadata ``source``. Counters live per partition in
``P:analytics:{pN}:<name>`` and are added by ``scripts/count.lua`` once per feed entry, so
re-deliveries do not double-count. `report` sums the partitions; ``streamsaver analytics show``
prints it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from redis.exceptions import NoScriptError

from streamsaver.feeds.event import FeedEvent
from streamsaver.feeds.subscriber import Subscriber
from streamsaver.log.events import CheckpointSaved, WritesSaved
from streamsaver.log.keys import Keyspace
from streamsaver.ops.inspection import deployment_keyspace
from streamsaver.scripts import Script

__all__ = ["Analytics", "NodeStats", "Report", "analytics_subscriber", "node_of", "report"]

COUNT = Script.alone("count")


def node_of(task_path: str) -> str:
    """The node a task path names (``~__pregel_pull, agent`` -> ``agent``)."""
    parts = [p.strip() for p in task_path.lstrip("~").split(",")]
    if len(parts) >= 2 and parts[0] == "__pregel_pull":
        return parts[1]
    return "(push)" if parts[0] == "__pregel_push" else (task_path or "(unknown)")


def increments(event: FeedEvent) -> Counter[str]:
    """The counters one event adds to."""
    counts: Counter[str] = Counter({f"events:{event.type}": 1})
    record = event.record()
    if isinstance(record, CheckpointSaved):
        counts[f"checkpoints:{record.metadata.get('source', '?')}"] += 1
    elif isinstance(record, WritesSaved):
        node = node_of(record.task_path)
        counts[f"steps:{node}"] += 1
        counts[f"bytes:{node}"] += sum(len(w.blob.data) for w in record.writes)
        counts[f"interrupts:{node}"] += sum(w.channel == "__interrupt__" for w in record.writes)
    return counts


class Analytics:
    """The handler: adds each event's increments to its partition's counters (exactly once).

    Args:
        client: a sync ``redis.Redis`` (``decode_responses=False``).
        keyspace: the deployment's keyspace.
        name: the counters' name (one set of counters per name).
    """

    def __init__(self, client: Any, keyspace: Keyspace, name: str = "default") -> None:
        self.client, self.keyspace, self.name = client, keyspace, name

    def __call__(self, event: FeedEvent) -> None:
        flat = [x for k, v in increments(event).items() if v for x in (k, v)]
        call = COUNT.evalsha_args([self.keyspace.analytics(event.partition, self.name)], [event.feed_id, *flat])
        try:
            self.client.execute_command(*call)
        except NoScriptError:
            self.client.execute_command("SCRIPT", "LOAD", COUNT.source)
            self.client.execute_command(*call)


@dataclass
class NodeStats:
    """One node's totals."""

    steps: int = 0
    bytes: int = 0
    interrupts: int = 0


@dataclass
class Report:
    """Totals over every partition."""

    nodes: dict[str, NodeStats] = field(default_factory=dict)
    checkpoints: dict[str, int] = field(default_factory=dict)
    """checkpoints by metadata source"""
    events: dict[str, int] = field(default_factory=dict)
    """events by type"""


def report(client: Any, prefix: str, name: str = "default") -> Report:
    """The counters of `name`, summed over the partitions.

    Raises:
        ConfigurationError: no deployment under `prefix`.
    """
    keyspace = deployment_keyspace(client, prefix)
    pipe = client.pipeline(transaction=False)
    for p in range(keyspace.partitions):
        pipe.hgetall(keyspace.analytics(p, name))
    out = Report()
    for counters in pipe.execute():
        for raw_key, raw_value in counters.items():
            kind, _, what = raw_key.decode("utf-8", "replace").partition(":")
            if kind in ("steps", "bytes", "interrupts"):
                node = out.nodes.setdefault(what, NodeStats())
                setattr(node, kind, getattr(node, kind) + int(raw_value))
            elif kind in ("checkpoints", "events"):
                table = getattr(out, kind)
                table[what] = table.get(what, 0) + int(raw_value)
    return out


def analytics_subscriber(client: Any, *, prefix: str, group: str = "analytics", counters: str = "default",
                         **options: Any) -> Subscriber:
    """A `Subscriber` of `group` keeping the counters named `counters` (`options` go to
    `Subscriber`; payloads are prefetched, one round trip per batch)."""
    handler = Analytics(client, deployment_keyspace(client, prefix), counters)
    return Subscriber(client, group, handler, prefix=prefix, prefetch=True, **options)
