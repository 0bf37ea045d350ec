"""Setup declares each view's index from its schema (`projectors.schema` for checkpoints)
without redisvl: the arguments it builds are the ones redisvl builds from the same dictionary
(the stored index schema is pinned by the stored-bytes corpus too)."""

from __future__ import annotations

import pytest
from redisvl.schema import IndexSchema

from projectors.domain import CHECKPOINTS
from projectors.schema import FIELDS, index_schema
from streamsaver.errors import ConfigurationError
from streamsaver.log.indexes import field_args
from streamsaver.log.keys import Keyspace
from streamsaver.log.setup import create_requests


def test_every_field_is_declared_as_redisvl_declares_it() -> None:
    schema = IndexSchema.from_dict(index_schema("i", "p:"))
    assert [field_args(field) for field in FIELDS] == [field.redis_args() for field in schema.redis_fields]


def test_the_create_command_names_the_view_prefix_and_every_field() -> None:
    keyspace = Keyspace("p")
    [create, *_] = create_requests(CHECKPOINTS, keyspace, ["full"], [set()])
    assert isinstance(create, list)
    assert create[:8] == [
        "FT.CREATE", keyspace.index("full"), "ON", "JSON", "PREFIX", 1, keyspace.document_prefix("full"), "SCHEMA"
    ]
    assert create[8:] == [arg for field in FIELDS for arg in field_args(field)]


def test_a_field_setup_cannot_declare_is_refused() -> None:
    with pytest.raises(ConfigurationError):
        field_args({"name": "v", "type": "vector", "path": "$.v"})
    with pytest.raises(ConfigurationError):
        field_args({"name": "t", "type": "tag", "path": "$.t", "attrs": {"withsuffixtrie": True}})


@pytest.mark.parametrize(
    "attrs",
    [
        {"dims": 8, "distance_metric": "cosine", "algorithm": "flat", "datatype": "float32"},
        {"dims": 3, "distance_metric": "l2", "algorithm": "hnsw", "datatype": "float32", "m": 32, "ef_runtime": 50},
    ],
)
def test_the_store_fields_are_declared_as_redisvl_declares_them(attrs: dict[str, object]) -> None:
    from projectors.store import FIELDS as STORE_FIELDS
    from projectors.store import vector_field

    fields = [*STORE_FIELDS, vector_field(attrs)]
    schema = IndexSchema.from_dict({"index": {"name": "s", "prefix": "p:", "storage_type": "json"}, "fields": fields})
    assert [field_args(field) for field in fields] == [field.redis_args() for field in schema.redis_fields]
