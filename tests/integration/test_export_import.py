"""Export and import: the thread logs of a deployment, written to a file and restored into an empty
deployment (another prefix, or another server), give the same views byte for byte and the same
reads; a non-empty target or a damaged file is refused before anything is written."""

from __future__ import annotations

import gzip
import io
import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from helpers import keys_of, sans_incarnation, snapshot
from langgraph.checkpoint.base import CheckpointTuple

from streamsaver import StreamSaver
from streamsaver.cli.main import main
from streamsaver.demo import run_demo
from streamsaver.errors import ExportFileError, TargetNotEmptyError
from streamsaver.ops.transfer import FORMAT, export_logs, import_logs
from streamsaver.server.embedded import EmbeddedRedis

DELETED = "trip"


@pytest.fixture(scope="module")
def source(redis_url: str) -> Iterator[str]:
    """A deployment written by real graphs (the demo), with one thread deleted afterwards."""
    report = run_demo(redis_url, out=io.StringIO())
    client = redis.Redis.from_url(redis_url)
    StreamSaver(client, prefix=report.prefix).delete_thread(DELETED)
    yield report.prefix
    client.close()


@pytest.fixture(scope="module")
def export_file(redis_url: str, source: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("export") / "logs.jsonl.gz"
    with redis.Redis.from_url(redis_url) as client:
        stats = export_logs(client, source, path, page=3)
    assert stats.threads == 3 and stats.entries > 20
    return path


def _views(client: redis.Redis, prefix: str) -> dict[bytes, Any]:
    """Every key but the partition feeds, named without the prefix (positions without `@inc`)."""
    state = snapshot(client, prefix)
    return {
        k[len(prefix) :]: sans_incarnation(v)
        for k, v in state.items()
        if not k.startswith(f"{prefix}:feed:".encode())
    }


def _feed_pointers(client: redis.Redis, prefix: str) -> dict[bytes, list[dict[bytes, bytes]]]:
    """The feed pointers of each thread, in feed order, without their feed ids."""
    pointers: dict[bytes, list[dict[bytes, bytes]]] = defaultdict(list)
    for feed in sorted(client.scan_iter(match=f"{prefix}:feed:*", _type="stream")):
        for _, fields in client.xrange(feed):
            pointers[fields[b"thread"]].append(fields)
    return dict(pointers)


def _reads(client: redis.Redis, prefix: str) -> list[Any]:
    """What both views answer: every thread's latest checkpoint and history, and a search."""
    answers: list[Any] = []
    for view in ("full", "shallow"):
        saver = StreamSaver(client, prefix=prefix, view=view)
        tuples: list[CheckpointTuple] = list(saver.list(None))
        answers.append(tuples)
        for thread in sorted({t.config["configurable"]["thread_id"] for t in tuples}):
            config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
            answers += [saver.get_tuple(config), list(saver.list(config))]
        answers.append(list(saver.list(None, filter={"source": "input"})))
    return answers


def test_the_file_holds_a_header_every_log_entry_and_a_trailer(
    client: redis.Redis, source: str, export_file: Path
) -> None:
    lines = [json.loads(line) for line in gzip.decompress(export_file.read_bytes()).splitlines()]
    header, trailer = lines[0], lines[-1]
    entries = [line for line in lines[1:-1] if "id" in line]
    expiries = [line for line in lines[1:-1] if "id" not in line]

    assert header["format"] == FORMAT and header["version"] == 3
    assert header["prefix"] == source and header["partitions"] == 16
    assert {"created", "streamsaver"} <= set(header)
    logs = [
        client.xrange(k) for k in keys_of(client, source) if k.startswith(f"{source}:log:".encode())
    ]
    assert len(entries) == sum(len(log) for log in logs)
    for log in logs:
        thread = log[0][1][b"thread"].decode()
        assert [e["id"] for e in entries if e["thread"] == thread] == [i.decode() for i, _ in log]
    assert DELETED not in {e["thread"] for e in entries}
    threads = [e["thread"] for e in entries]
    assert expiries == [  # the demo's saver has no TTL: one expiry line after each thread's entries
        {"thread": t, "expires_at_ms": None, "pinned": False} for t in dict.fromkeys(threads)
    ]
    assert all(lines.index(x) == max(i for i, e in enumerate(lines) if e.get("thread") == x["thread"])
               for x in expiries)
    assert trailer == {"end": True, "threads": 3, "entries": len(entries)}


def test_an_import_into_another_prefix_gives_identical_views_and_reads(
    client: redis.Redis, source: str, export_file: Path, prefix: str
) -> None:
    stats = import_logs(client, export_file, prefix=prefix)

    assert (stats.prefix, stats.source, stats.threads) == (prefix, source, 3)
    assert stats.replayed == stats.entries
    assert _views(client, prefix) == _views(client, source)
    assert _reads(client, prefix) == _reads(client, source)


def test_an_import_into_an_empty_server_gives_identical_views_and_reads(
    client: redis.Redis, source: str, export_file: Path
) -> None:
    with EmbeddedRedis() as server, redis.Redis.from_url(server.url) as other:
        stats = import_logs(other, export_file)

        assert stats.prefix == source
        assert _views(other, source) == _views(client, source)
        assert _reads(other, source) == _reads(client, source)
        saver = StreamSaver(other, prefix=source)
        assert saver.get_tuple({"configurable": {"thread_id": DELETED}}) is None


def test_feeds_are_regenerated_in_log_order_for_every_surviving_thread(
    client: redis.Redis, source: str, export_file: Path, prefix: str
) -> None:
    import_logs(client, export_file, prefix=prefix)

    original = _feed_pointers(client, source)
    assert DELETED.encode() in original
    del original[DELETED.encode()]
    assert _feed_pointers(client, prefix) == original


def test_an_import_without_feeds_leaves_them_empty(
    client: redis.Redis, export_file: Path, prefix: str
) -> None:
    import_logs(client, export_file, prefix=prefix, feeds=False)

    assert _feed_pointers(client, prefix) == {}
    assert any(b":log:" in k for k in keys_of(client, prefix))


def test_the_restored_deployment_takes_new_writes(
    client: redis.Redis, export_file: Path, prefix: str
) -> None:
    import_logs(client, export_file, prefix=prefix)
    saver = StreamSaver(client, prefix=prefix)
    config = {"configurable": {"thread_id": "chat", "checkpoint_ns": ""}}
    latest = saver.get_tuple(config)
    assert latest is not None

    checkpoint = dict(latest.checkpoint, id="ffffffff-ffff-6fff-bfff-ffffffffffff")
    saver.put(latest.config, checkpoint, {"source": "update", "step": 99}, {})  # type: ignore[arg-type]

    after = saver.get_tuple(config)
    assert after is not None and after.checkpoint["id"] == checkpoint["id"]
    assert after.checkpoint["channel_values"] == latest.checkpoint["channel_values"]


@pytest.mark.parametrize("into", ["source", "one-key"])
def test_an_import_into_a_prefix_holding_any_key_is_refused_and_changes_nothing(
    client: redis.Redis, source: str, export_file: Path, prefix: str, into: str
) -> None:
    target = source if into == "source" else prefix
    if into == "one-key":
        client.set(f"{prefix}:unrelated", b"x")
    before = snapshot(client, target)

    with pytest.raises(TargetNotEmptyError, match="already holds keys"):
        import_logs(client, export_file, prefix=target)

    assert snapshot(client, target) == before


def _rewrite(path: Path, target: Path, change: Any) -> Path:
    lines = gzip.decompress(path.read_bytes()).splitlines(keepends=True)
    target.write_bytes(gzip.compress(b"".join(change(lines))))
    return target


def _damaged(kind: str, good: Path, tmp_path: Path) -> Path:
    bad = tmp_path / f"{kind}.jsonl.gz"
    raw = good.read_bytes()
    if kind == "truncated":
        bad.write_bytes(raw[: len(raw) // 2])
    elif kind == "corrupt":
        bad.write_bytes(raw[:200] + bytes(b ^ 0x5A for b in raw[200:260]) + raw[260:])
    elif kind == "not-gzip":
        bad.write_bytes(b'{"format": "streamsaver-logs"}\n')
    elif kind == "no-trailer":
        _rewrite(good, bad, lambda lines: lines[:-1])
    elif kind == "entry-missing":
        _rewrite(good, bad, lambda lines: lines[:5] + lines[6:])
    elif kind == "bad-base64":
        _rewrite(
            good,
            bad,
            lambda lines: [
                *lines[:3],
                lines[3].replace(b'"fields":[["', b'"fields":[["!'),
                *lines[4:],
            ],
        )
    elif kind == "newer-version":
        _rewrite(
            good, bad, lambda lines: [lines[0].replace(b'"version":3', b'"version":4'), *lines[1:]]
        )
    elif kind == "not-an-export":
        _rewrite(good, bad, lambda lines: [b'{"hello": "world"}\n', *lines[1:]])
    return bad


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("truncated", "truncated"),
        ("corrupt", "cannot be read"),
        ("not-gzip", "cannot be read"),
        ("no-trailer", "without its trailer"),
        ("entry-missing", "trailer counts"),
        ("bad-base64", "not base64"),
        ("newer-version", "version 4: this streamsaver reads up to 3"),
        ("not-an-export", "not a streamsaver export"),
    ],
)
def test_a_damaged_file_is_refused_with_a_clear_error_and_writes_nothing(
    client: redis.Redis, export_file: Path, tmp_path: Path, prefix: str, kind: str, message: str
) -> None:
    bad = _damaged(kind, export_file, tmp_path)

    with pytest.raises(ExportFileError, match=message):
        import_logs(client, bad, prefix=prefix)

    assert keys_of(client, prefix) == set()


def test_the_cli_exports_and_imports_with_json_output(
    redis_url: str,
    client: redis.Redis,
    source: str,
    prefix: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = str(tmp_path / "cli.jsonl.gz")

    assert main(["export", path, "--url", redis_url, "--prefix", source, "--json"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert main(["import", path, "--url", redis_url, "--into-prefix", prefix, "--json"]) == 0
    imported = json.loads(capsys.readouterr().out)

    assert exported["entries"] == imported["entries"] == imported["replayed"] > 0
    assert (imported["prefix"], imported["source"]) == (prefix, source)
    assert _views(client, prefix) == _views(client, source)
    assert main(["import", path, "--url", redis_url, "--into-prefix", prefix]) == 1
    assert "already holds keys" in capsys.readouterr().err
