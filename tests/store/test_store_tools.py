"""The log's tools on the store: verify reports a damaged item (CLI exit 1), replay repairs it."""

from __future__ import annotations

from typing import Any

import pytest

from projectors.store_domain import STORE
from streamsaver import StreamStore
from streamsaver.cli.main import main
from streamsaver.ops.replay import Replayer
from streamsaver.ops.verify import verify


@pytest.fixture
def sync_store(client: Any, prefix: str) -> StreamStore:
    store = StreamStore(client, prefix=prefix)
    store.setup()
    for n in range(5):
        store.put(("users", f"u{n}"), "profile", {"n": n, "tags": ["a", "b"]})
    store.delete(("users", "u4"), "profile")
    return store


def test_verify_reports_a_damaged_item_and_replay_repairs_it(
    sync_store: StreamStore, client: Any, prefix: str, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert verify(client, prefix, domain=STORE).matches
    assert main(["verify", "--url", redis_url, "--prefix", prefix]) == 0
    [doc] = client.scan_iter(match=f"{prefix}:items:doc:*u2:profile")
    client.execute_command("JSON.SET", doc, "$.i.v.n", "99")
    capsys.readouterr()
    report = verify(client, prefix, domain=STORE)
    assert not report.matches and report.different == 1
    assert report.differences[0].key == doc.decode() and "$.i.v.n" in report.differences[0].detail
    assert main(["verify", "--url", redis_url, "--prefix", prefix]) == 1
    out = capsys.readouterr().out
    assert "store partitions" in out and doc.decode() in out and "DIFFER" in out
    Replayer.open(client, prefix, domain=STORE).rebuild(["items"])
    assert verify(client, prefix, domain=STORE).matches
    assert sync_store.get(("users", "u2"), "profile").value["n"] == 2  # type: ignore[union-attr]
    assert main(["verify", "--url", redis_url, "--prefix", prefix]) == 0
