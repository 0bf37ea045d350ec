"""Pages of a search by meaning: the items with embeddings nearest first, then the items without
one (unscored, most recently updated first), as LangGraph's stores page them; range conditions
never leave a page short while matching items remain; float16 indexes."""

from __future__ import annotations

import math
from typing import Any

import pytest
import redis
from langgraph.store.base import PutOp

from streamsaver import StreamStore
from streamsaver.errors import ConfigurationError, InvalidInputError
from tests.store.test_store_vectors import DIMS, Vectors, _open, embed


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (math.hypot(*a) * math.hypot(*b))


def _nearest(query: str, texts: dict[str, str]) -> list[str]:
    [q] = embed([query])
    return sorted(texts, key=lambda key: (-_cosine(q, embed([texts[key]])[0]), key))


async def _all_pages(store: Vectors, size: int, **search: Any) -> list[tuple[str, bool]]:
    found: list[tuple[str, bool]] = []
    for offset in range(0, 40, size):
        page = await store.call("search", ("docs",), limit=size, offset=offset, **search)
        found += [(item.key, item.score is not None) for item in page]
    return found


async def test_items_without_embeddings_follow_the_scored_ones_across_pages(
    kind: str, redis_url: str, prefix: str
) -> None:
    store, _ = await _open(kind, redis_url, prefix, {"dims": DIMS, "embed": embed, "fields": ["text"]})
    texts = {f"v{n}": "apple " * (n + 1) + "kiwi " * (5 - n) for n in range(5)}
    await store.call("batch", [PutOp(("docs",), key, {"text": text}) for key, text in texts.items()])
    for n in range(4):  # no text at the index's path, or index=False: no embedding
        await store.call("put", ("docs",), f"plain{n}", {"note": "apple"}, index=False if n % 2 else None)
    whole = await store.call("search", ("docs",), query="apple", limit=20)
    expected = [(key, True) for key in _nearest("apple", texts)] + [(f"plain{n}", False) for n in (3, 2, 1, 0)]
    assert [(item.key, item.score is not None) for item in whole] == expected
    for size in (1, 2, 3, 4):
        assert await _all_pages(store, size, query="apple") == expected
    only_plain = await store.call("search", ("docs",), query="apple", filter={"note": "apple"}, limit=3)
    assert [item.key for item in only_plain] == ["plain3", "plain2", "plain1"]


async def test_a_range_condition_never_leaves_a_page_short(kind: str, redis_url: str, prefix: str) -> None:
    store, _ = await _open(kind, redis_url, prefix, {"dims": DIMS, "embed": embed, "fields": ["text"]})
    texts = {f"k{n:02d}": "apple " * (40 - n) + "kiwi " * n for n in range(40)}
    ops = [PutOp(("docs",), key, {"text": text, "n": int(key[1:])}) for key, text in texts.items()]
    await store.call("batch", ops)
    # the items that pass are the farthest from the query: a KNN of ten times the page's reach misses them
    far = {key: text for key, text in texts.items() if int(key[1:]) >= 37}
    found = await store.call("search", ("docs",), query="apple", filter={"n": {"$gte": 37}}, limit=2)
    assert [item.key for item in found] == _nearest("apple", far)[:2]
    assert all(item.score is not None for item in found)
    pages = await _all_pages(store, 2, query="apple", filter={"n": {"$gte": 37}})
    assert pages == [(key, True) for key in _nearest("apple", far)]


async def test_a_float16_index_stores_and_finds_float16_numbers(kind: str, redis_url: str, prefix: str) -> None:
    config = {"dims": DIMS, "embed": embed, "fields": ["text"],
              "ann_index_config": {"vector_type": "hnsw", "datatype": "float16"}}
    store, _ = await _open(kind, redis_url, prefix, config)
    texts = {"a": "apple apple banana", "b": "zzz yyy", "c": "banana bread"}
    await store.call("batch", [PutOp(("docs",), key, {"text": text}) for key, text in texts.items()])
    found = await store.call("search", ("docs",), query="apple", limit=3)
    assert [item.key for item in found] == _nearest("apple", texts)
    [q] = embed(["apple"])
    for item in found:
        assert item.score == pytest.approx(_cosine(q, embed([texts[item.key]])[0]), abs=2e-3)


def test_vectors_are_logged_at_the_index_precision(redis_url: str, prefix: str) -> None:
    thirds = lambda texts: [[1 / 3] * DIMS for _ in texts]  # noqa: E731
    client = redis.Redis.from_url(redis_url)
    store = StreamStore(client, prefix=prefix, index={"dims": DIMS, "embed": thirds})  # type: ignore[typeddict-item]
    store.setup()
    store.put(("docs",), "a", {"text": "x"})
    vector = b"[" + b",".join([b"0.33333334"] * DIMS) + b"]"  # float32's shortest decimal
    [document] = [client.execute_command("JSON.GET", key, "$.i.e") for key in client.scan_iter(f"{prefix}:items:doc:*")]
    assert document == b"[[" + vector + b"]]"
    [[(_, entry)]] = [client.xrange(log) for log in client.scan_iter(f"{prefix}:slog:*")]
    assert entry[b"vectors"] == b"[" + vector + b"]"


def test_bad_vector_types_and_numbers_are_refused(redis_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(redis_url)
    with pytest.raises(ConfigurationError, match="datatype"):
        StreamStore(client, prefix=prefix, index={"dims": DIMS, "embed": embed,  # type: ignore[typeddict-item]
                                                  "ann_index_config": {"datatype": "int8"}})
    nan = lambda texts: [[math.nan] * DIMS for _ in texts]  # noqa: E731
    store = StreamStore(client, prefix=prefix, index={"dims": DIMS, "embed": nan})  # type: ignore[typeddict-item]
    store.setup()
    with pytest.raises(InvalidInputError, match="not finite"):
        store.put(("docs",), "a", {"text": "x"})
    assert not list(client.scan_iter(f"{prefix}:slog:*"))
