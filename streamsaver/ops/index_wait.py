"""Wait until a deployment's indexes have scanned the keyspace (``streamsaver setup --wait``).

A new index (a first setup, one re-created after it was lost, a schema upgrade) indexes the
documents already on the server in the background, and RediSearch's scan walks the whole
keyspace, not only the deployment's keys: on a large server that takes minutes. Until it ends a
listing or a search misses what it has not reached (a saver's or store's own `setup()` waits a
bounded `streamsaver.log.setup.INDEXING_WAIT_S`, then raises `IndexNotReadyError`). An operator
waits here instead, with progress, for as long as it takes.

    states = wait_indexed(client, Keyspace("streamsaver"), timeout_s=None, report=print)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from redis import Redis

from projectors.domain import CHECKPOINTS
from projectors.store_domain import STORE
from streamsaver.drivers.cluster import is_cluster
from streamsaver.errors import IndexNotReadyError
from streamsaver.log.keys import Keyspace
from streamsaver.ops.index_check import reply_pairs, reply_text

__all__ = ["POLL_S", "IndexState", "index_states", "wait_indexed"]

POLL_S = 0.5
"""Between two reads of the indexes' state: the scan runs in Redis, not faster for asking."""


@dataclass(frozen=True)
class IndexState:
    """One index of the deployment on one primary.

    Attributes:
        name: the index's name.
        node: the primary holding it (``host:port``; ``""`` on one server).
        indexing: whether its background scan of the keyspace is still running.
        done: the share of the scan done, 0 to 1 (``percent_indexed``).
        documents: the documents it holds so far.
    """

    name: str
    node: str
    indexing: bool
    done: float
    documents: int


def _index_names(keyspace: Keyspace) -> list[str]:
    """The current names of every index the checkpoint views and the store can have."""
    return [keyspace.index(view.name) for domain in (CHECKPOINTS, STORE) for view in domain.views if view.index_fields]


def index_states(client: Redis, keyspace: Keyspace) -> list[IndexState]:
    """The state of every index the deployment has, on every primary (none set up: ``[]``).

    Raises:
        redis.exceptions.RedisError: the server refused ``FT._LIST`` or ``FT.INFO`` (no search
            module, a user without the right).
    """
    any_client: Any = client
    nodes = any_client.get_primaries() if is_cluster(client) else [None]
    return [state for node in nodes for state in _node_states(any_client, keyspace, node)]


def _node_states(client: Any, keyspace: Keyspace, node: Any) -> Iterator[IndexState]:
    target = {"target_nodes": node} if node is not None else {}
    current = _index_names(keyspace)
    for name in sorted(reply_text(n) for n in client.execute_command("FT._LIST", **target)):
        # On a cluster a primary's index carries its hash tag: `<name>:<tag>`.
        if any(name == c or name.startswith(c + ":") for c in current):
            info = reply_pairs(client.execute_command("FT.INFO", name, **target))
            yield IndexState(
                name=name,
                node=node.name if node is not None else "",
                indexing=bool(int(reply_text(info.get("indexing", 0)) or 0)),
                done=float(reply_text(info.get("percent_indexed", 1)) or 1),
                documents=int(float(reply_text(info.get("num_docs", 0)) or 0)),
            )


def wait_indexed(
    client: Redis,
    keyspace: Keyspace,
    timeout_s: float | None,
    report: Callable[[list[IndexState]], None] = lambda states: None,
    poll_s: float = POLL_S,
    sleep: Callable[[float], None] = time.sleep,
) -> list[IndexState]:
    """Read the indexes' state until none is indexing, calling `report` after every read;
    return the last states. `timeout_s` None waits as long as it takes.

    Raises:
        IndexNotReadyError: an index still indexing after `timeout_s` seconds (nothing is
            changed: the scan goes on in Redis, and waiting again resumes).
        redis.exceptions.RedisError: see `index_states`.
    """
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        states = index_states(client, keyspace)
        report(states)
        busy = [state for state in states if state.indexing]
        if not busy:
            return states
        if deadline is not None and time.monotonic() >= deadline:
            names = ", ".join(f"{s.name}{' on ' + s.node if s.node else ''} ({s.done:.0%})" for s in busy)
            raise IndexNotReadyError(
                f"still indexing after {timeout_s:g} s: {names}; the scan goes on in Redis, "
                "wait again (`streamsaver setup --wait`) before serving queries that must see every document"
            )
        sleep(poll_s)
