"""A lost index heals itself, and a listing never answers from a half-built one.

* An index dropped (``FT.DROPINDEX``, documents kept) under a running saver, sync or async, on
  either view: its next cross-thread listing, which meets ``no such index``, sets up again
  (re-creating the index from the deployment's stored settings), waits until the new index has
  indexed every document already there, and returns every match; the same for the store's
  items index under a running `StreamStore` / `AsyncStreamStore`.
* A runtime user who may not create indexes gets `IndexMissingError` naming the admin step.

On a server of its own (as test_setup_wait.py): a new index scans the whole keyspace, which on
the suite's shared server can outlast any bound.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis
import redis.asyncio
from helpers import config, new_checkpoint

from streamsaver import AsyncStreamSaver, AsyncStreamStore, StreamSaver, StreamStore
from streamsaver.errors import IndexMissingError
from streamsaver.log.acl import runtime_rules
from streamsaver.log.keys import STORE_VIEW, Keyspace
from streamsaver.server.embedded import EmbeddedRedis

THREADS = 400
"""Enough documents that the re-created index is still indexing when first asked."""


@pytest.fixture(scope="module")
def own_url() -> Iterator[str]:
    with EmbeddedRedis() as server:
        yield server.url


def _wait_indexed(client: redis.Redis, index: str) -> None:
    """Until the index's scan of the keyspace is done (a state of the server, polled)."""
    while int(client.ft(index).info()["indexing"]):
        time.sleep(0.02)


def _fill(saver: StreamSaver) -> None:
    for n in range(THREADS):
        checkpoint, versions = new_checkpoint({"n": n})
        saver.put(config(f"t{n}"), checkpoint, {"batch": "b"}, versions)


@pytest.mark.parametrize("view", ["full", "shallow"])
@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_dropped_index_is_recreated_by_the_running_saver_and_every_match_listed(
    own_url: str, prefix: str, kind: str, view: str
) -> None:
    client = redis.Redis.from_url(own_url)
    _fill(StreamSaver(client, prefix=prefix, view=view))
    index = Keyspace(prefix).index(view)
    if kind == "sync":
        saver = StreamSaver(client, prefix=prefix, view=view)
        assert len(list(saver.list(None, filter={"batch": "b"}))) == THREADS
        client.execute_command("FT.DROPINDEX", index)
        assert len(list(saver.list(None, filter={"batch": "b"}))) == THREADS
    else:
        async with AsyncStreamSaver.from_conn_string(own_url, prefix=prefix, view=view) as asaver:
            assert len([t async for t in asaver.alist(None, filter={"batch": "b"})]) == THREADS
            client.execute_command("FT.DROPINDEX", index)
            assert len([t async for t in asaver.alist(None, filter={"batch": "b"})]) == THREADS
    info = client.ft(index).info()
    assert int(info["indexing"]) == 0 and int(info["num_docs"]) >= THREADS
    client.close()


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_dropped_store_index_is_recreated_by_the_running_store(own_url: str, prefix: str, kind: str) -> None:
    client = redis.Redis.from_url(own_url)
    store = StreamStore(client, prefix=prefix)
    store.setup()
    for n in range(THREADS):
        store.put(("users", f"u{n}"), "profile", {"lang": "en", "n": n})
    index = Keyspace(prefix).index(STORE_VIEW)
    client.execute_command("FT.DROPINDEX", index)
    if kind == "sync":
        found = store.search(("users",), filter={"lang": "en"}, limit=THREADS + 10)
    else:
        async with redis.asyncio.Redis.from_url(own_url) as aclient:
            found = await AsyncStreamStore(aclient, prefix=prefix).asearch(("users",), filter={"lang": "en"},
                                                                          limit=THREADS + 10)
    assert len(found) == THREADS
    assert int(client.ft(index).info()["indexing"]) == 0
    client.close()


def test_a_runtime_user_meeting_a_lost_index_is_told_to_run_setup_as_admin(own_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(own_url)
    _fill(StreamSaver(client, prefix=prefix))
    name, password = f"rt-{prefix}", "pw"
    client.execute_command("ACL", "SETUSER", name, "on", f">{password}", *runtime_rules(prefix))
    try:
        with redis.Redis.from_url(own_url, username=name, password=password) as runtime:
            saver = StreamSaver(runtime, prefix=prefix)
            assert len(list(saver.list(None, filter={"batch": "b"}))) == THREADS
            client.execute_command("FT.DROPINDEX", Keyspace(prefix).index("full"))
            with pytest.raises(IndexMissingError, match="admin user"):
                list(saver.list(None, filter={"batch": "b"}))
    finally:
        client.execute_command("ACL", "DELUSER", name)
        client.close()



def test_a_new_saver_recreating_a_lost_index_waits_for_it_and_lists_every_match(own_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(own_url)
    _fill(StreamSaver(client, prefix=prefix))
    index = Keyspace(prefix).index("full")
    assert client.hget(Keyspace(prefix).meta, "index:full:idx:v5") == b"1"  # the deployment's record
    client.execute_command("FT.DROPINDEX", index)
    fresh = StreamSaver(client, prefix=prefix)
    assert len(list(fresh.list(None, filter={"batch": "b"}))) == THREADS
    client.close()


def test_verify_reports_each_index_problem(own_url: str, prefix: str) -> None:
    from streamsaver.ops.verify import verify

    client = redis.Redis.from_url(own_url)
    saver = StreamSaver(client, prefix=prefix, view="full")
    for n in range(5):
        checkpoint, versions = new_checkpoint({"n": n})
        saver.put(config(f"t{n}"), checkpoint, {"batch": "b"}, versions)
    keyspace = Keyspace(prefix)
    index = keyspace.index("full")
    _wait_indexed(client, index)
    clean = verify(client, prefix, ["full"])
    assert clean.matches and clean.index_problems == []
    client.execute_command("FT.DROPINDEX", index)
    missing = verify(client, prefix, ["full"])
    assert not missing.matches
    assert [p for p in missing.index_problems if index in p and "missing" in p]
    # An index of the right name but the wrong shape: another prefix and one attribute.
    client.execute_command("FT.CREATE", index, "ON", "JSON", "PREFIX", 1, f"{prefix}:elsewhere:",
                           "SCHEMA", "$.th", "AS", "th", "TAG")
    _wait_indexed(client, index)
    wrong = verify(client, prefix, ["full"])
    assert [p for p in wrong.index_problems if "covers" in p]
    assert [p for p in wrong.index_problems if "attributes" in p]
    assert [p for p in wrong.index_problems if "holds 0 documents, the view has 5" in p]
    client.execute_command("FT.DROPINDEX", index)
    list(saver.list(None, filter={"batch": "b"}))  # the saver heals it
    assert verify(client, prefix, ["full"]).index_problems == []
    client.close()
