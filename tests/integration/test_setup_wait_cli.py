"""``streamsaver setup --wait``: the operator's unbounded wait for new indexes, with progress.

On a server of its own (the suite's shared one holds every other test's keys, which a new
index's scan walks too): documents already under a view's prefix when its index is created
keep the index "indexing" for a while, as after a lost index on a large production server."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis

from streamsaver.cli.main import main
from streamsaver.log.keys import Keyspace
from streamsaver.server.embedded import EmbeddedRedis

DOCUMENTS = 30_000
"""Enough documents that indexing them outlasts the first read of the index's state."""


@pytest.fixture(scope="module")
def own_url() -> Iterator[str]:
    with EmbeddedRedis() as server:
        yield server.url


def _documents_before_the_index(client: redis.Redis, prefix: str) -> None:
    pipe = client.pipeline(transaction=False)
    for n in range(DOCUMENTS):
        pipe.execute_command("JSON.SET", f"{Keyspace(prefix).document_prefix('full')}{{p0}}:t{n}::c", "$", '{"th":"x"}')
    pipe.execute()


def _index_info(client: redis.Redis, name: str) -> dict[str, str]:
    reply = client.execute_command("FT.INFO", name)
    pairs = reply if isinstance(reply, dict) else dict(zip(reply[::2], reply[1::2], strict=False))
    return {k.decode() if isinstance(k, bytes) else k: v.decode() if isinstance(v, bytes) else v
            for k, v in pairs.items()}


def test_setup_wait_returns_once_every_index_has_scanned_the_documents(
    own_url: str, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    client = redis.Redis.from_url(own_url)
    _documents_before_the_index(client, prefix)

    code = main(["setup", "--url", own_url, "--prefix", prefix, "--wait", "--json"])

    out = json.loads(capsys.readouterr().out)
    assert code == 0
    full = Keyspace(prefix).index("full")
    info = _index_info(client, full)
    assert int(info["indexing"]) == 0
    assert int(info["num_docs"]) == DOCUMENTS
    by_name = {index["name"]: index["documents"] for index in out["indexes"]}
    assert by_name[full] == DOCUMENTS
    assert Keyspace(prefix).index("items") in by_name  # the store's index is waited for too


def test_setup_wait_shows_the_slowest_index_as_progress(
    own_url: str, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _documents_before_the_index(redis.Redis.from_url(own_url), prefix)

    code = main(["setup", "--url", own_url, "--prefix", prefix, "--wait", "--progress", "always"])

    captured = capsys.readouterr()
    assert code == 0
    assert "slowest index scanned (per mille): 1,000/1,000 (100%)" in captured.err
    assert f"indexed: 2 index(es), {DOCUMENTS:,} documents" in captured.out


def test_setup_wait_with_a_bound_names_the_indexes_still_indexing(
    own_url: str, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    client = redis.Redis.from_url(own_url)
    _documents_before_the_index(client, prefix)

    code = main(["setup", "--url", own_url, "--prefix", prefix, "--wait", "0.000001"])

    err = capsys.readouterr().err
    assert code == 1
    assert "still indexing after" in err and Keyspace(prefix).index("full") in err
    # Nothing was undone: the scan goes on, and waiting again ends it.
    assert main(["setup", "--url", own_url, "--prefix", prefix, "--wait"]) == 0
    assert int(_index_info(client, Keyspace(prefix).index("full"))["num_docs"]) == DOCUMENTS


@pytest.mark.parametrize("wait", ["0", "-3", "soon"])
def test_a_wait_that_is_not_a_positive_number_of_seconds_is_a_usage_error(
    wait: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["setup", "--url", "redis://127.0.0.1:1", "--wait", wait]) == 2
    assert "--wait" in capsys.readouterr().err


def test_setup_wait_on_a_cluster_waits_for_every_primarys_indexes(
    cluster_url: str, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["setup", "--url", cluster_url, "--prefix", prefix, "--wait", "--json"])

    out = json.loads(capsys.readouterr().out)
    assert code == 0
    nodes = {index["node"] for index in out["indexes"]}
    names = [index["name"] for index in out["indexes"]]
    assert len(nodes) == 3
    for view in ("full", "items"):  # one per primary, each named with the tag that primary owns
        assert len([n for n in names if n.startswith(Keyspace(prefix).index(view) + ":")]) == 3
