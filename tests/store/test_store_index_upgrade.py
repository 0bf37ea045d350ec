"""The store's items index schema v5 (docs/store.md, "Index schema v5"): it no longer indexes
``c`` and ``d``, which no query reads. A deployment set up by an older release has the v4
index; the documents are the same, so no rebuild: the first `setup()` of this release builds
the v5 index beside it over the items there, waits until that is done, and warns while v4
remains (an older release's processes keep querying it, and it is kept current); once an
operator drops it, puts are indexed once again and setup says nothing. `doctor` reports the
items index's schema version and warns while the older one remains."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from redis.commands.search.query import Query

from projectors.store import FIELDS, VIEW
from streamsaver import StreamStore
from streamsaver.log.indexes import field_args, index_schema_version
from streamsaver.log.keys import Keyspace
from streamsaver.ops.doctor import diagnose
from streamsaver.server.embedded import EmbeddedRedis
from tests.store.test_store_vectors import DIMS, embed

INDEX = {"dims": DIMS, "embed": embed, "fields": ["text"]}
V4_FIELDS = [*FIELDS, {"name": "d", "type": "numeric", "path": "$.i.d"},
             {"name": "c", "type": "numeric", "path": "$.c"},
             {"name": "e", "type": "vector", "path": "$.i.e[*]",
              "attrs": {"dims": DIMS, "distance_metric": "cosine", "algorithm": "flat", "datatype": "float32"}}]
"""The items index of an older release (schema v4: also ``d`` and ``c``), with the vector field."""


@pytest.fixture(scope="module")
def own_url() -> Iterator[str]:
    """A server of its own: a new index scans the whole keyspace, and setup waits for it."""
    with EmbeddedRedis() as server:
        yield server.url


def _as_an_older_release(client: redis.Redis, prefix: str) -> str:
    """Turn the deployment under `prefix` into one an older release set up: its items index v4
    (with ``c`` and ``d``), none of v5. The documents are what both releases write."""
    keyspace = Keyspace(prefix)
    client.execute_command("FT.DROPINDEX", keyspace.index(VIEW))
    older = keyspace.index(VIEW, version=4)
    schema = [arg for field in V4_FIELDS for arg in field_args(field)]
    client.execute_command("FT.CREATE", older, "ON", "JSON", "PREFIX", 1, keyspace.document_prefix(VIEW, "doc"),
                           "SCHEMA", *schema)
    return older


def _count(client: redis.Redis, index: str, query: str) -> int:
    return int(client.ft(index).search(Query(query).paging(0, 0)).total)


def test_an_older_deployment_keeps_working_and_is_upgraded_without_a_rebuild(
        own_url: str, prefix: str, caplog: pytest.LogCaptureFixture) -> None:
    client = redis.Redis.from_url(own_url)
    store = StreamStore(client, prefix=prefix, index=INDEX)  # type: ignore[arg-type]
    store.setup()
    for n in range(30):
        store.put(("users", f"u{n % 3}"), f"k{n}", {"text": f"fact {n}", "n": n})
    older = _as_an_older_release(client, prefix)
    while int(client.ft(older).info()["indexing"]):
        pass  # the older index has its items (its own scan), as the older release's would
    assert _count(client, older, "@d:[2 2]") == 30

    upgraded = StreamStore(client, prefix=prefix, index=INDEX)  # type: ignore[arg-type]
    with caplog.at_level("WARNING", logger="streamsaver.setup"):
        upgraded.setup()
    assert [r.getMessage() for r in caplog.records if older in r.getMessage()]
    current = upgraded.core.index
    assert current == f"{prefix}:items:idx:v5"
    fields = {str(attribute[attribute.index("attribute") + 1]) for attribute in client.ft(current).info()["attributes"]}
    assert fields == {"p", "f", "u", "n", "id", "e"}
    # The new index found every item there (setup waited for its scan): filters, namespaces, meaning.
    assert len(upgraded.search(("users",), filter={"n": {"$gte": 0}}, limit=100)) == 30
    assert len(upgraded.search(("users", "u1"), limit=100)) == 10
    found = upgraded.search(("users",), query="fact", limit=100)
    assert len(found) == 30 and all(item.score is not None for item in found)  # every vector indexed
    assert upgraded.search(("users",), filter={"n": {"$in": []}}) == []
    # Both indexes are kept current: the older release's queries still see new puts.
    upgraded.put(("users", "u9"), "new", {"text": "fact new", "n": 99})
    store.put(("users", "u8"), "newer", {"text": "fact newer", "n": 98})
    assert _count(client, older, "@d:[2 2]") == 32
    assert {item.key for item in upgraded.search(("users",), filter={"n": {"$gt": 97}})} == {"new", "newer"}

    client.execute_command("FT.DROPINDEX", older)  # the runbook's last step, no older process left
    caplog.clear()
    with caplog.at_level("WARNING", logger="streamsaver.setup"):
        upgraded.setup()
    assert not [r for r in caplog.records if r.name == "streamsaver.setup"]  # caplog sees every thread
    assert len(upgraded.search(("users",), limit=100)) == 32
    client.close()


def test_doctor_reports_the_items_index_schema_and_warns_while_an_older_one_remains(own_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(own_url)
    store = StreamStore(client, prefix=prefix, index=INDEX)  # type: ignore[arg-type]
    store.setup()
    for n in range(3):
        store.put(("users", "u1"), f"k{n}", {"text": f"fact {n}"})

    def items() -> list[tuple[str, str]]:
        return sorted((f.severity, f.detail) for f in diagnose(client, prefix)  # type: ignore[arg-type]
                      if f.check == "indexes" and f":{VIEW}:idx:" in f.detail)

    current = f"{prefix}:{VIEW}:idx:v{index_schema_version(VIEW)}"
    while int(client.ft(current).info()["indexing"]):
        pass  # a new index scans the whole server's keys (the other tests' too): doctor says so meanwhile
    assert items() == [("ok", f"{current} (view {VIEW}, schema v{index_schema_version(VIEW)}): 3 documents, indexed")]
    older = _as_an_older_release(client, prefix)
    while int(client.ft(older).info()["indexing"]):
        pass  # the older index has its items (its own scan), as the older release's would
    StreamStore(client, prefix=prefix, index=INDEX).setup()  # type: ignore[arg-type]
    [(severity, detail)] = [(s, d) for s, d in items() if d.startswith(older)]
    assert severity == "warning" and "schema v4" in detail and "--superseded" in detail
    assert [s for s, d in items() if d.startswith(current)] == ["ok"]
    client.close()
