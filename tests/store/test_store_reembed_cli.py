"""``streamsaver reembed``: the embedding comes from the operator's code (``--embed module:attr``
with ``--dims``, or the application's ``--index module:attr``), never from stored data; each
item re-embedded is a logged put (inspect shows its model), a dry run writes nothing, bad
references and options fail before anything is written, and a replay after it gives the same
items without embedding anything."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from cli_harness import INDEX, items, run
from fake_embeddings import DIMS, vector

from streamsaver import StreamStore


@pytest.fixture
def store(client: Any, prefix: str) -> StreamStore:
    store = StreamStore(client, prefix=prefix, index=INDEX)
    store.setup()
    store.put(("users", "alice"), "tea", {"text": "green tea"}, ttl=30)
    store.put(("users", "alice"), "plain", {"text": "no vectors"}, index=False)
    store.put(("users", "alicea"), "x", {"text": "another alice"})
    store.put(("users", "bob"), "cat", {"text": "a cat"})
    return store


def _logs(client: Any, prefix: str) -> dict[bytes, int]:
    return {log: client.xlen(log) for log in client.scan_iter(match=f"{prefix}:slog:*")}


def _vectors(client: Any, prefix: str) -> dict[str, tuple[str, list[list[float]]]]:
    found = {}
    for key in client.scan_iter(match=f"{prefix}:items:doc:*"):
        body = orjson.loads(client.execute_command("JSON.GET", key, "$.i"))[0]
        found[".".join(body["ns"]) + ":" + body["k"]] = (body.get("m", ""), body.get("e", []))
    return found


def test_a_dry_run_counts_and_writes_nothing_then_the_run_logs_each_put(
    store: StreamStore, client: Any, redis_url: str, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--url", redis_url, "--prefix", prefix, "--embed", "fake_embeddings:Weighted", "--dims", str(DIMS),
            "--field", "text"]
    logs, docs = _logs(client, prefix), items(client, prefix)
    code, out, _ = run(capsys, "reembed", *base, "--namespace", "users.alice", "--dry-run")
    assert code == 0 and "1 items under users.alice would be re-embedded with weighted-v2" in out
    assert (_logs(client, prefix), items(client, prefix)) == (logs, docs)
    code, out, _ = run(capsys, "reembed", *base, "--namespace", "users.alice", "--json")
    assert code == 0
    assert json.loads(out) | {"namespace": None} == {"namespace": None, "model": "weighted-v2", "due": 1,
                                                     "reembedded": 1, "dry_run": False}
    vectors = _vectors(client, prefix)
    assert vectors["users.alice:tea"] == ("weighted-v2", [vector("green tea", 2.0)])
    assert vectors["users.alicea:x"] == ("old-v1", [vector("another alice", 1.0)])  # labels matched whole
    assert vectors["users.alice:plain"] == ("", [])
    code, out, _ = run(capsys, "inspect", "--url", redis_url, "--prefix", prefix, "--namespace", "users.alice",
                       "--key", "tea", "--json")
    assert [(r["op"], r["model"]) for r in json.loads(out)] == [("ItemPut", "old-v1"), ("ItemPut", "weighted-v2")]
    assert json.loads(out)[1]["writer"] == "streamsaver reembed"  # the audit tells the re-embedding apart
    assert store.get(("users", "alice"), "tea").value == {"text": "green tea"}  # type: ignore[union-attr]
    code, out, _ = run(capsys, "reembed", *base)
    assert code == 0 and "re-embedded 2 items under the whole store with weighted-v2" in out  # x and cat


@pytest.mark.parametrize(("reference", "extra", "model", "weight"), [
    ("--index=fake_embeddings:INDEX", [], "weighted-v2", 2.0),
    ("--embed=fake_embeddings:third_model", ["--dims", str(DIMS), "--field", "text"],
     "fake_embeddings.third_model", 3.0),
    ("--embed=fake_embeddings:make_weighted", ["--dims", str(DIMS), "--field", "text", "--model", "w5"], "w5", 5.0),
])
def test_every_kind_of_reference_embeds_and_replay_keeps_it(
    store: StreamStore, client: Any, redis_url: str, prefix: str, capsys: pytest.CaptureFixture[str],
    reference: str, extra: list[str], model: str, weight: float,
) -> None:
    code, out, _ = run(capsys, "reembed", "--url", redis_url, "--prefix", prefix, reference, *extra)
    assert code == 0 and f"re-embedded 3 items under the whole store with {model}" in out
    assert _vectors(client, prefix)["users.bob:cat"] == (model, [vector("a cat", weight)])
    docs = items(client, prefix)
    assert run(capsys, "replay", "--url", redis_url, "--prefix", prefix, "--store")[0] == 0
    assert items(client, prefix) == docs  # the vectors came from the log
    assert run(capsys, "verify", "--url", redis_url, "--prefix", prefix)[0] == 0


@pytest.mark.parametrize(("argv", "code", "message"), [
    (["--embed", "fake_embeddings:Weighted"], 2, "--embed needs --dims"),
    (["--embed", "fake_embeddings", "--dims", "4"], 2, "expected package.module:attribute"),
    (["--embed", "fake_embeddings:Weighted", "--index", "fake_embeddings:INDEX"], 2, "--embed module:attr or"),
    (["--index", "fake_embeddings:INDEX", "--dims", "4"], 2, "--index gives the whole config"),
    ([], 2, "--embed module:attr or"),
    (["--embed", "no_such_module_here:x", "--dims", "4"], 1, "cannot import 'no_such_module_here'"),
    (["--embed", "fake_embeddings:absent", "--dims", "4"], 1, "has no attribute 'absent'"),
    (["--embed", "fake_embeddings:DIMS", "--dims", "4"], 1, "neither an Embeddings"),
    (["--index", "fake_embeddings:NOT_AN_INDEX"], 1, "is not an IndexConfig"),
    (["--embed", "fake_embeddings:Weighted", "--dims", "3", "--field", "text"], 1, "dim"),
])
def test_bad_references_and_options_fail_before_anything_is_written(
    store: StreamStore, client: Any, redis_url: str, prefix: str, capsys: pytest.CaptureFixture[str],
    argv: list[str], code: int, message: str,
) -> None:
    logs, docs = _logs(client, prefix), items(client, prefix)
    got, _, err = run(capsys, "reembed", "--url", redis_url, "--prefix", prefix, *argv)
    assert (got, message in err) == (code, True), err
    assert (_logs(client, prefix), items(client, prefix)) == (logs, docs)


def test_a_prefix_without_a_deployment_is_refused(
    redis_url: str, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "reembed", "--url", redis_url, "--prefix", prefix, "--index", "fake_embeddings:INDEX")
    assert code == 1 and "no streamsaver deployment" in err


async def test_the_stores_count_what_is_due_and_report_each_page(client: Any, redis_url: str, prefix: str) -> None:
    from fake_embeddings import Weighted

    from streamsaver import AsyncStreamStore

    old = StreamStore(client, prefix=prefix, index=INDEX)
    for n in range(120):  # three pages of one partition
        old.put(("users", "zed"), f"k{n}", {"text": f"fact {n}"})
    new_index: Any = {"dims": DIMS, "embed": Weighted(), "fields": ["text"]}
    logs, docs = _logs(client, prefix), items(client, prefix)
    assert StreamStore(client, prefix=prefix, index=new_index).reembed(dry_run=True) == 120
    async with AsyncStreamStore.from_conn_string(redis_url, prefix=prefix, index=new_index) as store:
        assert await store.areembed(("users",), dry_run=True) == 120
        assert (_logs(client, prefix), items(client, prefix)) == (logs, docs)
        pages: list[int] = []
        assert await store.areembed(("users",), progress=pages.append) == 120
    assert pages == [50, 50, 20]
    seen: list[int] = []
    assert StreamStore(client, prefix=prefix, index=new_index).reembed(progress=seen.append) == 0
    assert seen == []  # nothing due: no page reported
