"""The RediSearch indexes of a domain's views, without I/O: what creates them from each view's
index schema (`streamsaver.log.domain.View.index_fields`, data in redisvl's format), lists
them, finds those of an older schema and reads whether they are still indexing.

On Redis Cluster a view has one index per primary (`streamsaver.log.routing.index_targets`):
the list and the infos are per primary too. `streamsaver.log.setup` runs these in its rounds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from streamsaver.errors import ConfigurationError, MissingModuleError
from streamsaver.log.domain import Domain
from streamsaver.log.keys import INDEX_SCHEMA_VERSION, VIEW_SCHEMA_VERSIONS, Keyspace, ViewName
from streamsaver.log.routing import Routed, Step, Topology, index_targets

__all__ = [
    "create_indexes",
    "field_args",
    "index_infos",
    "index_names",
    "index_schema_version",
    "indexed_views",
    "list_indexes",
    "missing_index",
    "older_indexes",
    "own_index_names",
    "still_indexing",
    "upgrading",
    "view_index_infos",
]

Command = list[str | bytes | int]

_TYPE_ARGS: dict[str, Command] = {
    "tag": ["TAG", "SEPARATOR", ","], "numeric": ["NUMERIC"], "text": ["TEXT", "WEIGHT", 1],
}
_FLAGS = (("case_sensitive", "CASESENSITIVE"), ("index_missing", "INDEXMISSING"), ("sortable", "SORTABLE"),
          ("unf", "UNF"), ("no_index", "NOINDEX"))


_VECTOR_TUNABLES = (("m", "M", 16), ("ef_construction", "EF_CONSTRUCTION", 200), ("ef_runtime", "EF_RUNTIME", 10),
                    ("epsilon", "EPSILON", 0.01))
"""HNSW's tunables, their arguments and redisvl's defaults (an HNSW field declares all four)."""


def _vector_args(attrs: Mapping[str, Any]) -> Command:
    """``VECTOR <FLAT|HNSW> n TYPE .. DIM .. DISTANCE_METRIC .. [M ..] ...`` from redisvl's
    vector attributes (``algorithm``, ``dims``, ``distance_metric``, ``datatype``, and the HNSW
    tunables ``m``, ``ef_construction``, ``ef_runtime``).

    Raises:
        ConfigurationError: no ``dims``, or an attribute this builder does not know.
    """
    known = {"algorithm", "dims", "distance_metric", "datatype", *(name for name, _, _ in _VECTOR_TUNABLES)}
    if "dims" not in attrs or set(attrs) - known:
        raise ConfigurationError(f"vector attributes {dict(attrs)!r} are not ones setup can declare")
    params: Command = [
        "TYPE", str(attrs.get("datatype", "float32")).upper(), "DIM", int(attrs["dims"]),
        "DISTANCE_METRIC", str(attrs.get("distance_metric", "cosine")).upper(),
    ]
    algorithm = str(attrs.get("algorithm", "flat")).upper()
    if algorithm == "HNSW":
        for name, arg, default in _VECTOR_TUNABLES:
            params += [arg, attrs.get(name, default)]
    return ["VECTOR", algorithm, len(params), *params]


def field_args(field: Mapping[str, Any]) -> Command:
    """The ``FT.CREATE ... SCHEMA`` arguments of one index field (`View.index_fields`), as
    redisvl spells them from the same dictionary (a unit test holds the two equal).

    Raises:
        ConfigurationError: a field type or attribute this builder does not know.
    """
    attrs = field.get("attrs", {})
    if field["type"] == "vector":
        return [field["path"], "AS", field["name"], *_vector_args(attrs)]
    if field["type"] not in _TYPE_ARGS or set(attrs) - {name for name, _ in _FLAGS}:
        raise ConfigurationError(f"index field {field!r} has a type or attribute setup cannot declare")
    flags: Command = [flag for name, flag in _FLAGS if attrs.get(name)]
    return [field["path"], "AS", field["name"], *_TYPE_ARGS[field["type"]], *flags]


def index_schema_version(view: ViewName) -> int:
    """The current index schema version of `view` (its index name carries it: ``idx:vN``)."""
    return VIEW_SCHEMA_VERSIONS.get(view, INDEX_SCHEMA_VERSION)


def indexed_views(domain: Domain, views: Sequence[ViewName]) -> list[ViewName]:
    """Those of `views` that have an index (a non-empty `View.index_fields`), in order."""
    return [view for view in views if domain.view(view).index_fields]


def _create_index(domain: Domain, keyspace: Keyspace, view: ViewName, name: str) -> Command:
    fields = [arg for field in domain.view(view).index_fields for arg in field_args(field)]
    documents = keyspace.document_prefix(view, domain.view(view).documents)
    return ["FT.CREATE", name, "ON", "JSON", "PREFIX", 1, documents, "SCHEMA", *fields]


def create_indexes(
    domain: Domain, keyspace: Keyspace, views: Sequence[ViewName], existing: Sequence[set[str]],
    topology: Topology | None = None,
) -> list[Step]:
    """``FT.CREATE`` of every index of `views` missing on its node (`existing` as `index_names`
    gives them; one index per primary on a cluster)."""
    return [
        target.query(_create_index(domain, keyspace, view, target.name))
        for view in indexed_views(domain, views)
        for node, target in enumerate(index_targets(keyspace, view, topology))
        if target.name not in existing[node]
    ]


def list_indexes(topology: Topology | None) -> list[Step]:
    """``FT._LIST`` (of every primary on a cluster); `index_names` reads the replies."""
    return [["FT._LIST"]] if topology is None else [*topology.on_every_node(["FT._LIST"])]


def missing_index(reply: Any) -> bool:
    """Whether a reply is RediSearch's answer about an index that does not exist."""
    text = str(reply).lower()
    return isinstance(reply, Exception) and ("no such index" in text or "unknown index name" in text)


def own_index_names(
    keyspace: Keyspace, views: Sequence[ViewName], topology: Topology | None, replies: Sequence[Any]
) -> list[set[str]]:
    """`index_names` from the replies to `view_index_infos` (``FT.INFO`` of the deployment's own
    indexes, for a user who may not list every tenant's): an index answered exists, one
    ``no such index`` does not.

    Raises:
        MissingModuleError: RediSearch is missing.
        ConfigurationError: the server refused an ``FT.INFO`` otherwise.
    """
    targets = [(node, target) for view in views for node, target in enumerate(index_targets(keyspace, view, topology))]
    existing: list[set[str]] = [set() for _ in range(1 if topology is None else len(topology.shards))]
    for (node, target), reply in zip(targets, replies, strict=True):
        if isinstance(reply, Exception) and "unknown command" in str(reply).lower():
            raise MissingModuleError("RediSearch (search)", "FT.INFO")
        if isinstance(reply, Exception) and not missing_index(reply):
            raise ConfigurationError(f"setup could not read the index {target.name}: {reply}") from reply
        if not isinstance(reply, Exception):
            existing[node].add(target.name)
    return existing


def index_names(replies: Sequence[Any]) -> list[set[str]]:
    """The index names in the replies to `list_indexes`: one set per primary, in `Topology`
    order (one set on a single server). Per node: after slots moved, a node's new tag may be
    one another node already has an index under."""
    return [{i.decode() if isinstance(i, bytes) else str(i) for i in indexes} for indexes in replies]


def older_indexes(keyspace: Keyspace, views: Sequence[ViewName], existing: Sequence[set[str]]) -> list[str]:
    """The indexes of an older schema of `views` (on any primary), sorted: while one exists an
    upgrade is under way, and the new indexes cover documents written before them."""
    older = tuple(keyspace.index(view, version=n) for view in views for n in range(1, index_schema_version(view)))
    return sorted(
        {name for names in existing for name in names for old in older if name == old or name.startswith(old + ":")}
    )


def upgrading(keyspace: Keyspace, views: Sequence[ViewName], existing: Sequence[set[str]]) -> bool:
    """Whether an index of an older schema of one of `views` exists (`older_indexes`)."""
    return bool(older_indexes(keyspace, views, existing))


def view_index_infos(keyspace: Keyspace, views: Sequence[ViewName], topology: Topology | None) -> list[Step]:
    """``FT.INFO`` of every index of `views` (one per primary on a cluster)."""
    targets = [target for view in views for target in index_targets(keyspace, view, topology)]
    return [target.query(["FT.INFO", target.name]) for target in targets]


def index_infos(requests: Sequence[Step]) -> list[Step]:
    """``FT.INFO`` of every index that `requests` (from `create_indexes`) creates."""
    infos: list[Step] = []
    for step in requests:
        command = step.command if isinstance(step, Routed) else step
        if command[0] == "FT.CREATE":
            info: Command = ["FT.INFO", command[1]]
            infos.append(Routed(step.key, info) if isinstance(step, Routed) else info)
    return infos


def still_indexing(replies: Sequence[Any]) -> bool:
    """Whether an index in the replies to `index_infos` is still indexing existing documents.

    Raises:
        ConfigurationError: the server refused an ``FT.INFO``.
    """
    for reply in replies:
        if isinstance(reply, Exception):
            raise ConfigurationError(f"cannot read a new index's state: {reply}") from reply
        fields = reply if isinstance(reply, dict) else dict(zip(reply[::2], reply[1::2], strict=True))
        if int(fields.get(b"indexing", fields.get("indexing", 0)) or 0):
            return True
    return False
