"""An upgrade to a new index schema (docs/operations.md): the first `setup()` of the new release
creates the new indexes over documents already there, and RediSearch indexes those in the
background. `setup()` returns before that is done (it waits only after slots moved on a
cluster), so a query on the new index misses what the scan has not reached yet: a one-thread
listing of the shallow view finds nothing and `delete_for_runs` erases nothing, silently.

Known, not fixed (a wait in every `setup()` would cost every process a scan of the whole
keyspace per new index, which on a server of many deployments took minutes; see
test_setup_wait.py): the runbook says to wait for ``indexing 0`` instead. This test pins the
behaviour so that a fix shows up here (strict xfail)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from helpers import config, new_checkpoint

from streamsaver import StreamSaver
from streamsaver.embedded import EmbeddedRedis
from streamsaver.keys import Keyspace

OTHER_DOCUMENTS = 100_000
"""Enough documents under the view's prefix that the new index is still scanning them when the
first query arrives (RediSearch indexes ~300,000 in about a second)."""


@pytest.fixture(scope="module")
def own_url() -> Iterator[str]:
    with EmbeddedRedis() as server:
        yield server.url


@pytest.mark.xfail(strict=True, reason="setup() does not wait for a new index's background scan")
def test_a_new_index_over_existing_documents_answers_whole_right_after_setup(own_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(own_url)
    saver = StreamSaver(client, prefix=prefix, view="shallow")
    saver.setup()
    for i in range(3):
        checkpoint, versions = new_checkpoint({"i": i})
        saver.put(config(f"t{i}"), checkpoint, {"run_id": "run-1"}, versions)
    # as a deployment of an older release: its documents, and no index of this schema yet
    for view in ("full", "shallow"):
        client.execute_command("FT.DROPINDEX", Keyspace(prefix).index(view))
    pipe = client.pipeline(transaction=False)
    for n in range(OTHER_DOCUMENTS):
        pipe.execute_command("JSON.SET", f"{Keyspace(prefix).document_prefix('shallow')}{{p0}}:o{n}::c", "$", '{"th":"x"}')
    pipe.execute()

    upgraded = StreamSaver(client, prefix=prefix, view="shallow")
    upgraded.setup()

    assert [len(list(upgraded.list(config(f"t{i}")))) for i in range(3)] == [1, 1, 1]
    upgraded.delete_for_runs(["run-1"])
    assert [upgraded.get_tuple(config(f"t{i}")) for i in range(3)] == [None, None, None]
    client.close()
