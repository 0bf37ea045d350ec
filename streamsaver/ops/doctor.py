"""``doctor``: what an operator should know about a server and a deployment, as findings.

Each check reads (never writes) and yields `Finding`s with a severity: ``ok``, ``warning``
(works, but something will bite: an index still indexing, dead letters, a feed no group reads)
or ``error`` (loses data or cannot work: an evicting server, a missing module, no deployment).
A check the connected user may not run (a refused ``CONFIG``/``ACL``) is a warning saying so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import MovedError, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from projectors.domain import CHECKPOINTS
from projectors.store_domain import STORE
from streamsaver.drivers.cluster import is_cluster
from streamsaver.log.deployment import keyspace_of
from streamsaver.log.indexes import index_schema_version
from streamsaver.log.keys import Keyspace
from streamsaver.ops.stale_indexes import stale_indexes

__all__ = ["SEVERITIES", "Finding", "diagnose", "worst"]

Severity = Literal["ok", "warning", "error"]
SEVERITIES: tuple[Severity, ...] = ("ok", "warning", "error")


@dataclass(frozen=True)
class Finding:
    """One thing `diagnose` found: which check, how bad, and what it saw."""

    check: str
    severity: Severity
    detail: str


def worst(findings: list[Finding]) -> Severity:
    """The most severe of `findings` (``ok`` when there are none)."""
    return max((f.severity for f in findings), key=SEVERITIES.index, default="ok")


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _pairs(reply: Any) -> dict[str, Any]:
    """A reply of alternating names and values (or one redis-py already parsed), by name."""
    pairs = reply.items() if isinstance(reply, dict) else zip(reply[::2], reply[1::2], strict=True)
    return {_text(k): v for k, v in pairs}


def _server(r: Any, prefix: str) -> Iterator[Finding]:
    info = r.info("server")
    yield Finding("server", "ok", f"Redis {info.get('redis_version', '?')} ({info.get('redis_mode', '?')})")
    modules = {_text(m.get(b"name", m.get("name", ""))).lower() for m in r.execute_command("MODULE", "LIST")}
    for module, names in (("search", {"search", "ft"}), ("JSON", {"rejson", "json"})):
        found = bool(modules & names)
        yield Finding("modules", "ok" if found else "error",
                      f"{module} module {'loaded' if found else 'missing: streamsaver cannot work'}")


def _memory(r: Any, prefix: str) -> Iterator[Finding]:
    policy = _text(r.info("memory").get("maxmemory_policy", "?"))
    if policy == "noeviction":
        yield Finding("eviction", "ok", "maxmemory-policy noeviction")
    else:
        yield Finding("eviction", "error", f"maxmemory-policy {policy}: the server may evict logs and "
                      "views, silently losing checkpoints; set noeviction")


def _persistence(r: Any, prefix: str) -> Iterator[Finding]:
    info = r.info("persistence")
    if not int(info.get("aof_enabled", 0)):
        yield Finding("aof", "warning", "AOF off: a crash loses what the last RDB snapshot lacks "
                      "(durability='aof' refuses)")
        return
    try:
        fsync = _text(r.config_get("appendfsync").get("appendfsync", "?"))
    except RedisError as exc:
        yield Finding("aof", "ok", f"AOF on (appendfsync unreadable: {exc})")
        return
    severity: Severity = "ok" if fsync in ("always", "everysec") else "warning"
    yield Finding("aof", severity, f"AOF on, appendfsync {fsync}")
    if _text(r.config_get("aof-load-truncated").get("aof-load-truncated", "no")) == "yes":
        yield Finding("aof", "warning", "aof-load-truncated yes: after a crash that tore the AOF inside an append's "
                      "MULTI, Redis's lenient load leaves it open and the next restart runs half an append; set it "
                      "to no and mend a torn file with redis-check-aof --fix (docs/reliability.md)")


def _replicas(r: Any, prefix: str) -> Iterator[Finding]:
    info = r.info("replication")
    count = int(info.get("connected_slaves", 0))
    detail = f"{count} connected" if count else "none (durability='replica' would time out)"
    yield Finding("replicas", "ok", f"role {info.get('role', '?')}, replicas: {detail}")


def _indexes(r: Any, prefix: str) -> Iterator[Finding]:
    """Each index of the deployment's views (the checkpoint views' and the store's items), its
    schema version against the code's for that view (`index_schema_version`), and its scan."""
    stems = {Keyspace(prefix).index_stem(v): v for v in (*CHECKPOINTS.view_names, *STORE.view_names)}
    names = sorted(_text(n) for n in r.execute_command("FT._LIST"))
    ours = [(n, v) for n in names for stem, v in stems.items() if n.startswith(stem)]
    if not ours:
        yield Finding("indexes", "warning", "no index: no saver or store has run setup() under this prefix")
    for name, view in ours:
        version = int(m[1]) if (m := re.search(r":idx:v(\d+)", name)) else 0
        try:
            info = _pairs(r.execute_command("FT.INFO", name))
        except MovedError:  # named for a slot this primary gave away: see `_stale_indexes`
            continue
        indexing, docs = int(info.get("indexing", 0)), _text(info.get("num_docs", "?"))
        state = f"{name} (view {view}, schema v{version}): {docs} documents"
        if version < index_schema_version(view):
            yield Finding("indexes", "warning", f"{state}, older schema: see the upgrade runbook "
                          "(`streamsaver drop-stale-indexes --superseded` drops it)")
        elif indexing:
            yield Finding("indexes", "warning", f"{state}, still indexing "
                          f"({float(_text(info.get('percent_indexed', 0))):.0%})")
        else:
            yield Finding("indexes", "ok", f"{state}, indexed")


def _deployment(r: Any, prefix: str) -> Iterator[Finding]:
    partitions = r.hget(Keyspace(prefix).meta, "partitions")
    if partitions is None:
        yield Finding("partitions", "error", f"no streamsaver deployment under prefix {prefix!r}")
        return
    keyspace = keyspace_of(prefix, partitions)
    yield Finding("partitions", "ok", f"{keyspace.partitions} partitions")
    views = r.hget(keyspace.meta, "views")
    yield Finding("inline views", "ok", f"projected by every put: {_text(views)}" if views is not None else
                  "none recorded yet (the first saver's setup records them; docs/worker.md)")
    unread = dead = 0
    groups: set[str] = set()
    for p in range(keyspace.partitions):
        feed_groups = r.xinfo_groups(keyspace.feed(p)) if r.exists(keyspace.feed(p)) else []
        groups |= {_text(g["name"]) for g in feed_groups}
        unread += 0 if feed_groups else int(r.xlen(keyspace.feed(p)))
    if unread:
        yield Finding("feeds", "warning", f"{unread} feed entries on partitions no consumer group reads "
                      "(they grow until trimmed: a retention policy, streamsaver trim-feeds --max-len N --save, "
                      "applies at each trim-feeds run)")
    else:
        yield Finding("feeds", "ok", f"consumer groups: {', '.join(sorted(groups)) or 'none'}")
    for view in CHECKPOINTS.view_names:
        dead += int(r.xlen(keyspace.dead_letters(view)))
    for group in groups:
        dead += int(r.xlen(keyspace.subscriber_dead_letters(group)))
    yield Finding("dead letters", "warning" if dead else "ok",
                  f"{dead} dead letters (streamsaver dead-letters list --group G)" if dead else "none")


def _stale_indexes(r: Any, prefix: str) -> Iterator[Finding]:
    if not is_cluster(r):  # one server: one index per view, named for no slot
        return
    stale = stale_indexes(r, prefix)
    for index in stale:
        yield Finding("stale indexes", "warning", f"{index.name} on {index.node}: left behind by a slot move, it "
                      "indexes that primary's documents a second time; streamsaver drop-stale-indexes drops it "
                      f"({index.remedy()})")
    if not stale:
        yield Finding("stale indexes", "ok", "none")


def _other_deployments(r: Any, prefix: str) -> Iterator[Finding]:
    others = sorted({_text(k).removesuffix(":meta") for k in r.scan_iter(match="*:meta", count=1000, _type="hash")}
                    - {prefix})
    yield Finding("other deployments", "ok", ", ".join(others) if others else "none")


def _acl(r: Any, prefix: str) -> Iterator[Finding]:
    user = _text(r.execute_command("ACL", "WHOAMI"))
    try:
        rules = _pairs(r.execute_command("ACL", "GETUSER", user))
    except RedisError as exc:
        yield Finding("acl", "ok", f"user {user} (ACL GETUSER refused: {exc})")
        return
    commands, keys = _words(rules.get("commands", "?")), _words(rules.get("keys", "?"))
    yield Finding("acl", "ok", f"user {user}: commands {commands}; keys {keys}")


def _words(value: Any) -> str:
    return " ".join(_text(v) for v in value) if isinstance(value, list) else _text(value)


CHECKS: tuple[tuple[str, Callable[[Any, str], Iterator[Finding]]], ...] = (
    ("server", _server), ("eviction", _memory), ("aof", _persistence), ("replicas", _replicas),
    ("indexes", _indexes), ("partitions", _deployment), ("other deployments", _other_deployments),
    ("acl", _acl), ("stale indexes", _stale_indexes),
)
ON_EVERY_PRIMARY = {"server", "eviction", "aof", "replicas", "indexes", "acl"}
"""The checks that read one server: on Redis Cluster they run on each primary (a finding names it)."""


def _where(client: Any, name: str) -> list[tuple[str, Any]]:
    """The (primary, client) pairs check `name` runs on: each primary of a cluster for the checks
    of one server, else the client itself (no primary named)."""
    if name in ON_EVERY_PRIMARY and is_cluster(client):
        return [(node.name, node.redis_connection) for node in client.get_primaries()]
    return [("", client)]


def diagnose(client: Redis, prefix: str) -> list[Finding]:
    """Every check's findings on the server of `client` (on Redis Cluster, on each primary: the
    indexes left behind by slot moves too, `streamsaver.ops.stale_indexes`) and the deployment
    under `prefix`.

    A check the server refuses (no permission, an unknown command) becomes a warning naming
    the refusal, so one missing right does not hide the other findings. A connection error
    propagates (nothing else can be checked)."""
    findings: list[Finding] = []
    for name, check in CHECKS:
        for node, target in _where(client, name):
            on = f"{node}: " if node else ""
            try:
                findings.extend(Finding(f.check, f.severity, on + f.detail) for f in check(target, prefix))
            except (RedisConnectionError, RedisTimeoutError):
                raise
            except RedisError as exc:
                findings.append(Finding(name, "warning", f"{on}could not check: {exc}"))
    return findings
