"""Embeddings carry the model that computed them, in the log and the item; re-embedding with a
new model is an explicit, logged operation that keeps each item's value, updated_at and
deadline, and a replay after it gives the same items without embedding anything."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import redis
from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp

from projectors.store_domain import STORE
from streamsaver import AsyncStreamStore, StreamStore
from streamsaver.errors import ConfigurationError
from streamsaver.log.items import item_from_fields
from streamsaver.ops.replay import Replayer

DIMS = 4


class Counting(Embeddings):
    """A named deterministic embedding that counts the texts it embeds."""

    def __init__(self, model: str, weight: float) -> None:
        self.model, self.weight, self.texts = model, weight, 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.texts += len(texts)
        return [[self.weight, float(len(text)), 1.0, float(text.count("a"))] for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def _store(client: redis.Redis, prefix: str, embed: Embeddings) -> StreamStore:
    store = StreamStore(client, prefix=prefix, index={"dims": DIMS, "embed": embed, "fields": ["text"]})
    store.setup()
    return store


def _docs(client: redis.Redis, prefix: str) -> dict[bytes, Any]:
    return {key: client.execute_command("JSON.GET", key) for key in client.scan_iter(f"{prefix}:items:doc:*")}


def test_puts_log_the_model_and_reembed_moves_items_to_a_new_one(
    redis_url: str, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    client = redis.Redis.from_url(redis_url)
    old = _store(client, prefix, Counting("old-model", 1.0))
    old.put(("users", "ada"), "tea", {"text": "green tea"}, ttl=30)
    old.put(("users", "ada"), "dog", {"text": "a dog", "title": "rex"}, index=["title"])
    old.put(("users", "ada"), "plain", {"text": "no vectors"}, index=False)
    old.put(("users", "bob"), "cat", {"text": "a cat"})
    events = [item_from_fields(f) for log in client.scan_iter(f"{prefix}:slog:*") for _, f in client.xrange(log)]
    assert {(e.key, e.model, e.paths) for e in events if e.namespace == ("users", "ada")} == {  # type: ignore[union-attr]
        ("tea", "old-model", None), ("dog", "old-model", ("title",)), ("plain", "", None)}
    before = {item.key: item for item in old.search(("users",), limit=10)}
    tea_doc = next(key for key in client.scan_iter(f"{prefix}:items:doc:*") if key.endswith(b":tea"))
    deadline = client.pexpiretime(tea_doc)

    new_embed = Counting("new-model", 2.0)
    new = _store(client, prefix, new_embed)
    with caplog.at_level(logging.INFO, logger="streamsaver.store"):
        assert new.reembed(("users", "ada")) == 2  # tea and dog; plain has no vectors; bob is elsewhere
    assert "re-embedded 2 items" in caplog.text and "new-model" in caplog.text
    assert new_embed.texts == 2  # "green tea" and "rex": each at the paths it was embedded at
    assert new.reembed(("users", "ada")) == 0  # already the store's model
    after = {item.key: item for item in new.search(("users",), limit=10, refresh_ttl=False)}  # a search renews TTLs
    assert {k: (i.value, i.created_at, i.updated_at) for k, i in after.items()} == {
        k: (i.value, i.created_at, i.updated_at) for k, i in before.items()}
    assert client.pexpiretime(tea_doc) == deadline
    models = {doc.rsplit(b":", 1)[1]: body for doc, body in _docs(client, prefix).items()}
    assert b'"m":"new-model"' in models[b"tea"] and b'"m":"old-model"' in models[b"cat"]
    assert new.reembed(everything=True) == 3  # the whole store, even items of the store's model

    docs, texts = _docs(client, prefix), new_embed.texts
    Replayer.open(client, prefix, domain=STORE).rebuild(["items"])
    assert _docs(client, prefix) == docs and new_embed.texts == texts  # replay never re-embeds


async def test_the_async_store_reembeds_and_a_store_without_index_refuses(redis_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(redis_url)
    _store(client, prefix, Counting("old-model", 1.0)).batch(
        [PutOp(("docs",), str(n), {"text": "a" * n}) for n in range(1, 4)])
    store = AsyncStreamStore(redis.asyncio.Redis.from_url(redis_url), prefix=prefix,
                             index={"dims": DIMS, "embed": Counting("new-model", 3.0), "fields": ["text"]})
    await store.setup()
    assert await store.areembed() == 3
    found = await store.asearch(("docs",), query="aaa", limit=1)
    assert found[0].key == "3"
    with pytest.raises(ConfigurationError, match="index"):
        StreamStore(client, prefix=prefix).reembed()


class Racing(Counting):
    """An embedding whose first call lets another writer update an item (between the
    re-embedding's read and its append)."""

    def __init__(self, race: Any) -> None:
        super().__init__("new-model", 2.0)
        self.race = race

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.race is not None:
            race, self.race = self.race, None
            race()
        return super().embed_documents(texts)


def test_an_item_written_during_a_reembed_is_not_overwritten(redis_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(redis_url)
    old = _store(client, prefix, Counting("old-model", 1.0))
    old.put(("docs",), "k", {"text": "first"})
    new = _store(client, prefix, Racing(lambda: old.put(("docs",), "k", {"text": "second"})))
    assert new.reembed() == 1  # the page was refused (STALE), read again, and re-embedded
    item = new.get(("docs",), "k")
    assert item is not None and item.value == {"text": "second"}
    [doc] = _docs(client, prefix).values()
    assert b'"m":"new-model"' in doc
