"""The operator's commands on the memory store's partition logs, addressed by ``--store`` and
``--namespace a.b``: inspect lists who wrote which fact and when, tail follows the store feeds,
replay and the projector worker rebuild the items (and their vectors, which the index follows)
byte-identical, stats counts the store's logs, purge-store erases a prefix with its log entries,
export/import carry the store."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cli_harness import INDEX, items, run
from fake_embeddings import DIMS

from streamsaver import StreamStore


@pytest.fixture
def store(client: Any, prefix: str) -> StreamStore:
    store = StreamStore(client, prefix=prefix, index=INDEX)
    store.setup()
    store.put(("users", "alice"), "tea", {"text": "green tea"}, ttl=30)
    store.put(("users", "alice"), "dog", {"text": "a dog"})
    store.put(("users", "alicea"), "x", {"text": "another alice"})
    store.put(("users", "bob"), "cat", {"text": "a cat"}, index=False)
    store.delete(("users", "alice"), "dog")
    return store


def test_inspect_lists_a_namespace_prefixs_events_label_by_label(
    store: StreamStore, redis_url: str, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "inspect", "--url", redis_url, "--prefix", prefix, "--namespace", "users.alice",
                       "--json")
    assert code == 0
    rows = json.loads(out)
    assert [(r["op"], r["namespace"], r["key"], r["model"], r["ttl_minutes"]) for r in rows] == [
        ("ItemPut", ["users", "alice"], "tea", "old-v1", 30.0),
        ("ItemPut", ["users", "alice"], "dog", "old-v1", None),
        ("ItemDeleted", ["users", "alice"], "dog", "", None),
    ]  # users.alicea shares the partition and the text prefix, not the labels
    assert rows[0]["dims"] == DIMS and json.loads(rows[0]["value"]) == {"text": "green tea"}
    assert rows[0]["entry_id"] < rows[1]["entry_id"] < rows[2]["entry_id"]
    code, out, _ = run(capsys, "inspect", "--url", redis_url, "--prefix", prefix, "--store")
    assert code == 0
    assert "5 store events under the whole store" in out
    assert "users.bob" in out and "ItemDeleted" in out and "old-v1" in out and "30m" in out
    code, out, _ = run(capsys, "inspect", "--url", redis_url, "--prefix", prefix, "--namespace", "users.alice",
                       "--key", "tea", "--json")
    assert [r["key"] for r in json.loads(out)] == ["tea"]
    partition = rows[0]["partition"]
    code, out, _ = run(capsys, "inspect", "--url", redis_url, "--prefix", prefix, "--store", "--partition", partition,
                       "--json")
    assert code == 0 and len(json.loads(out)) == 5  # every namespace here shares users' partition
    other = str((int(partition) + 1) % int(store.core.keyspace.partitions))
    code, out, _ = run(capsys, "inspect", "--url", redis_url, "--prefix", prefix, "--store", "--partition", other)
    assert code == 0 and f"0 store events under the whole store in partition {other}" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["inspect"], "name a thread"),
    (["inspect", "t1", "--store"], "not both"),
    (["inspect", "--namespace", "users..alice"], "invalid namespace label"),
    (["inspect", "--store", "--key", "tea"], "needs its namespace"),
    (["inspect", "t1", "--key", "tea"], "use them with --store"),
    (["inspect", "t1", "--partition", "1"], "use them with --store"),
    (["inspect", "--store", "--partition", "99"], "not 99"),
    (["tail", "--store", "--thread", "t1"], "--thread names a checkpoint thread"),
    (["replay", "--store", "--view", "full"], "--store replays the store's items view"),
    (["project", "--store", "--view", "full"], "or --store, one of them"),
    (["project"], "or --store, one of them"),
])
def test_store_addressing_mistakes_are_named(
    store: StreamStore, redis_url: str, prefix: str, capsys: pytest.CaptureFixture[str], argv: list[str],
    message: str,
) -> None:
    code, _, err = run(capsys, *argv, "--url", redis_url, "--prefix", prefix)
    assert code in (1, 2) and message in err


def test_tail_follows_the_store_feeds_of_a_namespace(
    store: StreamStore, redis_url: str, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "tail", "--url", redis_url, "--prefix", prefix, "--namespace", "users.alice",
                       "--from-start", "--count", "3", "--json")
    assert code == 0
    pointers = [json.loads(line) for line in out.splitlines()]
    assert [(p["type"], json.loads(p["labels"]), p["key"]) for p in pointers] == [
        ("ItemPut", ["users", "alice"], "tea"), ("ItemPut", ["users", "alice"], "dog"),
        ("ItemDeleted", ["users", "alice"], "dog")]
    code, out, _ = run(capsys, "tail", "--url", redis_url, "--prefix", prefix, "--store", "--from-start",
                       "--count", "1", "--type", "ItemDeleted")
    assert code == 0 and "ItemDeleted" in out and "ns='users.alice' key='dog'" in out


def test_replay_rebuilds_the_items_and_their_vectors_byte_identical(
    store: StreamStore, client: Any, redis_url: str, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before, found = items(client, prefix), store.search(("users",), query="green tea", limit=10)
    [tea] = client.scan_iter(match=f"{prefix}:items:doc:*:users.alice:tea")
    client.execute_command("JSON.SET", tea, "$.i.e", "[[9, 9, 9, 9]]")  # a damaged vector
    assert items(client, prefix) != before
    assert run(capsys, "verify", "--url", redis_url, "--prefix", prefix)[0] == 1
    code, out, _ = run(capsys, "replay", "--url", redis_url, "--prefix", prefix, "--store")
    assert code == 0 and "replayed 5 events of 1 store partitions into items" in out
    assert items(client, prefix) == before
    assert store.search(("users",), query="green tea", limit=10) == found  # the index follows the documents
    code, out, _ = run(capsys, "verify", "--url", redis_url, "--prefix", prefix)
    assert code == 0 and "the views match the logs" in out
    code, out, _ = run(capsys, "replay", "--url", redis_url, "--prefix", prefix, "--store", "--keep", "--json")
    assert code == 0 and json.loads(out)["applied"] == 0  # nothing lacking: nothing applied


def test_the_projector_worker_keeps_the_store_items_from_the_store_feeds(
    store: StreamStore, client: Any, redis_url: str, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = items(client, prefix)
    [cat] = client.scan_iter(match=f"{prefix}:items:doc:*:users.bob:cat")
    [positions] = client.scan_iter(match=f"{prefix}:spos:*")
    client.delete(cat)
    client.hdel(positions, "items")  # as if the items view had never seen the partition
    assert items(client, prefix) != before
    code, out, _ = run(capsys, "project", "--url", redis_url, "--prefix", prefix, "--store", "--burst", "--json")
    assert code == 0
    assert json.loads(out)["applied"] == 5 and json.loads(out)["views"] == ["items"]
    assert items(client, prefix) == before
    code, out, _ = run(capsys, "stats", "--url", redis_url, "--prefix", prefix, "--store", "--json")
    assert code == 0
    stats = json.loads(out)
    assert (stats["threads"], stats["events"], stats["feed_entries"]) == (1, 5, 5)
    assert stats["groups"] == {"projector:items": {"pending": 0, "lag": 0}}
    assert json.loads(run(capsys, "stats", "--url", redis_url, "--prefix", prefix, "--json")[1])["events"] == 0


def test_purge_store_leaves_nothing_of_the_prefix_and_verify_agrees(
    store: StreamStore, client: Any, redis_url: str, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "purge-store", "--url", redis_url, "--prefix", prefix, "users", "alice")
    assert code == 0 and "erased 3 store log entries" in out
    code, out, _ = run(capsys, "inspect", "--url", redis_url, "--prefix", prefix, "--store", "--json")
    assert {tuple(r["namespace"]) for r in json.loads(out)} == {("users", "alicea"), ("users", "bob")}
    feeds = [p for f in client.scan_iter(match=f"{prefix}:sfeed:*") for _, p in client.xrange(f)]
    assert all(b'"alice"]' not in p.get(b"labels", b"") for p in feeds)
    assert not [k for k in client.scan_iter(match=f"{prefix}:*") if b"users.alice:" in k]
    assert run(capsys, "verify", "--url", redis_url, "--prefix", prefix)[0] == 0
    assert store.get(("users", "alicea"), "x") is not None
    code, out, _ = run(capsys, "purge-store", "--url", redis_url, "--prefix", prefix, "users")
    assert code == 0 and "erased 2 store log entries" in out
    left = {k.split(b":")[1] for k in client.scan_iter(match=f"{prefix}:*")}
    assert left <= {b"meta", b"sfeed"}, left  # no log, item, member set nor position
    assert not [f for f in client.scan_iter(match=f"{prefix}:sfeed:*") if client.xlen(f)]
    assert run(capsys, "verify", "--url", redis_url, "--prefix", prefix)[0] == 0


def test_purge_store_of_a_prefix_never_set_up_is_refused_and_creates_nothing(
    client: Any, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    mistyped = "never-set-up-" + str(id(client))
    code, _, err = run(capsys, "purge-store", "--url", redis_url, "--prefix", mistyped, "users", "alice")
    assert code == 1 and mistyped in err
    assert not list(client.scan_iter(match=f"{mistyped}:*"))


def test_export_and_import_carry_the_store_through_the_cli(
    store: StreamStore, client: Any, redis_url: str, prefix: str, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    path = str(tmp_path / "store.jsonl.gz")
    assert run(capsys, "export", path, "--url", redis_url, "--prefix", prefix)[0] == 0
    copy = f"{prefix}-copy"
    code, out, _ = run(capsys, "import", path, "--url", redis_url, "--into-prefix", copy)
    assert code == 0 and "imported 5 log entries" in out
    assert {k[len(copy):]: v for k, v in items(client, copy).items()} == {
        k[len(prefix):]: v for k, v in items(client, prefix).items()}
    listed = [json.loads(run(capsys, "inspect", "--url", redis_url, "--prefix", p, "--store", "--json")[1])
              for p in (prefix, copy)]
    assert listed[0] == listed[1]  # the same entries, ids and all
    assert run(capsys, "verify", "--url", redis_url, "--prefix", copy)[0] == 0
