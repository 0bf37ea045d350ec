"""``streamsaver migrate-store --from redis``: a langgraph-checkpoint-redis RedisStore's items
(several namespaces, more than a page, one with a TTL) copied by the real command into a
StreamStore, embedded by the index the command is given, resumable, checked item by item."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from streamsaver.cli.main import main
from streamsaver.memory.sync import StreamStore
from streamsaver.ops.store_history import store_history


def embed(texts: list[str]) -> list[list[float]]:
    """A deterministic embedder: how many a, e, i, o each text holds."""
    return [[float(t.count(c)) + 0.1 for c in "aeio"] for t in texts]


INDEX = {"dims": 4, "embed": embed, "fields": ["text"]}


@pytest.fixture
def redis_store(redis_url: str, prefix: str) -> Iterator[tuple[Any, list[str]]]:
    from langgraph.store.redis import RedisStore

    options = ["--store-prefix", f"{prefix}-peer", "--vector-prefix", f"{prefix}-peervec"]
    with RedisStore.from_conn_string(redis_url, store_prefix=f"{prefix}-peer", vector_prefix=f"{prefix}-peervec",
                                     ttl={"default_ttl": None}) as store:
        store.setup()
        yield store, options
        store.store_index.delete(drop=True)


def _fill(store: Any) -> dict[tuple[tuple[str, ...], str], Any]:
    items = {}
    for n in range(230):
        namespace = ("users", f"u{n % 7}", "memories") if n % 2 else ("docs", f"d{n % 3}")
        value = {"text": f"note {n} about a pear" if n % 5 else f"idea {n}", "n": n, "tags": ["x", n % 4]}
        store.put(namespace, f"k{n}", value)
        items[namespace, f"k{n}"] = value
    store.put(("short",), "lived", {"text": "soon gone"}, ttl=30)
    items[("short",), "lived"] = {"text": "soon gone"}
    return items


def test_every_item_is_copied_embedded_and_checked_and_a_rerun_copies_nothing(
    redis_store: tuple[Any, list[str]], client: redis.Redis, prefix: str, redis_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source, options = redis_store
    items = _fill(source)
    argv = ["migrate-store", "--from", "redis", redis_url, *options, "--index", "test_migrate_store:INDEX",
            "--url", redis_url, "--prefix", prefix, "--json"]

    code = main(argv)
    first = json.loads(capsys.readouterr().out)
    code_again = main(argv)
    again = json.loads(capsys.readouterr().out)

    assert code == 0 and first == {"items": 231, "copied": 231, "skipped": 0, "ok": True, "mismatches": []}
    assert code_again == 0 and again["copied"] == 0 and again["skipped"] == 231
    target = StreamStore(client, prefix=prefix, index=INDEX)  # type: ignore[arg-type]
    for (namespace, key), value in items.items():
        item = target.get(namespace, key)
        assert item is not None and item.value == value
    found = target.search(("users",), query="pear pear", limit=3)
    assert len(found) == 3 and all(hit.score is not None for hit in found)
    ttls = [client.pttl(k) for k in client.scan_iter(match=f"{prefix}*", count=10_000)]
    assert any(0 < t <= 30 * 60_000 for t in ttls)  # the item with a TTL kept a deadline
    assert {row.writer for row in store_history(client, prefix)} == {"streamsaver migrate-store"}


def test_a_copy_changed_since_is_put_again_and_help_explains(
    redis_store: tuple[Any, list[str]], client: redis.Redis, prefix: str, redis_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source, options = redis_store
    source.put(("a",), "k", {"v": 1})
    argv = ["migrate-store", "--from", "redis", redis_url, *options, "--url", redis_url, "--prefix", prefix]
    assert main(argv) == 0
    capsys.readouterr()
    source.put(("a",), "k", {"v": 2})

    assert main(argv) == 0
    assert "copied 1, 0 already there" in capsys.readouterr().out
    item = StreamStore(client, prefix=prefix).get(("a",), "k")
    assert item is not None and item.value == {"v": 2}
    assert main(["migrate-store", "--help"]) == 0
    assert "IndexConfig" in capsys.readouterr().out


def test_contradicting_index_options_are_a_usage_error(
    prefix: str, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["migrate-store", "--from", "redis", redis_url, "--url", redis_url, "--prefix", prefix]

    assert main([*base, "--index", "test_migrate_store:INDEX", "--dims", "4", "--embed", "x:y"]) == 2
    assert main([*base, "--dims", "4"]) == 2
    assert main([*base, "--index", "test_migrate_store:embed"]) == 2
    assert "not a dict" in capsys.readouterr().err
