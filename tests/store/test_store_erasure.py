"""Erasure (architecture invariant 9): purging a namespace prefix leaves nothing of it in any
key, the store logs and feeds included; everything else is untouched and replays the same."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.store.base import InvalidNamespaceError
from store_adapter import StoreAdapter

from projectors.store_domain import STORE
from streamsaver.ops.replay import Replayer


def _items(client: Any, prefix: str) -> dict[bytes, bytes]:
    keys = sorted(client.scan_iter(match=f"{prefix}:items:doc:*"))
    return {key: client.execute_command("JSON.GET", key) for key in keys}


def _everything(client: Any, prefix: str) -> bytes:
    """Every key name and every value under `prefix`, as one blob to search."""
    parts: list[bytes] = []
    for key in client.scan_iter(match=f"{prefix}:*"):
        parts.append(key)
        kind = client.type(key)
        if kind == b"stream":
            parts += [repr(entry).encode() for entry in client.xrange(key)]
        elif kind == b"ReJSON-RL":
            parts.append(client.execute_command("JSON.GET", key))
        elif kind == b"set":
            parts += sorted(client.smembers(key))
        elif kind == b"hash":
            parts.append(repr(client.hgetall(key)).encode())
    return b"\n".join(parts)


async def test_purge_leaves_nothing_of_the_prefix(store: StoreAdapter, client: Any, prefix: str) -> None:
    for n in range(6):
        await store.call("put", ("users", "alice", "facts"), f"secret{n}", {"fact": f"zebra-{n}"}, ttl=60)
        await store.call("put", ("users", "alicea"), f"k{n}", {"fact": f"kept-{n}"})
        await store.call("put", ("users", "bob"), f"k{n}", {"fact": f"bob-{n}"})
    await store.call("put", ("users", "alice"), "profile", {"name": "zebra-profile"})
    await store.call("delete", ("users", "alice", "facts"), "secret0")
    others = {k: v for k, v in _items(client, prefix).items() if b"users.alice." not in k and b"users.alice:" not in k}
    erased = await store.call("purge", ("users", "alice"))
    assert erased == 8
    blob = _everything(client, prefix)
    assert b"zebra" not in blob and b"secret" not in blob and b"profile" not in blob
    assert b'"alice"' not in blob and b"users.alice:" not in blob and b"users.alice." not in blob
    assert _items(client, prefix) == others
    assert await store.call("search", ("users", "alice")) == []
    assert len(await store.call("search", ("users", "alicea"))) == 6
    assert await store.call("purge", ("users", "alice")) == 0
    Replayer.open(client, prefix, domain=STORE).rebuild(["items"])
    assert _items(client, prefix) == others
    await store.call("put", ("users", "carol"), "k", {"v": 1})  # the log takes appends after a purge
    assert (await store.call("get", ("users", "carol"), "k")).value == {"v": 1}


async def test_purge_refuses_an_empty_prefix(store: StoreAdapter) -> None:
    with pytest.raises(InvalidNamespaceError):
        await store.call("purge", ())


def test_the_cli_purges_a_prefix(redis_url: str, client: Any, prefix: str, capsys: pytest.CaptureFixture[str]) -> None:
    from streamsaver import StreamStore
    from streamsaver.cli.main import main

    store = StreamStore(client, prefix=prefix)
    store.setup()
    store.put(("users", "alice"), "k", {"v": 1})
    store.put(("users", "bob"), "k", {"v": 2})
    assert main(["purge-store", "--url", redis_url, "--prefix", prefix, "users", "alice"]) == 0
    assert "erased 1 store log entries" in capsys.readouterr().out
    assert store.get(("users", "alice"), "k") is None and store.get(("users", "bob"), "k") is not None
