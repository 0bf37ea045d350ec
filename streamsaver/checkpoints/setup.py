"""What `setup()` sends and how it reads the replies, without I/O.

Two round trips (three on Redis Cluster, which first reads the slot map: see
`streamsaver.log.routing`): the first probes for RediSearch and RedisJSON with harmless commands (never
``MODULE LIST``, which managed services often forbid), fixes the partition count in the
deployment's meta hash and lists the existing indexes; the second creates the missing indexes
and loads the scripts. On a cluster the index list, the indexes and the scripts are per primary.
Safe to run on every start and from many processes at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator, Sequence
from typing import Any

from projectors.schema import FIELDS
from streamsaver.errors import ConfigurationError, MissingModuleError
from streamsaver.log.keys import DEFAULT_PARTITIONS, INDEX_SCHEMA_VERSION, Keyspace, ViewName
from streamsaver.log.program import Program, Wait
from streamsaver.log.routing import Routed, Step, Topology, index_targets
from streamsaver.scripts import ALL, Script

__all__ = [
    "INDEXING_POLL_S",
    "INDEXING_WAIT_S",
    "create_requests",
    "field_args",
    "index_infos",
    "index_names",
    "list_indexes",
    "load_scripts",
    "older_indexes",
    "probe_request",
    "program",
    "read_created",
    "read_probe",
    "read_topology",
    "still_indexing",
    "upgrading",
    "view_index_infos",
]

Command = list[str | bytes | int]
log = logging.getLogger("streamsaver.setup")

INDEXING_WAIT_S = 30.0
"""How long a setup after moved slots (or during an index schema upgrade) waits for new indexes
to index what their nodes hold."""
INDEXING_POLL_S = 0.05
"""The pause between two reads of the new indexes' state (`program`)."""


def probe_request(prefix: str, partitions: int | None, topology: Topology | None = None) -> list[Step]:
    """Round trip 1: index list (of every primary on a cluster), module probes, partition count."""
    meta = Keyspace(prefix).meta
    return [
        *list_indexes(topology),
        ["JSON.TYPE", f"{prefix}:probe"],
        ["HSETNX", meta, "partitions", partitions or DEFAULT_PARTITIONS],
        ["HGET", meta, "partitions"],
    ]


def _is_unknown_command(reply: Any) -> bool:
    return isinstance(reply, Exception) and "unknown command" in str(reply).lower()


def read_probe(prefix: str, partitions: int | None, replies: Sequence[Any]) -> tuple[Keyspace, list[set[str]]]:
    """The deployment's keyspace and the index names that already exist (per primary).

    Raises:
        MissingModuleError: RediSearch or RedisJSON is missing.
        ConfigurationError: the stored partition count differs from the one asked for, or the
            server refused a probe.
    """
    *lists, json_probe, _, stored = replies
    if any(_is_unknown_command(reply) for reply in lists):
        raise MissingModuleError("RediSearch (search)", "FT._LIST")
    if _is_unknown_command(json_probe):
        raise MissingModuleError("RedisJSON (ReJSON)", "JSON.TYPE")
    for reply in replies:
        if isinstance(reply, Exception):
            raise ConfigurationError(f"setup was refused by the server: {reply}") from reply
    stored_partitions = int(stored)
    if partitions is not None and partitions != stored_partitions:
        raise ConfigurationError(
            f"this deployment ({prefix!r}) was set up with {stored_partitions} partitions; "
            f"it cannot be opened with {partitions} (omit `partitions` to use the stored count)"
        )
    return Keyspace(prefix, stored_partitions), index_names(lists)


_TYPE_ARGS: dict[str, Command] = {"tag": ["TAG", "SEPARATOR", ","], "numeric": ["NUMERIC"], "text": ["TEXT", "WEIGHT", 1]}
_FLAGS = (("case_sensitive", "CASESENSITIVE"), ("index_missing", "INDEXMISSING"), ("sortable", "SORTABLE"),
          ("unf", "UNF"), ("no_index", "NOINDEX"))


def field_args(field: dict[str, Any]) -> Command:
    """The ``FT.CREATE ... SCHEMA`` arguments of one field of `projectors.schema.FIELDS`, as
    redisvl spells them from the same dictionary (a unit test holds the two equal).

    Raises:
        ConfigurationError: a field type or attribute this builder does not know.
    """
    attrs = field.get("attrs", {})
    if field["type"] not in _TYPE_ARGS or set(attrs) - {name for name, _ in _FLAGS}:
        raise ConfigurationError(f"index field {field!r} has a type or attribute setup cannot declare")
    flags: Command = [flag for name, flag in _FLAGS if attrs.get(name)]
    return [field["path"], "AS", field["name"], *_TYPE_ARGS[field["type"]], *flags]


def _create_index(keyspace: Keyspace, view: ViewName, name: str) -> Command:
    fields = [arg for field in FIELDS for arg in field_args(field)]
    return ["FT.CREATE", name, "ON", "JSON", "PREFIX", 1, keyspace.document_prefix(view), "SCHEMA", *fields]


def load_scripts(topology: Topology | None = None, scripts: Sequence[Script] = ALL) -> list[Step]:
    """``SCRIPT LOAD`` of `scripts` (on every primary of a cluster)."""
    loads: list[Command] = [["SCRIPT", "LOAD", script.source] for script in scripts]
    return [*loads] if topology is None else [r for load in loads for r in topology.on_every_node(load)]


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


def list_indexes(topology: Topology | None) -> list[Step]:
    """``FT._LIST`` (of every primary on a cluster); `index_names` reads the replies."""
    return [["FT._LIST"]] if topology is None else [*topology.on_every_node(["FT._LIST"])]


def index_names(replies: Sequence[Any]) -> list[set[str]]:
    """The index names in the replies to `list_indexes`: one set per primary, in `Topology`
    order (one set on a single server). Per node: after slots moved, a node's new tag may be
    one another node already has an index under."""
    return [{i.decode() if isinstance(i, bytes) else str(i) for i in indexes} for indexes in replies]


def older_indexes(keyspace: Keyspace, views: Sequence[ViewName], existing: Sequence[set[str]]) -> list[str]:
    """The indexes of an older schema of `views` (on any primary), sorted: while one exists an
    upgrade is under way, and the new indexes cover documents written before them."""
    older = tuple(keyspace.index(view, version=n) for view in views for n in range(1, INDEX_SCHEMA_VERSION))
    return sorted({name for names in existing for name in names for old in older if name == old or name.startswith(old + ":")})


def upgrading(keyspace: Keyspace, views: Sequence[ViewName], existing: Sequence[set[str]]) -> bool:
    """Whether an index of an older schema of one of `views` exists (`older_indexes`)."""
    return bool(older_indexes(keyspace, views, existing))


def view_index_infos(keyspace: Keyspace, views: Sequence[ViewName], topology: Topology | None) -> list[Step]:
    """``FT.INFO`` of every index of `views` (one per primary on a cluster)."""
    return [target.query(["FT.INFO", target.name]) for view in views for target in index_targets(keyspace, view, topology)]


def create_requests(
    keyspace: Keyspace, views: Sequence[ViewName], existing: Sequence[set[str]], topology: Topology | None = None
) -> list[Step]:
    """Round trip 2: create missing indexes (one per primary on a cluster; `existing` as
    `index_names` gives them) and load every script."""
    creates = [
        target.query(_create_index(keyspace, view, target.name))
        for view in views
        for node, target in enumerate(index_targets(keyspace, view, topology))
        if target.name not in existing[node]
    ]
    return creates + load_scripts(topology)


def index_infos(requests: Sequence[Step]) -> list[Step]:
    """``FT.INFO`` of every index that `requests` (from `create_requests`) creates."""
    infos: list[Step] = []
    for step in requests:
        command = step.command if isinstance(step, Routed) else step
        if command[0] == "FT.CREATE":
            info: Command = ["FT.INFO", command[1]]
            infos.append(Routed(step.key, info) if isinstance(step, Routed) else info)
    return infos


def still_indexing(replies: Sequence[Any]) -> bool:
    """Whether an index in the replies to `index_infos` is still indexing existing documents."""
    for reply in replies:
        if isinstance(reply, Exception):
            raise ConfigurationError(f"cannot read a new index's state: {reply}") from reply
        fields = reply if isinstance(reply, dict) else dict(zip(reply[::2], reply[1::2]))
        if int(fields.get(b"indexing", fields.get("indexing", 0)) or 0):
            return True
    return False


def read_created(replies: Sequence[Any]) -> None:
    """Check round trip 2; an index another process created meanwhile is fine.

    Raises:
        ConfigurationError: an index or script could not be created.
    """
    for reply in replies:
        if isinstance(reply, Exception) and "already exists" not in str(reply).lower():
            raise ConfigurationError(f"setup could not create an index or load a script: {reply}") from reply


def program(
    prefix: str, partitions: int | None, views: Sequence[ViewName], cluster: bool, wait_indexed: bool = False
) -> Program[tuple[Keyspace, Topology | None]]:
    """`setup()`: the deployment's keyspace and (on a cluster, read first) slot map. With
    `wait_indexed`, it then polls the indexes it created until they have indexed the documents
    already there (at most `INDEXING_WAIT_S`, a `Wait` of `INDEXING_POLL_S` between two polls):
    after slots moved, new indexes are made on nodes that hold documents. During an upgrade to a
    new index schema (an index of an older one exists) it polls every index of its views alike.

    Raises:
        MissingModuleError, ConfigurationError: see `read_probe`, `read_created`; or new indexes
            still indexing after `INDEXING_WAIT_S`.
    """
    topology = yield from read_topology(prefix, cluster)
    keyspace, existing = yield from _probe(prefix, partitions, topology)
    requests = create_requests(keyspace, views, existing, topology)
    read_created((yield requests))
    infos = index_infos(requests) if wait_indexed else []
    older = older_indexes(keyspace, views, existing)
    if older:
        # The new indexes cover documents written before them: until their scan is done, a
        # query would quietly miss some (whichever process created them).
        infos = view_index_infos(keyspace, views, topology)
    yield from _indexed(infos)
    if older:
        # Both schemas' indexes are kept current until an operator drops the older: the
        # server pays for both (docs/operations.md, upgrading the index schema).
        log.warning(
            "indexes of an older schema remain: %s; drop them (FT.DROPINDEX, without DD) once no "
            "process of an older release uses them (docs/operations.md)", ", ".join(older),
        )
    return keyspace, topology


def _probe(
    prefix: str, partitions: int | None, topology: Topology | None
) -> Program[tuple[Keyspace, list[set[str]]]]:
    """`read_probe` of the probe's replies; a refused probe takes back the partition count it
    stored, so that a retry (after the modules are installed, or by an import, which wants an
    empty prefix) finds the prefix as it was."""
    replies = yield probe_request(prefix, partitions, topology)
    try:
        return read_probe(prefix, partitions, replies)
    except ConfigurationError:
        if replies[-2] == 1:  # HSETNX: this probe created the settings
            yield [["HDEL", Keyspace(prefix).meta, "partitions"]]
        raise


def _indexed(infos: list[Step]) -> Program[None]:
    deadline = time.monotonic() + INDEXING_WAIT_S
    while infos and still_indexing((yield infos)):
        yield Wait(INDEXING_POLL_S)  # not a busy loop of FT.INFO on the primaries
        if time.monotonic() > deadline:
            # Reading on would miss whatever the new indexes have not reached yet.
            raise ConfigurationError(
                f"new indexes were still indexing after {INDEXING_WAIT_S:.0f} s; call again when "
                "`FT.INFO` shows indexing 0 on every primary"
            )
