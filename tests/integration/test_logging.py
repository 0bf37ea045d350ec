"""The library logs its rare branches (stdlib logging under ``streamsaver.``, never configuring a
handler): a script reloaded after NOSCRIPT, a refused delta sent again whole, the indexes setup
creates, an index schema upgrade; and ``--log-level`` shows them from the command line. (Slot
moves and a re-sent durability wait: tests/integration/test_savers_on_a_cluster.py.)"""

from __future__ import annotations

import logging
import subprocess
import sys
from typing import Any

import pytest
import redis
from helpers import config, new_checkpoint

from streamsaver import AsyncStreamSaver, StreamSaver
from streamsaver.log.keys import Keyspace
from streamsaver.server.embedded import EmbeddedRedis


def _logged(caplog: pytest.LogCaptureFixture, text: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if text in r.getMessage() and r.name.startswith("streamsaver.")]


def _put(saver: StreamSaver, thread: str, values: dict[str, Any], previous: Any = None) -> Any:
    checkpoint, versions = new_checkpoint(values, previous)
    parent = previous["id"] if previous else None
    saver.put(config(thread, "", parent), checkpoint, {}, versions)
    return checkpoint


def test_a_plain_put_logs_nothing(client: redis.Redis, prefix: str, caplog: pytest.LogCaptureFixture) -> None:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    with caplog.at_level(logging.DEBUG, logger="streamsaver"):
        _put(saver, "t", {"a": 1})
        saver.get_tuple(config("t"))
    assert not [r for r in caplog.records if r.name.startswith("streamsaver.")]


def test_setup_logs_the_indexes_it_creates(client: redis.Redis, prefix: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="streamsaver"):
        StreamSaver(client, prefix=prefix).setup()
    [record] = _logged(caplog, "created the indexes")
    assert Keyspace(prefix).index("full") in record.getMessage() and record.name == "streamsaver.setup"


def test_a_script_flush_then_a_put_logs_the_reload(
    client: redis.Redis, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    client.script_flush()
    with caplog.at_level(logging.INFO, logger="streamsaver"):
        _put(saver, "t", {"a": 1})
    assert [r.name for r in _logged(caplog, "NOSCRIPT")] == ["streamsaver.drivers"]


async def test_the_async_driver_logs_the_reload(
    aclient: redis.asyncio.Redis, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    saver = AsyncStreamSaver(aclient, prefix=prefix)
    await saver.setup()
    await aclient.script_flush()
    checkpoint, versions = new_checkpoint({"a": 1})
    with caplog.at_level(logging.INFO, logger="streamsaver"):
        await saver.aput(config("t"), checkpoint, {}, versions)
    assert _logged(caplog, "NOSCRIPT")


def test_a_refused_delta_logs_the_full_resend(
    client: redis.Redis, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    previous = None
    for step in range(3):
        previous = _put(saver, "t", {"messages": [f"message {i} " * 20 for i in range(step + 1)]}, previous)
    saver.prune(["t"])  # the base the saver remembers is gone
    with caplog.at_level(logging.INFO, logger="streamsaver"):
        _put(saver, "t", {"messages": [f"message {i} " * 20 for i in range(4)]}, previous)
    [record] = _logged(caplog, "delta refused")
    assert "SSBASE" in record.getMessage() and record.name == "streamsaver.checkpoints"


def test_an_index_schema_upgrade_logs_the_wait(prefix: str, caplog: pytest.LogCaptureFixture) -> None:
    # Its own server: on the shared one, a new index's scan of every test's keys can take minutes.
    with EmbeddedRedis() as server, redis.Redis.from_url(server.url) as client:
        _upgrade(client, prefix, caplog)
    assert _logged(caplog, "index schema upgrade") and _logged(caplog, Keyspace(prefix).index("full", version=3))


def _upgrade(client: redis.Redis, prefix: str, caplog: pytest.LogCaptureFixture) -> None:
    keyspace = Keyspace(prefix)
    older = keyspace.index("full", version=3)
    client.execute_command("FT.CREATE", older, "ON", "JSON", "PREFIX", 1, keyspace.document_prefix("full"),
                           "SCHEMA", "$.th", "AS", "th", "TAG")
    try:
        with caplog.at_level(logging.INFO, logger="streamsaver"):
            StreamSaver(client, prefix=prefix).setup()
    finally:
        client.execute_command("FT.DROPINDEX", older)


@pytest.mark.parametrize("where", ["before", "after"])
def test_the_log_level_option_shows_the_records_on_stderr(redis_url: str, where: str) -> None:
    option, command = ["--log-level", "info"], ["demo", "--url", redis_url, "--json"]
    argv = [*option, *command] if where == "before" else [*command, *option]

    done = subprocess.run([sys.executable, "-m", "streamsaver", *argv],
                          check=False, capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    assert "streamsaver.setup INFO setup of 'demo-" in done.stderr  # the demo's fresh deployment


def test_a_bad_log_level_is_a_usage_error() -> None:
    done = subprocess.run([sys.executable, "-m", "streamsaver", "--log-level", "loud", "stats"],
                          check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--log-level" in done.stderr
