"""The store's operator commands on Redis Cluster (the embedded 3-primary cluster): the store
partitions spread over the primaries, and every command reads and writes each partition on its
own node."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cli_harness import INDEX, items, run
from redis.cluster import RedisCluster

from streamsaver import StreamStore


@pytest.fixture
def cluster_store(cluster_url: str, prefix: str) -> StreamStore:
    store = StreamStore(RedisCluster.from_url(cluster_url), prefix=prefix, index=INDEX)  # type: ignore[arg-type]
    store.setup()
    for n in range(12):
        store.put((f"user{n % 6}", "facts"), f"k{n}", {"text": f"fact {n} about a user"})
    store.delete(("user5", "facts"), "k5")
    return store


def test_the_store_commands_work_on_a_cluster(
    cluster_store: StreamStore, cluster_url: str, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    client: Any = RedisCluster.from_url(cluster_url)
    base = ["--url", cluster_url, "--prefix", prefix]
    code, out, _ = run(capsys, "inspect", *base, "--store", "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) == 13 and len({r["partition"] for r in rows}) > 1
    code, out, _ = run(capsys, "inspect", *base, "--namespace", "user5", "--json")
    assert [(r["op"], r["key"]) for r in json.loads(out)] == [("ItemPut", "k5"), ("ItemPut", "k11"),
                                                                ("ItemDeleted", "k5")]
    code, out, _ = run(capsys, "tail", *base, "--store", "--from-start", "--count", "13", "--json")
    assert code == 0 and sorted(json.loads(line)["id"] for line in out.splitlines()) == sorted(
        r["entry_id"] for r in rows)
    stats = json.loads(run(capsys, "stats", *base, "--store", "--json")[1])
    assert (stats["threads"], stats["events"]) == (len({r["partition"] for r in rows}), 13)
    before = items(client, prefix)
    [doc] = client.scan_iter(match=f"{prefix}:items:doc:*:user2.facts:k2", target_nodes=RedisCluster.ALL_NODES)
    client.execute_command("JSON.SET", doc, "$.i.v.text", '"changed"')
    assert run(capsys, "verify", *base)[0] == 1
    assert run(capsys, "replay", *base, "--store")[0] == 0
    assert items(client, prefix) == before
    assert run(capsys, "verify", *base)[0] == 0
    code, out, _ = run(capsys, "reembed", *base, "--embed", "fake_embeddings:third_model", "--dims", "4",
                       "--field", "text", "--namespace", "user1")
    assert code == 0 and "re-embedded 2 items under user1" in out
    assert run(capsys, "project", *base, "--store", "--burst")[0] == 0
    assert run(capsys, "purge-store", *base, "user1")[0] == 0
    assert json.loads(run(capsys, "inspect", *base, "--namespace", "user1", "--json")[1]) == []
    code, out, err = run(capsys, "verify", *base)
    assert code == 0, out + err
