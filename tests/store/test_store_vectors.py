"""Search by meaning: embeddings computed by the writer and logged with the item (replay never
re-embeds), KNN with the filter's terms as pre-filter, and scores as LangGraph's PostgresStore
defines them for each metric."""

from __future__ import annotations

import math
from typing import Any

import pytest
import redis
import redis.asyncio
from langgraph.store.base import PutOp

from projectors.store_domain import STORE
from streamsaver import AsyncStreamStore, StreamStore
from streamsaver.errors import InvalidInputError
from streamsaver.ops.replay import Replayer

DIMS = 8
CALLS: list[int] = []


def embed(texts: list[str]) -> list[list[float]]:
    """A deterministic embedding: letter counts folded into 8 dimensions."""
    CALLS.append(len(texts))
    vectors = []
    for text in texts:
        vector = [0.0] * DIMS
        for char in text.lower():
            if char.isalpha():
                vector[(ord(char) - 97) % DIMS] += 1.0
        vectors.append(vector)
    return vectors


def reference(metric: str, query: str, text: str) -> float:
    [q], [v] = embed([query]), embed([text])
    dot = sum(a * b for a, b in zip(q, v, strict=True))
    if metric == "cosine":
        return dot / (math.sqrt(sum(a * a for a in q)) * math.sqrt(sum(b * b for b in v)))
    if metric == "inner_product":
        return dot
    return 1 - math.sqrt(sum((a - b) ** 2 for a, b in zip(q, v, strict=True)))


class Vectors:
    """A sync or async store with a vector index, behind one async face."""

    def __init__(self, store: StreamStore | AsyncStreamStore) -> None:
        self.store = store

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if isinstance(self.store, AsyncStreamStore):
            return await getattr(self.store, "a" + name)(*args, **kwargs)
        return getattr(self.store, name)(*args, **kwargs)


async def _open(kind: str, url: str, prefix: str, index: dict[str, Any]) -> tuple[Vectors, Any]:
    if kind == "sync":
        client = redis.Redis.from_url(url)
        sync_store = StreamStore(client, prefix=prefix, index=index)  # type: ignore[arg-type]
        sync_store.setup()
        return Vectors(sync_store), client
    aclient = redis.asyncio.Redis.from_url(url)
    async_store = AsyncStreamStore(aclient, prefix=prefix, index=index)  # type: ignore[arg-type]
    await async_store.setup()
    return Vectors(async_store), aclient


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize("metric", ["cosine", "l2", "inner_product"])
async def test_scores_are_postgres_scores_per_metric(kind: str, redis_url: str, prefix: str, metric: str) -> None:
    index = {"dims": DIMS, "embed": embed, "fields": ["text"], "distance_type": metric}
    store, _ = await _open(kind, redis_url, prefix, index)
    texts = {"a": "apples and bananas", "b": "zzz yyy", "c": "banana bread"}
    for key, text in texts.items():
        await store.call("put", ("docs",), key, {"text": text})
    found = await store.call("search", ("docs",), query="apple banana", limit=10)
    expected = sorted(texts, key=lambda k: -reference(metric, "apple banana", texts[k]))
    assert [item.key for item in found] == expected
    for item in found:
        assert item.score == pytest.approx(reference(metric, "apple banana", texts[item.key]), rel=1e-5, abs=1e-5)


async def test_fields_none_embeds_the_whole_value_and_index_false_nothing(
    kind: str, redis_url: str, prefix: str
) -> None:
    store, _ = await _open(kind, redis_url, prefix, {"dims": DIMS, "embed": embed})
    await store.call("put", ("docs",), "whole", {"note": "apple"})
    await store.call("put", ("docs",), "hidden", {"note": "apple"}, index=False)
    found = await store.call("search", ("docs",), query="apple")
    assert [(item.key, item.score is None) for item in found] == [("whole", False), ("hidden", True)]
    assert {item.key for item in await store.call("search", ("docs",), filter={"note": "apple"})} == {"whole", "hidden"}


async def test_the_best_embedded_field_scores_an_item_and_filters_pre_filter(
    kind: str, redis_url: str, prefix: str
) -> None:
    store, _ = await _open(kind, redis_url, prefix, {"dims": DIMS, "embed": embed, "fields": ["title", "body"]})
    await store.call("put", ("docs",), "1", {"title": "zzzz", "body": "apple pie", "lang": "en"})
    await store.call("put", ("docs",), "2", {"title": "apple pie", "body": "zzzz", "lang": "fr"})
    await store.call("put", ("docs",), "3", {"title": "qqqq", "body": "qqqq", "lang": "en"})
    found = await store.call("search", ("docs",), query="apple pie", limit=3)
    assert [item.key for item in found][:2] in (["1", "2"], ["2", "1"])
    assert found[0].score == pytest.approx(1.0) and found[1].score == pytest.approx(1.0)
    only_en = await store.call("search", ("docs",), query="apple pie", filter={"lang": "en"}, limit=1)
    assert [item.key for item in only_en] == ["1"]  # the filter applies before the nearest are cut


async def test_replay_keeps_the_logged_vectors_and_never_re_embeds(redis_url: str, prefix: str) -> None:
    store, client = await _open("sync", redis_url, prefix, {"dims": DIMS, "embed": embed, "fields": ["text"]})
    for n in range(12):
        await store.call("put", ("docs", str(n % 3)), f"k{n}", {"text": "apple " * (n + 1) + "zz" * n})
    before = {key: client.execute_command("JSON.GET", key) for key in client.scan_iter(match=f"{prefix}:items:doc:*")}
    found = await store.call("search", ("docs",), query="apple", limit=5)
    calls = len(CALLS)
    Replayer.open(client, prefix, domain=STORE).rebuild(["items"])
    assert len(CALLS) == calls
    after = {key: client.execute_command("JSON.GET", key) for key in client.scan_iter(match=f"{prefix}:items:doc:*")}
    assert after == before
    assert await store.call("search", ("docs",), query="apple", limit=5) == found


async def test_an_embedder_of_the_wrong_dimensions_writes_nothing(kind: str, redis_url: str, prefix: str) -> None:
    store, client = await _open(kind, redis_url, prefix, {"dims": DIMS + 1, "embed": embed, "fields": ["text"]})
    with pytest.raises(InvalidInputError, match="dimensions"):
        await store.call("batch", [PutOp(("docs",), "k", {"text": "apple"})])
    keys = client.keys(f"{prefix}:*")
    if not isinstance(keys, list):
        keys = await keys
    assert not [k for k in keys if b":slog:" in k or b":items:doc:" in k]


async def test_an_hnsw_index_finds_what_flat_finds(kind: str, redis_url: str, prefix: str) -> None:
    hnsw = {"dims": DIMS, "embed": embed, "fields": ["text"], "ann_index_config": {"vector_type": "hnsw", "m": 8}}
    store, _ = await _open(kind, redis_url, prefix, hnsw)
    texts = ["apple", "banana", "cherry pie", "date", "elderberry"]
    await store.call("batch", [PutOp(("docs",), str(n), {"text": text}) for n, text in enumerate(texts)])
    found = await store.call("search", ("docs",), query="cherry", limit=2)
    assert found[0].value == {"text": "cherry pie"}
    assert len(await store.call("search", ("docs",), query="cherry", limit=2, offset=2)) == 2
