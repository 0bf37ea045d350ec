"""The indexes a slot move leaves behind on a Redis Cluster: when the slot of an index's hash tag
moves to another primary, the next setup makes each primary's index under its new tag and the old
ones stay (each indexes its primary's documents a second time; the giving primary's answers
``MOVED`` to ``FT.DROPINDEX``). `streamsaver doctor` names them with the remedy, and
`streamsaver drop-stale-indexes` drops them, the giving primary's included; listings are whole
before and after."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis
from cluster_join import move
from helpers import cluster_of_three, config, new_checkpoint
from redis.cluster import RedisCluster

from streamsaver import StreamSaver, StreamStore
from streamsaver.cli.main import main
from streamsaver.log.routing import key_slot
from streamsaver.server.cluster import EmbeddedCluster
from streamsaver.server.embedded import EmbeddedRedis

pytestmark = pytest.mark.slow


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    with cluster_of_three() as made:  # slots move: a cluster of its own
        yield made


def _indexes(cluster: EmbeddedCluster) -> set[tuple[int, str]]:
    found = set()
    for node in cluster.nodes:
        with redis.Redis(port=node.port) as client:
            found |= {(node.port, name.decode()) for name in client.execute_command("FT._LIST")}
    return found


def _doctor(cluster: EmbeddedCluster, capsys: pytest.CaptureFixture[str]) -> list[dict[str, str]]:
    main(["--url", cluster.url, "--prefix", "moved", "doctor", "--json"])
    return [f for f in json.loads(capsys.readouterr().out)["findings"] if f["check"] == "stale indexes"]


def _move_the_first_tag(cluster: EmbeddedCluster, saver: StreamSaver) -> tuple[int, EmbeddedRedis]:
    """Move the slot of the first index tag ({i0}) to the primary named by the last: both
    primaries' first tags change. The giving primary's port, and the taking primary."""
    tags = sorted((str(target.route) for target in saver.core.index_targets("full")), key=lambda t: int(t[2:-1]))
    owner = RedisCluster.from_url(cluster.url).get_node_from_key
    giver, taker = owner(tags[0]).port, next(node for node in cluster.nodes if node.port == owner(tags[-1]).port)
    move(cluster, key_slot(tags[0].encode()), taker)
    return giver, taker


def test_drop_removes_a_deployment_whose_indexes_a_slot_move_left_behind(
        cluster: EmbeddedCluster, capsys: pytest.CaptureFixture[str]) -> None:
    saver = StreamSaver(RedisCluster.from_url(cluster.url), prefix="moved")  # type: ignore[arg-type]
    saver.setup()
    _move_the_first_tag(cluster, saver)
    StreamSaver(RedisCluster.from_url(cluster.url), prefix="moved").setup()  # type: ignore[arg-type]
    assert len(_indexes(cluster)) == 5

    assert main(["--url", cluster.url, "--prefix", "moved", "drop", "--yes"]) == 0
    assert _indexes(cluster) == set()


def test_doctor_names_the_indexes_a_tag_slot_move_left_and_drop_stale_indexes_drops_them(
        cluster: EmbeddedCluster, capsys: pytest.CaptureFixture[str]) -> None:
    saver = StreamSaver(RedisCluster.from_url(cluster.url), prefix="moved")  # type: ignore[arg-type]
    saver.setup()
    StreamStore(RedisCluster.from_url(cluster.url), prefix="moved").setup()  # type: ignore[arg-type]
    for n in range(20):
        checkpoint, versions = new_checkpoint({"n": n})
        saver.put(config(f"t{n}"), checkpoint, {"step": n}, versions)
    listed = [t.config["configurable"]["checkpoint_id"] for t in saver.list(None)]
    assert _doctor(cluster, capsys) == [{"check": "stale indexes", "severity": "ok", "detail": "none"}]
    before = _indexes(cluster)
    giver, taker = _move_the_first_tag(cluster, saver)

    again = StreamSaver(RedisCluster.from_url(cluster.url), prefix="moved")  # type: ignore[arg-type]
    again.setup()
    StreamStore(RedisCluster.from_url(cluster.url), prefix="moved").setup()  # type: ignore[arg-type]
    # the giver's and the taker's first tags changed: their old indexes (each view's) stay
    left = {(port, name) for port, name in before if port in (giver, taker.port)}
    assert left <= _indexes(cluster) and len(_indexes(cluster)) == len(before) + len(left)
    stale = _doctor(cluster, capsys)
    assert all(f["severity"] == "warning" for f in stale)
    assert sorted(f["detail"].split(" ", 1)[0] for f in stale) == sorted(name for _, name in left)
    assert any("IMPORTING" in f["detail"] and "STABLE" in f["detail"] for f in stale)  # the giver's remedy

    assert main(["--url", cluster.url, "--prefix", "moved", "drop-stale-indexes", "--dry-run"]) == 0
    assert "would drop" in capsys.readouterr().out and _indexes(cluster) & left == left
    assert main(["--url", cluster.url, "--prefix", "moved", "drop-stale-indexes", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert sorted(report["dropped"]) == sorted(name for _, name in left)
    assert not _indexes(cluster) & left
    assert _doctor(cluster, capsys) == [{"check": "stale indexes", "severity": "ok", "detail": "none"}]
    assert [t.config["configurable"]["checkpoint_id"] for t in again.list(None)] == listed
    assert [t.config["configurable"]["checkpoint_id"] for t in saver.list(None)] == listed  # on the old map
    with redis.Redis(port=giver) as client:
        assert b"-<-" not in client.execute_command("CLUSTER", "NODES")  # the slot's state made stable
