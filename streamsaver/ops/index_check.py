"""Are a deployment's indexes whole? Part of `streamsaver.ops.verify`.

For each view with an index, on every primary: the index of the current schema version exists,
covers the view's documents (its ``PREFIX``) with the attributes the view declares, has
finished indexing (a new index scans the whole keyspace first, which on a large server takes
a while), and then holds as many documents as there are under its prefix (counted by ``SCAN``).
Each failure is one line naming the index and what is wrong; none means whole.

    problems = index_problems(redis.Redis.from_url(url), Keyspace("streamsaver"), ["full"])
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from redis import Redis

from projectors.domain import CHECKPOINTS
from streamsaver.drivers.cluster import is_cluster
from streamsaver.log.domain import Domain
from streamsaver.log.keys import Keyspace, ViewName

__all__ = ["STILL_INDEXING", "index_problems", "reply_pairs", "reply_text"]

STILL_INDEXING = "still indexing"
"""How a problem line starts when an index has not finished its scan of the keyspace: a state
that passes by itself (a saver's listing waits for it after re-creating an index), so
`streamsaver.ops.verify.VerifyReport.matches` reports it without failing on it."""


def reply_text(value: Any) -> str:
    """A reply's string (bytes decoded)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def reply_pairs(reply: Any) -> dict[str, Any]:
    """A reply of alternating names and values (or one redis-py already parsed), by name."""
    if isinstance(reply, dict):
        return {reply_text(k): v for k, v in reply.items()}
    return {reply_text(k): v for k, v in zip(reply[::2], reply[1::2], strict=False)}


def index_problems(
    client: Redis, keyspace: Keyspace, views: Sequence[ViewName], domain: Domain = CHECKPOINTS
) -> list[str]:
    """What is wrong with the indexes of `views` (of `domain`), one line each; [] when whole.

    Raises:
        redis.exceptions.RedisError: the server failed a command other than ``FT.INFO``.
    """
    any_client: Any = client
    nodes = any_client.get_primaries() if is_cluster(client) else [None]
    problems: list[str] = []
    for view in views:
        if domain.view(view).index_fields:
            for node in nodes:
                problems.extend(_view_problems(any_client, keyspace, view, domain, node))
    return problems


def _view_problems(client: Any, keyspace: Keyspace, view: ViewName, domain: Domain, node: Any) -> Iterator[str]:
    target = {"target_nodes": node} if node is not None else {}
    where = f" on {node.name}" if node is not None else ""
    current = keyspace.index(view)
    names = [reply_text(n) for n in client.execute_command("FT._LIST", **target)]
    mine = [n for n in names if n == current or n.startswith(current + ":")]
    documents = keyspace.document_prefix(view, domain.view(view).documents)
    scanner = node.redis_connection if node is not None else client  # the node's own documents
    if not mine:
        # A view never set up and empty (a store-only deployment's checkpoint views) lacks nothing.
        marker = f"index:{current.removeprefix(keyspace.prefix + ':')}"
        recorded = any(reply_text(f).startswith(marker) for f in client.hkeys(keyspace.meta))
        if recorded or next(iter(scanner.scan_iter(match=f"{documents}*", count=1000)), None) is not None:
            yield f"the index of view {view!r} ({current}) is missing{where}: a saver's next listing re-creates it"
        return
    declared = {str(field["name"]) for field in domain.view(view).index_fields}
    for name in mine:
        info = reply_pairs(client.execute_command("FT.INFO", name, **target))
        definition = reply_pairs(info.get("index_definition", []))
        prefixes = [reply_text(p) for p in definition.get("prefixes", [])]
        if prefixes != [documents]:
            yield f"the index {name}{where} covers {prefixes}, not [{documents!r}]"
        attributes = {reply_text(reply_pairs(a).get("attribute", "")) for a in info.get("attributes", [])}
        optional = domain.view(view).optional_fields
        if attributes - {a for a in attributes if optional and re.fullmatch(optional, a)} != declared:
            yield f"the index {name}{where} has the attributes {sorted(attributes)}, not {sorted(declared)}"
        if int(reply_text(info.get("indexing", 0)) or 0):
            yield f"{STILL_INDEXING}: {name}{where} ({reply_text(info.get('percent_indexed', '?'))} done)"
            continue
        held = int(reply_text(info.get("num_docs", 0)))
        present = sum(1 for _ in scanner.scan_iter(match=f"{documents}*", count=1000))
        if held != present:
            yield f"the index {name}{where} holds {held} documents, the view has {present}"
