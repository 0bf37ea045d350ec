"""Export and import carry each thread's expiry: a thread with a TTL comes back with the same
absolute deadline on every key, a pinned thread stays pinned, a thread without TTL stays without;
a thread whose deadline has passed is not imported (it had expired in the source); a version-1
file (no expiry) still imports, and a damaged expiry line is refused before anything is written."""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from helpers import config, keys_of, new_checkpoint

from streamsaver import StreamSaver
from streamsaver.cli.main import main
from streamsaver.errors import ExportFileError
from streamsaver.log.codec import escape
from streamsaver.ops.transfer import export_logs, import_logs
from streamsaver.ops.verify import verify

TTL_MINUTES = 60
TIMED, PINNED, FOREVER = "timed", "pinned", "forever"


def _fill(saver: StreamSaver, thread_id: str) -> None:
    """Checkpoints and pending writes in two namespaces: keys in every view."""
    for ns in ("", "child:1"):
        parent, previous = config(thread_id, ns), None
        for step in range(3):
            checkpoint, versions = new_checkpoint({"step": step, "ns": ns}, previous)
            parent = saver.put(parent, checkpoint, {"source": "loop", "step": step}, versions)
            saver.put_writes(parent, [("step", step)], f"task{step}")
            previous = checkpoint


def thread_keys(client: redis.Redis, prefix: str, thread_id: str) -> list[bytes]:
    mark = f":{escape(thread_id)}".encode()
    return sorted(k for k in keys_of(client, prefix) if k.endswith(mark) or mark + b":" in k)


def deadlines(client: redis.Redis, prefix: str, thread_id: str) -> set[int]:
    """The deadline of every key of the thread (-1: none)."""
    return {client.execute_command("PEXPIRETIME", k) for k in thread_keys(client, prefix, thread_id)}


def pinned(client: redis.Redis, prefix: str, thread_id: str) -> bool:
    return any(client.hexists(k, "@pinned") for k in thread_keys(client, prefix, thread_id) if b":pos:" in k)


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines()]


def rewrite(path: Path, target: Path, change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> Path:
    text = b"".join(json.dumps(line, separators=(",", ":")).encode() + b"\n" for line in change(lines_of(path)))
    target.write_bytes(gzip.compress(text))
    return target


@pytest.fixture(scope="module")
def source(redis_url: str) -> Iterator[str]:
    """Three threads: one with a TTL, one pinned (by a saver with a TTL), one without TTL."""
    prefix = f"ttl{time.time_ns()}"
    with redis.Redis.from_url(redis_url) as client:
        timed = StreamSaver(client, prefix=prefix, default_ttl=TTL_MINUTES)
        _fill(timed, TIMED)
        _fill(timed, PINNED)
        timed.pin_thread(PINNED)
        _fill(StreamSaver(client, prefix=prefix), FOREVER)
        yield prefix


@pytest.fixture(scope="module")
def export_file(redis_url: str, source: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("export") / "logs.jsonl.gz"
    with redis.Redis.from_url(redis_url) as client:
        export_logs(client, source, path)
    return path


def test_the_source_is_what_the_tests_assume(client: redis.Redis, source: str) -> None:
    [deadline] = deadlines(client, source, TIMED)
    assert deadline > 0
    assert deadlines(client, source, PINNED) == deadlines(client, source, FOREVER) == {-1}
    assert pinned(client, source, PINNED) and not pinned(client, source, FOREVER)


def test_each_thread_has_an_expiry_line_after_its_entries(client: redis.Redis, source: str, export_file: Path) -> None:
    lines = lines_of(export_file)
    [deadline] = deadlines(client, source, TIMED)

    assert lines[0]["version"] == 3
    expiries = {line["thread"]: line for line in lines if "pinned" in line}
    assert expiries == {
        TIMED: {"thread": TIMED, "expires_at_ms": deadline, "pinned": False},
        PINNED: {"thread": PINNED, "expires_at_ms": None, "pinned": True},
        FOREVER: {"thread": FOREVER, "expires_at_ms": None, "pinned": False},
    }
    for thread, line in expiries.items():
        assert lines.index(line) == max(i for i, x in enumerate(lines) if x.get("thread") == thread)


def test_an_import_keeps_every_threads_deadline_and_pin(
    client: redis.Redis, source: str, export_file: Path, prefix: str
) -> None:
    before = time.time_ns() // 1_000_000
    stats = import_logs(client, export_file, prefix=prefix)

    assert (stats.threads, stats.expired) == (3, 0)
    [deadline] = deadlines(client, source, TIMED)
    assert before < deadline <= before + TTL_MINUTES * 60_000  # a live TTL, not a stale one
    assert deadlines(client, prefix, TIMED) == {deadline}  # the same absolute moment, on every key
    for thread in (TIMED, PINNED, FOREVER):
        assert len(thread_keys(client, prefix, thread)) == len(thread_keys(client, source, thread))
    assert deadlines(client, prefix, PINNED) == deadlines(client, prefix, FOREVER) == {-1}
    assert pinned(client, prefix, PINNED) and not pinned(client, prefix, FOREVER)
    assert not pinned(client, prefix, TIMED)
    assert verify(client, prefix).matches


def test_a_pinned_thread_stays_pinned_through_appends_with_a_ttl(
    client: redis.Redis, export_file: Path, prefix: str
) -> None:
    import_logs(client, export_file, prefix=prefix)
    saver = StreamSaver(client, prefix=prefix, default_ttl=TTL_MINUTES)

    def append(thread_id: str) -> None:
        latest = saver.get_tuple(config(thread_id))
        assert latest is not None
        checkpoint, versions = new_checkpoint({"step": 99}, latest.checkpoint)
        saver.put(latest.config, checkpoint, {"source": "update", "step": 99}, versions)

    append(PINNED)
    append(FOREVER)

    assert deadlines(client, prefix, PINNED) == {-1}
    assert -1 not in deadlines(client, prefix, FOREVER)  # the same appends give an unpinned thread a TTL


def test_a_thread_whose_deadline_has_passed_is_not_imported(
    client: redis.Redis, source: str, export_file: Path, tmp_path: Path, prefix: str
) -> None:
    past = time.time_ns() // 1_000_000 - 1

    def expire(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [x | {"expires_at_ms": past} if x.get("thread") == TIMED and "pinned" in x else x for x in lines]

    stats = import_logs(client, rewrite(export_file, tmp_path / "past.jsonl.gz", expire), prefix=prefix)

    timed_entries = client.xlen(_log(client, source, TIMED))
    assert (stats.threads, stats.expired) == (2, 1)
    assert stats.entries == stats.replayed == sum(1 for x in lines_of(export_file) if "id" in x) - timed_entries
    assert thread_keys(client, prefix, TIMED) == []
    assert all(client.xrange(feed) == [] or TIMED.encode() not in {f[b"thread"] for _, f in client.xrange(feed)}
               for feed in keys_of(client, prefix) if b":feed:" in feed)
    assert thread_keys(client, prefix, FOREVER) and pinned(client, prefix, PINNED)
    assert verify(client, prefix).matches


def _log(client: redis.Redis, prefix: str, thread_id: str) -> bytes:
    [log] = [k for k in thread_keys(client, prefix, thread_id) if client.type(k) == b"stream"]
    return log


def test_a_version_1_file_imports_without_expiry(
    client: redis.Redis, source: str, export_file: Path, tmp_path: Path, prefix: str
) -> None:
    def version_1(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [lines[0] | {"version": 1}, *(x for x in lines[1:] if "pinned" not in x)]

    stats = import_logs(client, rewrite(export_file, tmp_path / "v1.jsonl.gz", version_1), prefix=prefix)

    assert (stats.threads, stats.expired) == (3, 0)
    for thread in (TIMED, PINNED, FOREVER):
        assert deadlines(client, prefix, thread) == {-1}
        assert not pinned(client, prefix, thread)
    assert verify(client, prefix).matches


def _damage(kind: str) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    def change(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        at = next(i for i, x in enumerate(lines) if x.get("thread") == TIMED and "pinned" in x)
        line = lines[at]
        damaged: dict[str, Any] = {
            "deadline-text": line | {"expires_at_ms": "soon"},
            "deadline-bool": line | {"expires_at_ms": True},
            "deadline-negative": line | {"expires_at_ms": -5},
            "pinned-text": line | {"pinned": "yes"},
            "no-pinned": {"thread": TIMED, "expires_at_ms": line["expires_at_ms"]},
            "no-thread": {"expires_at_ms": None, "pinned": False},
        }
        if kind in damaged:
            return [*lines[:at], damaged[kind], *lines[at + 1 :]]
        if kind == "missing":
            return [*lines[:at], *lines[at + 1 :]]
        if kind == "twice":
            return [*lines[:at], line, line, *lines[at + 1 :]]
        first = next(i for i, x in enumerate(lines) if x.get("thread") == TIMED)
        if kind == "before-entries":
            return [*lines[:first], line, *lines[first:at], *lines[at + 1 :]]
        if kind == "amid-entries":
            return [*lines[: first + 1], line, *lines[first + 1 : at], *lines[at + 1 :]]
        assert kind == "in-version-1"
        return [lines[0] | {"version": 1}, *lines[1:]]

    return change


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("deadline-text", "expires_at_ms that is neither null nor epoch ms"),
        ("deadline-bool", "expires_at_ms that is neither null nor epoch ms"),
        ("deadline-negative", "expires_at_ms that is neither null nor epoch ms"),
        ("pinned-text", "pinned that is not true or false"),
        ("no-pinned", "pinned that is not true or false"),
        ("no-thread", "expiry line without a valid thread"),
        ("missing", "3 threads but 2 expiry lines"),
        ("twice", "not after its entries"),
        ("before-entries", "expiry line of thread 'timed' not after its entries"),
        ("amid-entries", "entry of thread 'timed' after its expiry line"),
        ("in-version-1", "an expiry line in a version-1 export"),
    ],
)
def test_a_damaged_expiry_line_is_refused_and_writes_nothing(
    client: redis.Redis, export_file: Path, tmp_path: Path, prefix: str, kind: str, message: str
) -> None:
    bad = rewrite(export_file, tmp_path / f"{kind}.jsonl.gz", _damage(kind))

    with pytest.raises(ExportFileError, match=message):
        import_logs(client, bad, prefix=prefix)

    assert keys_of(client, prefix) == set()


def test_export_until_a_past_moment_carries_the_current_expiry(
    client: redis.Redis, source: str, tmp_path: Path
) -> None:
    first = client.xrange(_log(client, source, TIMED), count=1)[0][0].decode()
    path = tmp_path / "until.jsonl.gz"

    export_logs(client, source, path, until=first)

    [deadline] = deadlines(client, source, TIMED)
    [line] = [x for x in lines_of(path) if x.get("thread") == TIMED and "pinned" in x]
    assert line["expires_at_ms"] == deadline


def test_the_cli_import_says_how_many_threads_it_skipped_as_expired(
    redis_url: str, export_file: Path, tmp_path: Path, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    past = time.time_ns() // 1_000_000 - 1

    def expire(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [x | {"expires_at_ms": past, "pinned": False} if "pinned" in x else x for x in lines]

    path = str(rewrite(export_file, tmp_path / "all-past.jsonl.gz", expire))

    assert main(["import", path, "--url", redis_url, "--into-prefix", prefix]) == 0
    assert "imported 0 log entries of 0 threads" in (out := capsys.readouterr().out)
    assert "skipped 3 threads whose deadline had passed" in out
