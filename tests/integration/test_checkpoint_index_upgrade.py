"""The checkpoint views' index schema v5 (docs/operations.md, "upgrading the index schema"): it no
longer indexes ``source`` and ``step``, which no query reads (every metadata filter is a TAG query
on ``mt``, checked on the rows). A deployment set up by an older release has the v4 indexes; the
documents are the same, so no rebuild: the first `setup()` of this release builds the v5 indexes
beside them, waits for their scans and warns while v4 remains; listings filtered on ``source`` and
``step`` stay exact throughout; ``streamsaver drop-stale-indexes --superseded`` drops v4 once v5
has finished its scan (and keeps it while v5 is missing, also when v5 goes after the listing), on
one server and on a cluster."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from helpers import config, new_checkpoint, node_clients, sync_client
from redis.commands.search.query import Query

from projectors.schema import FIELDS
from streamsaver import StreamSaver
from streamsaver.cli.main import main
from streamsaver.log.indexes import field_args
from streamsaver.log.keys import Keyspace
from streamsaver.ops.superseded_indexes import KEPT_NOT_READY, drop_superseded_indexes, superseded_indexes
from streamsaver.server.embedded import EmbeddedRedis

V4_FIELDS = [*FIELDS, {"name": "source", "type": "tag", "path": "$.source"},
             {"name": "step", "type": "numeric", "path": "$.step"}]
"""The checkpoint views' index of an older release (schema v4: also ``source`` and ``step``)."""
VIEWS = ("full",)  # the view a default deployment keeps inline


@pytest.fixture(scope="module")
def own_url() -> Iterator[str]:
    """A server of its own: a new index scans the whole keyspace, and setup waits for it."""
    with EmbeddedRedis() as server:
        yield server.url


def _create_v4(client: redis.Redis, keyspace: Keyspace, view: str, tag: str = "") -> str:
    older = keyspace.index(view, tag, version=4)
    schema = [arg for field in V4_FIELDS for arg in field_args(field)]
    client.execute_command("FT.CREATE", older, "ON", "JSON", "PREFIX", 1, keyspace.document_prefix(view), "SCHEMA",
                           *schema)
    while int(client.ft(older).info()["indexing"]):
        pass  # the older index has the documents (its own scan), as the older release's would
    return older


def _as_an_older_release(client: redis.Redis, prefix: str) -> list[str]:
    """Turn the deployment under `prefix` into one an older release set up: its v4 indexes (with
    ``source`` and ``step``), none of v5. The documents are what both releases write."""
    keyspace = Keyspace(prefix)
    for view in VIEWS:
        client.execute_command("FT.DROPINDEX", keyspace.index(view))
    return [_create_v4(client, keyspace, view) for view in VIEWS]


def _fill(saver: StreamSaver, threads: int, steps: int, start: int = 0) -> None:
    for t in range(threads):
        previous = None
        for step in range(start, start + steps):
            checkpoint, versions = new_checkpoint({"n": step}, previous)
            source = "input" if step == 0 else "loop"
            saver.put(config(f"t{t}"), checkpoint, {"source": source, "step": step}, versions)
            previous = checkpoint


def _count(client: redis.Redis, index: str, query: str) -> int:
    return int(client.ft(index).search(Query(query).paging(0, 0)).total)


def _attributes(client: redis.Redis, index: str) -> set[str]:
    return {str(a[a.index("attribute") + 1]) for a in client.ft(index).info()["attributes"]}


def test_an_older_deployment_keeps_working_is_upgraded_without_a_rebuild_and_drops_v4(
        own_url: str, prefix: str, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    client = redis.Redis.from_url(own_url)
    older_saver = StreamSaver(client, prefix=prefix)
    older_saver.setup()
    _fill(older_saver, threads=3, steps=5)
    older = _as_an_older_release(client, prefix)
    assert _count(client, older[0], "@source:{loop}") == 12 and _count(client, older[0], "@step:[2 2]") == 3

    upgraded = StreamSaver(client, prefix=prefix)
    with caplog.at_level("WARNING", logger="streamsaver.setup"):
        upgraded.setup()
    assert all([r for r in caplog.records if name in r.getMessage()] for name in older)
    for view in VIEWS:
        current = Keyspace(prefix).index(view)
        assert current.endswith(":idx:v5")
        assert _attributes(client, current) == {"th", "nh", "checkpoint_id", "rh", "mt", "tk", "nk", "ck"}
    # Filters on what v5 no longer indexes stay exact: served by the metadata digests, on the
    # documents the v5 scan found.
    assert len(list(upgraded.list(None, filter={"source": "loop"}))) == 12
    assert len(list(upgraded.list(None, filter={"source": "input"}))) == 3
    assert {t.metadata["step"] for t in upgraded.list(config("t1"), filter={"step": 2})} == {2}
    assert len(list(upgraded.list(None, filter={"step": 4, "source": "loop"}))) == 3
    # Both indexes are kept current: the older release's queries still see new puts.
    _fill(upgraded, threads=1, steps=2, start=10)
    assert _count(client, older[0], "@step:[10 11]") == 2

    main(["--url", own_url, "--prefix", prefix, "doctor", "--json"])
    findings = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["check"] == "indexes"]
    warned = [f["detail"] for f in findings if f["severity"] == "warning"]
    assert [d for d in warned if older[0] in d and "--superseded" in d]
    found = superseded_indexes(client, prefix)
    assert sorted(s.name for s in found) == sorted(older) and all(s.ready and s.version == 4 for s in found)
    assert main(["--url", own_url, "--prefix", prefix, "drop-stale-indexes", "--superseded", "--dry-run"]) == 0
    assert capsys.readouterr().out.count("would drop") == len(older)
    assert set(older) <= {n.decode() for n in client.execute_command("FT._LIST")}
    assert main(["--url", own_url, "--prefix", prefix, "drop-stale-indexes", "--superseded", "--json"]) == 0
    assert sorted(json.loads(capsys.readouterr().out)["dropped"]) == sorted(older)
    listed = {n.decode() for n in client.execute_command("FT._LIST")}
    assert not set(older) & listed and {Keyspace(prefix).index(view) for view in VIEWS} <= listed
    caplog.clear()
    with caplog.at_level("WARNING", logger="streamsaver.setup"):
        upgraded.setup()
    assert not [r for r in caplog.records if r.name == "streamsaver.setup"]  # caplog sees every thread
    assert len(list(upgraded.list(None, filter={"source": "loop"}))) == 14
    client.close()


def test_a_superseded_index_is_kept_while_the_current_one_is_missing(own_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(own_url)
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    _fill(saver, threads=1, steps=2)
    keyspace = Keyspace(prefix)
    older = _create_v4(client, keyspace, "full")
    client.execute_command("FT.DROPINDEX", keyspace.index("full"))  # the current one: not there (yet)
    [found] = superseded_indexes(client, prefix)
    assert found.name == older and not found.ready
    assert drop_superseded_indexes(client, [found]) == []
    assert older in {n.decode() for n in client.execute_command("FT._LIST")}
    saver.setup()  # builds v5 again: now v4 may go
    [found] = superseded_indexes(client, prefix)
    assert found.ready and drop_superseded_indexes(client, [found]) == [older]
    client.close()


def test_a_superseded_index_whose_current_one_went_away_after_the_listing_is_kept(own_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(own_url)
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    _fill(saver, threads=1, steps=2)
    keyspace = Keyspace(prefix)
    older = _create_v4(client, keyspace, "full")
    [found] = superseded_indexes(client, prefix)
    assert found.ready  # when listed
    client.execute_command("FT.DROPINDEX", keyspace.index("full"))  # then the current one goes
    kept: list[tuple[str, str]] = []
    assert drop_superseded_indexes(client, [found], lambda index, why: kept.append((index.name, why))) == []
    assert kept == [(older, KEPT_NOT_READY)]
    assert older in {n.decode() for n in client.execute_command("FT._LIST")}  # still the only index of the view
    client.close()


def test_on_a_cluster_each_primarys_superseded_index_is_dropped(cluster_url: str, prefix: str) -> None:
    client: Any = sync_client(cluster_url)
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    _fill(saver, threads=4, steps=2)
    keyspace = Keyspace(prefix)
    older = []
    for target in saver.core.index_targets("full"):
        tag = target.name[len(keyspace.index("full")) + 1:]  # "{iK}:<node id>", as the older release named it
        owner = client.get_node_from_key(str(target.route)).redis_connection
        older.append(_create_v4(owner, keyspace, "full", tag))
    found = superseded_indexes(client, prefix)
    assert sorted(s.name for s in found) == sorted(older) and all(s.ready for s in found)
    assert sorted(drop_superseded_indexes(client, found)) == sorted(older)
    left = {n.decode() for node in node_clients(client) for n in node.execute_command("FT._LIST")}
    assert not set(older) & left and {t.name for t in saver.core.index_targets("full")} <= left
    assert len(list(saver.list(None, filter={"source": "loop"}))) == 4
