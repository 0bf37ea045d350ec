"""`drop_stale_indexes` checks each index again right before its drop, in the same atomic call on
its primary (``drop_if_stale.lua``): an index that was stale when listed but that its primary's slot
map makes current again by then (the slot moved back, and setup ran on that map) is kept and
reported, never dropped; the indexes the move back left stale are what a new listing drops."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis
from cluster_join import move
from helpers import cluster_of_three, config, new_checkpoint
from redis.cluster import RedisCluster

from streamsaver import StreamSaver
from streamsaver.cli.main import main
from streamsaver.log.routing import key_slot
from streamsaver.ops import stale_indexes as module
from streamsaver.ops.stale_indexes import KEPT_CURRENT, drop_stale_indexes, stale_indexes
from streamsaver.server.cluster import EmbeddedCluster
from tests.integration.test_stale_indexes import _indexes, _move_the_first_tag

pytestmark = pytest.mark.slow


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    with cluster_of_three() as made:  # slots move: a cluster of its own
        yield made


def test_an_index_current_again_since_the_listing_is_kept(
        cluster: EmbeddedCluster, capsys: pytest.CaptureFixture[str]) -> None:
    saver = StreamSaver(RedisCluster.from_url(cluster.url), prefix="back")  # type: ignore[arg-type]
    saver.setup()
    for n in range(12):
        checkpoint, versions = new_checkpoint({"n": n})
        saver.put(config(f"t{n}"), checkpoint, {"step": n}, versions)
    listed = [t.config["configurable"]["checkpoint_id"] for t in saver.list(None)]
    first = min((str(t.route) for t in saver.core.index_targets("full")), key=lambda tag: int(tag[2:-1]))
    giver, _ = _move_the_first_tag(cluster, saver)
    StreamSaver(RedisCluster.from_url(cluster.url), prefix="back").setup()  # type: ignore[arg-type]
    plan = stale_indexes(RedisCluster.from_url(cluster.url), "back")
    assert any(index.named_elsewhere for index in plan) and any(not index.named_elsewhere for index in plan)

    move(cluster, key_slot(first.encode()), next(node for node in cluster.nodes if node.port == giver))
    again = StreamSaver(RedisCluster.from_url(cluster.url), prefix="back")  # type: ignore[arg-type]
    again.setup()  # on the map moved back: the listed indexes are the ones it asks again
    kept: list[tuple[str, str]] = []
    dropped = drop_stale_indexes(RedisCluster.from_url(cluster.url), plan, lambda i, why: kept.append((i.name, why)))
    assert dropped == [] and sorted(kept) == sorted((index.name, KEPT_CURRENT) for index in plan)
    assert {index.name for index in plan} <= {name for _, name in _indexes(cluster)}
    with redis.Redis(port=giver) as client:
        assert b"-<-" not in client.execute_command("CLUSTER", "NODES")
    assert [t.config["configurable"]["checkpoint_id"] for t in again.list(None)] == listed

    # what the move back left stale (the intermediate map's indexes) is what a new listing drops
    left = {index.name for index in stale_indexes(RedisCluster.from_url(cluster.url), "back")}
    assert left and not left & {index.name for index in plan}
    assert main(["--url", cluster.url, "--prefix", "back", "drop-stale-indexes", "--json"]) == 0
    assert sorted(json.loads(capsys.readouterr().out)["dropped"]) == sorted(left)
    assert [t.config["configurable"]["checkpoint_id"] for t in again.list(None)] == listed


def test_the_command_reports_an_index_it_kept(cluster: EmbeddedCluster, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    saver = StreamSaver(RedisCluster.from_url(cluster.url), prefix="told")  # type: ignore[arg-type]
    saver.setup()
    first = min((str(t.route) for t in saver.core.index_targets("full")), key=lambda tag: int(tag[2:-1]))
    giver, _ = _move_the_first_tag(cluster, saver)
    StreamSaver(RedisCluster.from_url(cluster.url), prefix="told").setup()  # type: ignore[arg-type]
    listing = module.stale_indexes

    def then_moved_back(client: object, prefix: str) -> list[module.StaleIndex]:
        found = listing(client, prefix)
        move(cluster, key_slot(first.encode()), next(node for node in cluster.nodes if node.port == giver))
        return found

    monkeypatch.setattr(module, "stale_indexes", then_moved_back)  # the CLI lists, then the slot moves back
    assert main(["--url", cluster.url, "--prefix", "told", "drop-stale-indexes"]) == 0
    out = capsys.readouterr().out
    assert out.count(KEPT_CURRENT) == len(out.strip().splitlines()) > 0 and "dropped" not in out
