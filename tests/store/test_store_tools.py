"""The log's tools on the store: verify reports a damaged item (CLI exit 1), replay repairs it."""

from __future__ import annotations

from typing import Any

import pytest

from projectors.store_domain import STORE
from streamsaver import StreamStore
from streamsaver.cli.main import main
from streamsaver.ops.replay import Replayer
from streamsaver.ops.verify import verify


@pytest.fixture
def sync_store(client: Any, prefix: str) -> StreamStore:
    store = StreamStore(client, prefix=prefix)
    store.setup()
    for n in range(5):
        store.put(("users", f"u{n}"), "profile", {"n": n, "tags": ["a", "b"]})
    store.delete(("users", "u4"), "profile")
    return store


def test_verify_reports_a_damaged_item_and_replay_repairs_it(
    sync_store: StreamStore, client: Any, prefix: str, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert verify(client, prefix, domain=STORE).matches
    assert main(["verify", "--url", redis_url, "--prefix", prefix]) == 0
    [doc] = client.scan_iter(match=f"{prefix}:items:doc:*u2:profile")
    client.execute_command("JSON.SET", doc, "$.i.v.n", "99")
    capsys.readouterr()
    report = verify(client, prefix, domain=STORE)
    assert not report.matches and report.different == 1
    assert report.differences[0].key == doc.decode() and "$.i.v.n" in report.differences[0].detail
    assert main(["verify", "--url", redis_url, "--prefix", prefix]) == 1
    out = capsys.readouterr().out
    assert "store partitions" in out and doc.decode() in out and "DIFFER" in out
    Replayer.open(client, prefix, domain=STORE).rebuild(["items"])
    assert verify(client, prefix, domain=STORE).matches
    assert sync_store.get(("users", "u2"), "profile").value["n"] == 2  # type: ignore[union-attr]
    assert main(["verify", "--url", redis_url, "--prefix", prefix]) == 0


def _items(client: Any, prefix: str) -> dict[bytes, bytes]:
    keys = sorted(client.scan_iter(match=f"{prefix}:items:*"))
    return {key[len(prefix) :]: _content(client, key) for key in keys}


def _content(client: Any, key: bytes) -> Any:
    kind = client.type(key)
    if kind == b"hash":  # the namespace registry's counts
        return sorted(client.hgetall(key).items())
    if kind == b"zset":  # and its expiring stems
        return client.zrange(key, 0, -1, withscores=True)
    return sorted(client.smembers(key)) if kind == b"set" else client.execute_command("JSON.GET", key)


def test_export_and_import_carry_the_store_logs(client: Any, prefix: str, tmp_path: Any) -> None:
    from langgraph.checkpoint.base import empty_checkpoint

    from streamsaver import StreamSaver
    from streamsaver.ops.transfer import export_logs, import_logs

    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    config = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    saver.put(config, empty_checkpoint(), {"source": "input", "step": 0}, {})  # type: ignore[arg-type]
    store = StreamStore(client, prefix=prefix)
    store.setup()
    for n in range(7):
        store.put((f"user{n % 3}", "facts"), f"k{n % 4}", {"n": n}, ttl=None)
    store.delete(("user1", "facts"), "k1")
    path = tmp_path / "logs.jsonl.gz"
    stats = export_logs(client, prefix, path)
    assert stats.entries == 1 + 8
    copy = f"{prefix}-copy"
    imported = import_logs(client, path, prefix=copy)
    assert imported.replayed == 9
    assert _items(client, copy) == _items(client, prefix) and _items(client, prefix)
    other = StreamStore(client, prefix=copy)
    assert other.search(("user0",)) == store.search(("user0",))
    assert StreamSaver(client, prefix=copy).get_tuple(config) is not None
    assert verify(client, copy, domain=STORE).matches


def test_a_version_2_file_still_imports(client: Any, prefix: str, tmp_path: Any) -> None:
    import gzip

    import orjson
    from langgraph.checkpoint.base import empty_checkpoint

    from streamsaver import StreamSaver
    from streamsaver.ops.transfer import export_logs, import_logs

    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    config = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    saver.put(config, empty_checkpoint(), {"source": "input", "step": 0}, {})  # type: ignore[arg-type]
    path, old = tmp_path / "new.jsonl.gz", tmp_path / "old.jsonl.gz"
    export_logs(client, prefix, path)
    lines = gzip.decompress(path.read_bytes()).splitlines(keepends=True)
    header = orjson.loads(lines[0]) | {"version": 2}
    old.write_bytes(gzip.compress(b"".join([orjson.dumps(header) + b"\n", *lines[1:]])))
    assert import_logs(client, old, prefix=f"{prefix}-old").entries == 1
    assert StreamSaver(client, prefix=f"{prefix}-old").get_tuple(config) is not None


def test_a_subscriber_follows_the_store_feeds(client: Any, prefix: str) -> None:
    from streamsaver import Subscriber
    from streamsaver.feeds.store_event import StoreFeedEvent

    store = StreamStore(client, prefix=prefix)
    store.setup()
    store.put(("users", "alice"), "lang", {"lang": "en"})
    store.put(("users", "bob"), "lang", {"lang": "fr"})
    store.delete(("users", "alice"), "lang")
    seen: list[tuple[str, Any, Any, Any]] = []

    def audit(event: StoreFeedEvent) -> None:
        seen.append((event.type, event.namespace, event.key, event.value()))

    Subscriber(client, "audit", audit, prefix=prefix, domain="store").run_burst()
    assert sorted(seen, key=repr) == sorted([
        ("ItemPut", ("users", "alice"), "lang", {"lang": "en"}),
        ("ItemPut", ("users", "bob"), "lang", {"lang": "fr"}),
        ("ItemDeleted", ("users", "alice"), "lang", None),
    ], key=repr)
    alice = [s for s in seen if s[1] == ("users", "alice")]
    assert [s[0] for s in alice] == ["ItemPut", "ItemDeleted"]  # feed order within a partition
    store.put(("users", "carol"), "k", {"v": 1})
    prefetched: list[Any] = []
    Subscriber(client, "audit", lambda e: prefetched.append(e.payload()), prefix=prefix, domain="store",
               types=["ItemPut"], prefetch=True).run_burst()
    assert [(p["namespace"], p["key"], p["value"]) for p in prefetched] == [(("users", "carol"), "k", {"v": 1})]
    checkpoint_events: list[Any] = []
    Subscriber(client, "audit", checkpoint_events.append, prefix=prefix).run_burst()
    assert checkpoint_events == []  # the checkpoint feeds hold none of the store's events


async def test_an_async_subscriber_reads_store_values(redis_url: str, client: Any, prefix: str) -> None:
    import redis.asyncio

    from streamsaver import Subscriber

    store = StreamStore(client, prefix=prefix)
    store.setup()
    store.put(("users", "dora"), "k", {"v": 2})
    values: list[Any] = []

    async def audit(event: Any) -> None:
        values.append(await event.avalue())

    aclient = redis.asyncio.Redis.from_url(redis_url)
    try:
        await Subscriber(aclient, "audit", audit, prefix=prefix, domain="store").async_run_burst()
    finally:
        await aclient.aclose()
    assert values == [{"v": 2}]
