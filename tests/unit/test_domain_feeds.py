"""A domain names its partition feeds and which partition a log id belongs to: the checkpoint
threads' feeds and hashed thread ids, the store's own feeds (``P:sfeed:{pN}``) and partition
numbers, so the projector worker, stats and tail read each domain's feeds."""

from __future__ import annotations

from projectors.domain import CHECKPOINTS
from projectors.store_domain import STORE
from streamsaver.log.keys import Keyspace, partition_of


def test_each_domain_names_its_feed_of_a_partition() -> None:
    keyspace = Keyspace("app", 4)
    assert [CHECKPOINTS.feed_key(keyspace, p) for p in range(4)] == [keyspace.feed(p) for p in range(4)]
    assert [STORE.feed_key(keyspace, p) for p in range(4)] == [f"app:sfeed:{{p{p}}}" for p in range(4)]
    assert STORE.feed_key(keyspace, 2) == keyspace.store("2").feed


def test_each_domain_finds_the_partition_of_a_log() -> None:
    assert [CHECKPOINTS.log_partition(t, 4) for t in ("a", "b", "42")] == [partition_of(t, 4) for t in ("a", "b", "42")]
    assert [STORE.log_partition(log_id, 4) for log_id in ("0", "3", "4", "x", "-1", "")] == [0, 3, -1, -1, -1, -1]
