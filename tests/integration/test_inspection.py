"""inspect, stats and tail read the logs and feeds and say what they hold."""

from __future__ import annotations

import io
import json

import pytest
import redis

from streamsaver.cli.main import main
from streamsaver.demo import run_demo
from streamsaver.errors import InvalidInputError
from streamsaver.log.events import CheckpointSaved
from streamsaver.log.stored import from_fields
from streamsaver.ops.inspection import deployment_keyspace, deployment_stats, thread_history


@pytest.fixture(scope="module")
def demo_prefix(redis_url: str) -> str:
    return run_demo(redis_url, out=io.StringIO()).prefix


def test_inspect_lists_every_checkpoint_of_the_log_in_order(client: redis.Redis, demo_prefix: str) -> None:
    log = deployment_keyspace(client, demo_prefix).thread("trip").log
    saved = [e for e in (from_fields(f) for _, f in client.xrange(log)) if isinstance(e, CheckpointSaved)]

    rows = thread_history(client, demo_prefix, "trip")

    assert [r.checkpoint_id for r in rows] == [e.checkpoint_id for e in saved]
    assert [r.step for r in rows] == [e.metadata["step"] for e in saved]
    assert any(len(r.writes) >= 4 for r in rows), "the fan-out checkpoint holds both branches' writes"


def test_inspect_cli_prints_a_table_and_json(
    redis_url: str, demo_prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", "trip", "--url", redis_url, "--prefix", demo_prefix]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].split()[:3] == ["step", "source", "ns"] and "input" in text

    assert main(["inspect", "trip", "--url", redis_url, "--prefix", demo_prefix, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["source"] == "input" and rows[0]["parent_checkpoint_id"] is None


def test_inspect_of_an_unknown_thread_is_a_clear_error(client: redis.Redis, demo_prefix: str) -> None:
    with pytest.raises(InvalidInputError, match="no log"):
        thread_history(client, demo_prefix, "nobody")
    assert main(["inspect", "nobody", "--url", "redis://127.0.0.1:1/0", "--prefix", demo_prefix]) == 1


def test_stats_count_the_logs_and_feeds(client: redis.Redis, demo_prefix: str) -> None:
    logs = list(client.scan_iter(match=f"{demo_prefix}:log:*"))
    stats = deployment_stats(client, demo_prefix)
    assert stats.threads == len(logs) == 4
    assert stats.events == sum(client.xlen(k) for k in logs) == stats.feed_entries
    assert stats.log_bytes > 0


def test_tail_prints_the_feed_pointers(redis_url: str, demo_prefix: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tail", "--url", redis_url, "--prefix", demo_prefix, "--from-start", "--count", "5", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == 5
    assert all(p["type"] in ("CheckpointSaved", "WritesSaved") and p["thread"] for p in lines)
