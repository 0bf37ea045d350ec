"""An upgrade to a new index schema (docs/operations.md): the first `setup()` of the new release
creates the new indexes over documents already there, and RediSearch indexes those in the
background. Had `setup()` returned before that was done, a query on the new index would miss
what the scan has not reached yet: a one-thread listing of the shallow view found nothing and
`delete_for_runs` erased nothing, silently. While an index of an older schema exists (an upgrade
under way), `setup()` waits until the new indexes have indexed what is there. It does not wait
on a fresh deployment: there a new index's scan of the whole keyspace finds nothing of it, and
on a server of many deployments took minutes (test_setup_wait.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from helpers import config, new_checkpoint

from streamsaver import StreamSaver
from streamsaver.log.keys import Keyspace
from streamsaver.server.embedded import EmbeddedRedis

OTHER_DOCUMENTS = 100_000
"""Enough documents under the view's prefix that the new index is still scanning them when the
first query arrives (RediSearch indexes ~300,000 in about a second)."""


@pytest.fixture(scope="module")
def own_url() -> Iterator[str]:
    with EmbeddedRedis() as server:
        yield server.url


def test_a_new_index_over_existing_documents_answers_whole_right_after_setup(own_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(own_url)
    saver = StreamSaver(client, prefix=prefix, view="shallow", projections=("full", "shallow"))
    saver.setup()
    for i in range(3):
        checkpoint, versions = new_checkpoint({"i": i})
        saver.put(config(f"t{i}"), checkpoint, {"run_id": "run-1"}, versions)
    # as a deployment of an older release: its documents, its older index, none of this schema yet
    keyspace = Keyspace(prefix)
    for view in ("full", "shallow"):
        client.execute_command("FT.DROPINDEX", keyspace.index(view))
        older = keyspace.index(view, version=1)
        client.execute_command(
            "FT.CREATE", older, "ON", "JSON", "PREFIX", 1, keyspace.document_prefix(view),
            "SCHEMA", "$.th", "AS", "th", "TAG",
        )
    pipe = client.pipeline(transaction=False)
    for n in range(OTHER_DOCUMENTS):
        pipe.execute_command(
            "JSON.SET", f"{Keyspace(prefix).document_prefix('shallow')}{{p0}}:o{n}::c", "$", '{"th":"x"}'
        )
    pipe.execute()

    upgraded = StreamSaver(client, prefix=prefix, view="shallow")
    upgraded.setup()

    assert [len(list(upgraded.list(config(f"t{i}")))) for i in range(3)] == [1, 1, 1]
    upgraded.delete_for_runs(["run-1"])
    assert [upgraded.get_tuple(config(f"t{i}")) for i in range(3)] == [None, None, None]
    client.close()


def test_setup_warns_while_an_older_index_remains_and_not_after_it_is_dropped(
    own_url: str, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Until an operator drops it, the older schema's index is kept current beside the new one:
    the server pays for both, so every setup says which remain (docs/operations.md). On a
    server of its own: with an older index, setup waits for the new one's scan of the whole
    keyspace, which on the suite's shared server outlasted setup's 30 s (test_setup_wait.py)."""
    client = redis.Redis.from_url(own_url)
    keyspace = Keyspace(prefix)
    older = keyspace.index("full", version=3)
    client.execute_command(
        "FT.CREATE", older, "ON", "JSON", "PREFIX", 1, keyspace.document_prefix("full"),
        "SCHEMA", "$.th", "AS", "th", "TAG",
    )

    with caplog.at_level("WARNING", logger="streamsaver.setup"):
        StreamSaver(client, prefix=prefix).setup()
    assert [r.getMessage() for r in caplog.records if older in r.getMessage()]

    client.execute_command("FT.DROPINDEX", older)
    caplog.clear()
    with caplog.at_level("WARNING", logger="streamsaver.setup"):
        StreamSaver(client, prefix=prefix).setup()
    assert not [r for r in caplog.records if r.name == "streamsaver.setup"]  # caplog sees every thread
    client.close()
