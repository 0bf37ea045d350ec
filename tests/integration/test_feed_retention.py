"""Feed retention: the real ``streamsaver trim-feeds`` bounds the feeds no consumer group reads
(by length, by age, by a saved policy later runs apply, store feeds included) and never cuts a
feed a group reads below what the group has not acknowledged."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis
from helpers import config, new_checkpoint

from streamsaver import StreamSaver
from streamsaver.cli.main import main
from streamsaver.feeds.retention import FeedRetention, feed_retention
from streamsaver.log.keys import Keyspace
from streamsaver.memory.sync import StreamStore


def _events(client: redis.Redis, prefix: str, count: int) -> StreamSaver:
    saver = StreamSaver(client, prefix=prefix, partitions=2)
    saver.setup()
    for n in range(count):
        checkpoint, versions = new_checkpoint({"n": n})
        saver.put(config(f"t{n % 4}"), checkpoint, {"step": n}, versions)
    return saver


def _lengths(client: redis.Redis, prefix: str) -> dict[str, int]:
    keyspace = Keyspace(prefix, 2)
    feeds = [keyspace.feed(p) for p in range(2)] + [keyspace.store(str(p)).feed for p in range(2)]
    return {f: int(client.xlen(f)) for f in feeds}


def _trim(capsys: pytest.CaptureFixture[str], url: str, prefix: str, *flags: str) -> dict[str, Any]:
    assert main(["trim-feeds", *flags, "--url", url, "--prefix", prefix, "--json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_a_feed_no_group_reads_is_cut_to_the_length_given_and_to_a_saved_policy_later(
    client: redis.Redis, prefix: str, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _events(client, prefix, 40)
    store = StreamStore(client, prefix=prefix)
    store.setup()
    for n in range(12):
        store.put(("users", f"u{n}"), "k", {"n": n})
    before = _lengths(client, prefix)

    unbounded = _trim(capsys, redis_url, prefix)
    once = _trim(capsys, redis_url, prefix, "--max-len", "5")

    assert unbounded["removed"] == 0 and _lengths(client, prefix) == {f: min(n, 5) for f, n in before.items()}
    assert once["removed"] == sum(before.values()) - sum(min(n, 5) for n in before.values())
    assert feed_retention(client, prefix).empty  # not saved
    _trim(capsys, redis_url, prefix, "--max-len", "2", "--save")
    assert feed_retention(client, prefix) == FeedRetention(max_len=2)
    _events(client, prefix, 20)
    applied = _trim(capsys, redis_url, prefix)
    assert applied["policy"] == {"max_len": 2, "max_age_seconds": None} and applied["removed"] > 0
    assert all(n <= 2 for n in _lengths(client, prefix).values())
    _trim(capsys, redis_url, prefix, "--clear-policy")
    assert feed_retention(client, prefix).empty


def test_an_age_bound_drops_the_old_entries_and_keeps_the_young(
    client: redis.Redis, prefix: str, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _events(client, prefix, 10)
    feed = Keyspace(prefix, 2).store("0").feed
    client.xadd(feed, {"id": "1-0"}, id="1-0")  # appended in 1970 (a feed id is its append time)
    young = client.xadd(feed, {"id": "2-0"})

    aged = _trim(capsys, redis_url, prefix, "--max-age", "1d")

    assert aged["removed"] == 1 and aged["feeds"] == {feed: 1}
    assert [entry_id for entry_id, _ in client.xrange(feed)] == [young]


def test_a_feed_a_group_reads_keeps_what_the_group_has_not_acknowledged(
    client: redis.Redis, prefix: str, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _events(client, prefix, 30)
    feed = Keyspace(prefix, 2).feed(0)
    client.xgroup_create(feed, "audit", id="0")
    length = int(client.xlen(feed))

    _trim(capsys, redis_url, prefix, "--max-len", "1")

    assert int(client.xlen(feed)) == length  # nothing delivered to the group yet: everything stays
    assert int(client.xlen(Keyspace(prefix, 2).feed(1))) <= 1


def test_retention_options_that_contradict_are_usage_errors(
    prefix: str, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["trim-feeds", "--url", redis_url, "--prefix", prefix]
    assert main([*base, "--save"]) == 2
    assert main([*base, "--clear-policy", "--max-len", "3"]) == 2
    assert main([*base, "--max-age", "soon"]) == 2
    assert "not a duration" in capsys.readouterr().err
