"""Setting up a deployment of a domain, without I/O: what `setup()` sends and how it reads the
replies, for any `streamsaver.log.domain.Domain`.

Two round trips (three on Redis Cluster, which first reads the slot map: `read_topology`): the
first probes for RediSearch and RedisJSON with harmless commands (never ``MODULE LIST``, which
managed services often forbid), fixes the partition count in the deployment's meta hash and
lists the existing indexes; the second creates the missing indexes of the domain's views
(`streamsaver.log.indexes`, from each view's index schema) and loads the domain's scripts, and
a third, only when it created one, records each in the meta hash. A user who may not list
every tenant's indexes (the runtime ACL, docs/security.md) asks ``FT.INFO`` of its own in one
more round trip, and may create none
(`IndexMissingError`). An index re-created where the record says one was (lost or dropped) is
waited for until it has indexed what is there. On a
cluster the index list, the indexes and the scripts are per primary. Safe to run on every start
and from many processes at once. The feed consumers run parts of it (`read_topology`,
`load_scripts`, `create_requests`) in their own preparation.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator, Sequence
from typing import Any

from streamsaver.errors import (
    ConfigurationError,
    EvictionPolicyError,
    IndexMissingError,
    IndexNotReadyError,
    MissingModuleError,
    SettingsLostError,
)
from streamsaver.log.domain import Domain, ScriptRef
from streamsaver.log.indexes import (
    create_indexes,
    index_infos,
    index_names,
    indexed_views,
    list_indexes,
    older_indexes,
    own_index_names,
    still_indexing,
    view_index_infos,
)
from streamsaver.log.keys import DEFAULT_PARTITIONS, Keyspace, ViewName
from streamsaver.log.program import Program, Wait
from streamsaver.log.routing import Routed, Step, Topology

__all__ = [
    "INDEXING_POLL_S",
    "INDEXING_WAIT_S",
    "check_settings_kept",
    "create_requests",
    "load_scripts",
    "probe_request",
    "program",
    "read_created",
    "read_probe",
    "read_topology",
]

Command = list[str | bytes | int]
log = logging.getLogger("streamsaver.setup")

INDEXING_WAIT_S = 30.0
"""How long a setup after moved slots (or during an index schema upgrade) waits for new indexes
to index what their nodes hold."""
INDEXING_POLL_S = 0.05
"""The pause between two reads of the new indexes' state (`program`)."""


def read_topology(prefix: str, cluster: bool) -> Generator[list[Step], list[Any], Topology | None]:
    """On a cluster, one round trip reading the slot map (`Topology`); None on one server.

    Raises:
        ConfigurationError: the cluster refused ``CLUSTER SLOTS``.
    """
    if not cluster:
        return None
    # Any node answers; routing by a key spares the client a guess.
    [slots] = yield [Routed(Keyspace(prefix).meta, ["CLUSTER", "SLOTS"])]
    if isinstance(slots, Exception):
        raise ConfigurationError(f"the cluster refused CLUSTER SLOTS: {slots}") from slots
    return Topology.from_slots(slots)


def probe_request(prefix: str, partitions: int | None, topology: Topology | None = None) -> list[Step]:
    """Round trip 1: index list (of every primary on a cluster), module probes, partition count,
    and the server's memory settings (``INFO memory``, of the settings' node on a cluster)."""
    keyspace = Keyspace(prefix)
    return [
        *list_indexes(topology),
        ["JSON.TYPE", keyspace.probe],
        ["HSETNX", keyspace.meta, "partitions", partitions or DEFAULT_PARTITIONS],
        ["HGET", keyspace.meta, "partitions"],
        Routed(keyspace.meta, ["INFO", "memory"]),
    ]


EVICTING = ("allkeys-", "volatile-")
"""The starts of the ``maxmemory-policy`` values under which Redis deletes keys when full."""


def eviction_policy(info: Any) -> str | None:
    """The ``maxmemory_policy`` an ``INFO memory`` reply states (parsed by the client, or its
    text); None when the reply is an error (an ACL without ``INFO``) or says none."""
    if isinstance(info, dict):
        policy = info.get("maxmemory_policy")
        return None if policy is None else str(policy)
    if isinstance(info, bytes | str):
        text = info.decode() if isinstance(info, bytes) else info
        for line in text.splitlines():
            if line.startswith("maxmemory_policy:"):
                return line.partition(":")[2].strip()
    return None


def check_eviction(info: Any, allow_eviction: bool) -> None:
    """Refuse a server that evicts keys when full, unless the user allowed it.

    Raises:
        EvictionPolicyError: the policy is ``allkeys-*`` or ``volatile-*`` and not `allow_eviction`.
    """
    policy = eviction_policy(info)
    if policy is not None and policy.startswith(EVICTING) and not allow_eviction:
        raise EvictionPolicyError(
            f"the server's maxmemory-policy is {policy}: when full it deletes keys, losing checkpoints and "
            "the deployment's settings without an error; set it to noeviction, or pass allow_eviction=True"
        )


def _out_of_memory(reply: Any) -> bool:
    return isinstance(reply, Exception) and "maxmemory" in str(reply)


def _not_permitted(reply: Any) -> bool:
    return isinstance(reply, Exception) and "no permissions" in str(reply).lower()


def _is_unknown_command(reply: Any) -> bool:
    return isinstance(reply, Exception) and "unknown command" in str(reply).lower()


def read_probe(
    prefix: str, partitions: int | None, replies: Sequence[Any]
) -> tuple[Keyspace, list[set[str]] | None]:
    """The deployment's keyspace and the index names that already exist (per primary); None
    for the names when the user may not list the indexes (``FT._LIST``, which names every
    tenant's): `own_indexes` asks after the deployment's own.

    Raises:
        MissingModuleError: RediSearch or RedisJSON is missing.
        ConfigurationError: the stored partition count differs from the one asked for, or the
            server refused a probe.
    """
    *lists, json_probe, created, stored, _ = replies
    if any(_is_unknown_command(reply) for reply in lists):
        raise MissingModuleError("RediSearch (search)", "FT._LIST")
    if _is_unknown_command(json_probe):
        raise MissingModuleError("RedisJSON (ReJSON)", "JSON.TYPE")
    # A runtime user may not list every tenant's indexes (docs/security.md): `program` asks
    # after its own instead.
    listed = not any(_not_permitted(reply) for reply in lists)
    # A full server (noeviction) refuses the write of the settings: reading needs none once they
    # exist. The memory settings' reply is read by `check_eviction`.
    checked = [*lists, json_probe, stored] if stored is not None and _out_of_memory(created) else replies[:-1]
    checked = checked if listed else checked[len(lists):]
    for reply in checked:
        if isinstance(reply, Exception):
            raise ConfigurationError(f"setup was refused by the server: {reply}") from reply
    stored_partitions = int(stored)
    if partitions is not None and partitions != stored_partitions:
        raise ConfigurationError(
            f"this deployment ({prefix!r}) was set up with {stored_partitions} partitions; "
            f"it cannot be opened with {partitions} (omit `partitions` to use the stored count)"
        )
    return Keyspace(prefix, stored_partitions), index_names(lists) if listed else None


def load_scripts(scripts: Sequence[ScriptRef], topology: Topology | None = None) -> list[Step]:
    """``SCRIPT LOAD`` of `scripts` (on every primary of a cluster)."""
    loads: list[Command] = [["SCRIPT", "LOAD", script.source] for script in scripts]
    return [*loads] if topology is None else [r for load in loads for r in topology.on_every_node(load)]


def create_requests(
    domain: Domain, keyspace: Keyspace, views: Sequence[ViewName], existing: Sequence[set[str]],
    topology: Topology | None = None,
) -> list[Step]:
    """Round trip 2: create the missing indexes of `views` (one per primary on a cluster;
    `existing` as `streamsaver.log.indexes.index_names` gives them) and load the domain's
    scripts (`Domain.setup_scripts`)."""
    return create_indexes(domain, keyspace, views, existing, topology) + load_scripts(domain.setup_scripts, topology)


def read_created(replies: Sequence[Any]) -> None:
    """Check round trip 2; an index another process created meanwhile is fine.

    Raises:
        IndexMissingError: an index is missing and the user may not create it.
        ConfigurationError: an index or script could not be created.
    """
    for reply in replies:
        if isinstance(reply, Exception) and "already exists" not in str(reply).lower():
            if _not_permitted(reply) and "ft.create" in str(reply).lower():
                raise IndexMissingError(
                    f"an index of this deployment is missing and this user may not create it ({reply}): run "
                    "setup() or `streamsaver setup` as the deployment's admin user (docs/security.md)"
                ) from reply
            raise ConfigurationError(f"setup could not create an index or load a script: {reply}") from reply


def program(
    domain: Domain, prefix: str, partitions: int | None, views: Sequence[ViewName], cluster: bool,
    wait_indexed: bool = False, allow_eviction: bool = False,
) -> Program[tuple[Keyspace, Topology | None]]:
    """`setup()` of a deployment of `domain` keeping `views`: its keyspace and (on a cluster,
    read first) slot map. With `wait_indexed`, it then polls the indexes it created until they
    have indexed the documents already there (at most `INDEXING_WAIT_S`, a `Wait` of
    `INDEXING_POLL_S` between two polls): after slots moved, new indexes are made on nodes that
    hold documents; a saver whose query met ``no such index`` (a lost or dropped index) sets up
    so too. Without it, those it re-created (`_recreated`) or made beside others of their view
    (`_joining`). During an upgrade to a new index schema it polls every index of its views.

    Raises:
        MissingModuleError, ConfigurationError, IndexMissingError: see `read_probe`, `read_created`.
        IndexNotReadyError: new indexes still indexing after `INDEXING_WAIT_S`.
        EvictionPolicyError: see `check_eviction`.
    """
    topology = yield from read_topology(prefix, cluster)
    keyspace, listed = yield from _probe(domain, prefix, partitions, topology, allow_eviction)
    existing = listed if listed is not None else (yield from own_indexes(domain, keyspace, views, topology))
    requests = create_requests(domain, keyspace, views, existing, topology)
    commands = [step.command if isinstance(step, Routed) else step for step in requests]
    created = [str(command[1]) for command in commands if command[:1] == ["FT.CREATE"]]
    replies = yield [*requests, *_records(keyspace, created, "HGET")]
    read_created(replies[: len(requests)])
    made = [name for name, reply in zip(created, _creation_replies(requests, replies), strict=True)
            if not isinstance(reply, Exception)]
    if made:
        log.info("setup of %r: created the indexes %s", prefix, ", ".join(made))
        # Only those this setup made, once they exist (a user refused FT.CREATE records nothing,
        # nor does a setup that lost the race to another): one more trip, on creation only.
        yield _records(keyspace, made, "HSET")
    indexed = indexed_views(domain, views)
    joining = _joining(keyspace, indexed, existing, created)
    infos = index_infos(requests) if wait_indexed or joining else _recreated(requests, replies, len(created))
    older = older_indexes(keyspace, indexed, existing)
    if older:
        log.info("index schema upgrade: waiting for the new indexes beside the older %s", ", ".join(older))
        # The new indexes cover documents written before them: until their scan is done, a
        # query would quietly miss some (whichever process created them).
        infos = view_index_infos(keyspace, indexed, topology)
    yield from _indexed(infos)
    if older:
        # Both schemas' indexes are kept current until an operator drops the older: the
        # server pays for both (docs/operations.md, upgrading the index schema).
        log.warning(
            "indexes of an older schema remain: %s; once no process of an older release uses them, drop "
            "them: `streamsaver drop-stale-indexes --superseded` (docs/operations.md)", ", ".join(older),
        )
    return keyspace, topology


def _probe(
    domain: Domain, prefix: str, partitions: int | None, topology: Topology | None, allow_eviction: bool
) -> Program[tuple[Keyspace, list[set[str]] | None]]:
    """`read_probe` of the probe's replies; a refused probe takes back the partition count it
    stored, so that a retry (after the modules are installed, or by an import, which wants an
    empty prefix) finds the prefix as it was. A probe that created the settings of a deployment
    whose indexes already hold documents is refused (`check_settings_kept`)."""
    replies = yield probe_request(prefix, partitions, topology)
    try:
        check_eviction(replies[-1], allow_eviction)
        keyspace, listed = read_probe(prefix, partitions, replies)
        if replies[-3] == 1:
            existing = listed if listed is not None else (
                yield from own_indexes(domain, keyspace, domain.view_names, topology)
            )
            yield from check_settings_kept(domain, keyspace, existing, topology)
        return keyspace, listed
    except ConfigurationError:
        if replies[-3] == 1:  # HSETNX: this probe created the settings
            yield [["HDEL", Keyspace(prefix).meta, "partitions"]]
        raise


def check_settings_kept(
    domain: Domain, keyspace: Keyspace, existing: Sequence[set[str]], topology: Topology | None
) -> Program[None]:
    """After a probe created the deployment's settings: refuse when indexes of the domain's views
    already exist and hold documents (one ``FT.INFO`` round trip, only then): the deployment
    existed and lost its settings, and the partition count just stored may not be its own.

    Raises:
        SettingsLostError: an index of the deployment holds documents.
    """
    names = {name for found in existing for name in found}
    views = [
        view for view in indexed_views(domain, domain.view_names)
        if any(name == keyspace.index(view) or name.startswith(keyspace.index(view) + ":") for name in names)
    ]
    if not views:
        return
    replies = yield view_index_infos(keyspace, views, topology)
    documents = sum(_documents(reply) for reply in replies)
    if documents:
        raise SettingsLostError(
            f"the deployment under prefix {keyspace.prefix!r} holds {documents} indexed documents but its "
            f"settings ({keyspace.meta}: the partition count) are gone; starting would re-partition it "
            "(threads vanish, writes fork). Restore them with `streamsaver restore-settings --prefix "
            f"{keyspace.prefix} --partitions N` (N: the count it was set up with, 16 unless chosen; the "
            "command checks N against the logs), then start again"
        )


def _documents(reply: Any) -> int:
    """The ``num_docs`` of an ``FT.INFO`` reply (0 for an error: no such index on that node)."""
    if isinstance(reply, Exception):
        return 0
    fields = reply if isinstance(reply, dict) else dict(zip(reply[::2], reply[1::2], strict=True))
    return int(float(fields.get(b"num_docs", fields.get("num_docs", 0)) or 0))


def _records(keyspace: Keyspace, created: Sequence[str], command: str) -> list[Step]:
    """Per index created, ``HGET`` (read) or ``HSET`` (write) of the deployment's record that
    it was created once: ``index:<name after the prefix>`` in the settings hash."""
    fields = [f"index:{name.removeprefix(keyspace.prefix + ':')}" for name in created]
    return [["HGET", keyspace.meta, field] if command == "HGET" else ["HSET", keyspace.meta, field, 1]
            for field in fields]


def _joining(keyspace: Keyspace, views: Sequence[ViewName], existing: Sequence[set[str]],
             created: Sequence[str]) -> bool:
    """Whether setup creates an index of a view that already has one on another node: on a
    cluster, a primary that joined or took slots holds documents of a deployment that has them, so
    setup waits until the new index has indexed them. A view's first index (a first setup, a view
    added to the deployment) waits for nothing: its scan walks the whole keyspace for documents the
    view has not projected yet, which on a large server outlasts any bound."""
    for view in views:
        own = keyspace.index(view)

        def of_view(name: str, own: str = own) -> bool:
            return name == own or name.startswith(own + ":")

        if any(of_view(name) for name in created) and any(of_view(n) for found in existing for n in found):
            return True
    return False


def _recreated(requests: Sequence[Step], replies: Sequence[Any], created: int) -> list[Step]:
    """``FT.INFO`` of the indexes this setup created that the deployment had before (its
    record says so: lost or dropped), whose documents are there: until the new index has
    scanned them a query would quietly miss some. A first creation waits for nothing."""
    infos = index_infos(requests)
    made = _creation_replies(requests, replies)
    before = replies[len(requests) : len(requests) + created]
    return [info for info, reply, had in zip(infos, made, before, strict=True)
            if not isinstance(reply, Exception) and had is not None]


def _creation_replies(requests: Sequence[Step], replies: Sequence[Any]) -> list[Any]:
    """The replies to the ``FT.CREATE`` among `requests`, in order."""
    return [reply for step, reply in zip(requests, replies, strict=False) if _command(step)[0] == "FT.CREATE"]


def _command(step: Step) -> Command:
    return step.command if isinstance(step, Routed) else step


def own_indexes(
    domain: Domain, keyspace: Keyspace, views: Sequence[ViewName], topology: Topology | None
) -> Program[list[set[str]]]:
    """`index_names` for a user who may not list every tenant's indexes: one round trip of
    ``FT.INFO`` on the deployment's own (`own_index_names`)."""
    indexed = indexed_views(domain, views)
    if not indexed:
        return [set() for _ in range(1 if topology is None else len(topology.shards))]
    replies = yield view_index_infos(keyspace, indexed, topology)
    return own_index_names(keyspace, indexed, topology, replies)


def _indexed(infos: list[Step]) -> Program[None]:
    deadline = time.monotonic() + INDEXING_WAIT_S
    while infos and still_indexing((yield infos)):
        log.debug("indexes still indexing; polling again in %.2f s", INDEXING_POLL_S)
        yield Wait(INDEXING_POLL_S)  # not a busy loop of FT.INFO on the primaries
        if time.monotonic() > deadline:
            # Reading on would miss whatever the new indexes have not reached yet.
            raise IndexNotReadyError(
                f"new indexes were still indexing after {INDEXING_WAIT_S:.0f} s: a query would miss "
                "documents they have not reached; call again when `FT.INFO` shows indexing 0 on every primary"
            )
