"""Values holding LangChain messages and other serde types: those parts go through the store's
serde (encrypted by an EncryptedSerializer), the plain-JSON parts stay JSON, so filters on them
work; everything reads back as it was put, also after replay."""

from __future__ import annotations

import asyncio
import datetime
import uuid

import pytest
import redis
import redis.asyncio
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from projectors.store_domain import STORE
from streamsaver import AsyncStreamStore, StreamStore
from streamsaver.errors import InvalidInputError
from streamsaver.ops.replay import Replayer

WHEN = datetime.datetime(2026, 11, 27, 14, 0, tzinfo=datetime.timezone.utc)


def _value(n: int) -> dict[str, object]:
    return {
        "user": "ada", "n": n, "tags": {"lang": "en"},
        "messages": [HumanMessage(content=f"hello {n}", id=f"h{n}"), AIMessage(content="hi", id=f"a{n}")],
        "seen": WHEN, "ref": uuid.UUID(int=n), "plain": [1, "two", None],
    }


def test_serde_parts_round_trip_and_filters_see_the_plain_parts(redis_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(redis_url)
    store = StreamStore(client, prefix=prefix)
    store.setup()
    for n in range(3):
        store.put(("chats", "ada"), f"k{n}", _value(n))
    item = store.get(("chats", "ada"), "k1")
    assert item is not None and item.value == _value(1)
    found = store.search(("chats",), filter={"n": {"$gte": 1}, "tags": {"lang": "en"}, "user": "ada"})
    assert sorted(i.key for i in found) == ["k1", "k2"] and all(i.value == _value(int(i.key[1])) for i in found)
    docs = {key: client.execute_command("JSON.GET", key) for key in client.scan_iter(f"{prefix}:items:doc:*")}
    assert all(b'"user":"ada"' in doc and b"hello" not in doc for doc in docs.values())  # messages: serde bytes
    Replayer.open(client, prefix, domain=STORE).rebuild(["items"])
    assert {key: client.execute_command("JSON.GET", key) for key in docs} == docs
    assert store.get(("chats", "ada"), "k2").value == _value(2)  # type: ignore[union-attr]


def test_an_encrypted_serde_encrypts_the_serde_parts(redis_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(redis_url)
    serde = EncryptedSerializer.from_pycryptodome_aes(key=b"0123456789abcdef")
    store = StreamStore(client, prefix=prefix, serde=serde)
    store.setup()
    store.put(("chats", "ada"), "k", {"secret": HumanMessage(content="my pin is 1234"), "n": 1})
    assert store.get(("chats", "ada"), "k").value["secret"].content == "my pin is 1234"  # type: ignore[union-attr]
    assert not [k for k in client.scan_iter(f"{prefix}:*") if client.type(k) == b"ReJSON-RL"
                and b"pin" in client.execute_command("JSON.GET", k)]
    logs = [fields for log in client.scan_iter(f"{prefix}:slog:*") for _, fields in client.xrange(log)]
    assert logs and not [f for f in logs if b"pin" in f[b"value"]]


async def test_the_async_store_refuses_a_value_the_serde_cannot_encode_alone(redis_url: str, prefix: str) -> None:
    store = AsyncStreamStore(redis.asyncio.Redis.from_url(redis_url), prefix=prefix)
    await store.setup()
    calls = [store.aput(("chats",), "ok", {"m": HumanMessage(content="fine")}),
             store.aput(("chats",), "bad", {"f": object()})]
    ok, bad = await asyncio.gather(*calls, return_exceptions=True)
    assert ok is None and isinstance(bad, InvalidInputError)
    assert (await store.aget(("chats",), "ok")).value["m"].content == "fine"  # type: ignore[union-attr]
    assert await store.aget(("chats",), "bad") is None
    with pytest.raises(InvalidInputError, match="serde"):
        StreamStore(redis.Redis.from_url(redis_url), prefix=prefix).put(("chats",), "bad", {"f": lambda: 1})
