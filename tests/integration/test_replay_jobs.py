"""A replay split over several processes by partition gives the same views as one replayer."""

from __future__ import annotations

import io
import json

import pytest
import redis
from helpers import snapshot

from streamsaver import StreamSaver
from streamsaver.cli.main import main
from streamsaver.demo import run_demo
from streamsaver.errors import InvalidInputError, ReplayJobError
from streamsaver.ops.replay import Replayer
from streamsaver.ops.replay_jobs import replay_in_jobs


@pytest.fixture(scope="module")
def demo_prefix(redis_url: str) -> str:
    """A deployment written by real graphs (the demo): threads in several partitions."""
    return run_demo(redis_url, out=io.StringIO()).prefix


def test_views_rebuilt_by_several_jobs_equal_the_live_views(
    client: redis.Redis, redis_url: str, demo_prefix: str
) -> None:
    live = snapshot(client, demo_prefix)
    seen: list[int] = []

    stats = replay_in_jobs(redis_url, demo_prefix, ["full", "shallow"], jobs=3, progress=seen.append)

    replayer = Replayer.open(client, demo_prefix)
    assert stats.threads == sum(1 for _ in replayer.thread_logs())
    assert stats.events == sum(seen) == sum(int(client.xlen(log)) for log in replayer.thread_logs())
    assert snapshot(client, demo_prefix) == live


def test_jobs_split_the_partitions_without_overlap(client: redis.Redis, demo_prefix: str) -> None:
    replayer = Replayer.open(client, demo_prefix)
    every = sorted(replayer.thread_logs())
    shares = [sorted(replayer.thread_logs(range(j, replayer.keyspace.partitions, 3))) for j in range(3)]
    assert sorted(log for share in shares for log in share) == every


def test_the_cli_replays_with_jobs(
    client: redis.Redis, redis_url: str, demo_prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    live = snapshot(client, demo_prefix)
    assert main(["replay", "--jobs", "2", "--url", redis_url, "--prefix", demo_prefix, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["events"] > 0
    assert snapshot(client, demo_prefix) == live


def test_bad_job_counts_are_refused(redis_url: str, demo_prefix: str) -> None:
    with pytest.raises(InvalidInputError):
        replay_in_jobs(redis_url, demo_prefix, ["full"], jobs=0)
    assert main(["replay", "--jobs", "2", "--shadow", "--url", redis_url, "--prefix", demo_prefix]) == 1


def test_a_failing_job_is_reported(client: redis.Redis, redis_url: str, prefix: str) -> None:
    """A job that meets a broken log raises in the caller, naming the cause."""
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    client.xadd(saver.core.keys.thread("broken").log, {"type": "NoSuchEvent", "v": "1", "thread": "broken"})
    with pytest.raises(ReplayJobError, match="NoSuchEvent"):
        replay_in_jobs(redis_url, prefix, ["full"], jobs=2)
