"""Hybrid retrieval: with ``text_fields`` in the index config, a search by meaning also ranks by
BM25 over those fields and fuses the two rankings by reciprocal rank fusion; ``hybrid`` switches
it per call."""

from __future__ import annotations

import pytest
from langgraph.store.base import PutOp

from streamsaver.errors import ConfigurationError, InvalidInputError
from streamsaver.store.hybrid import RRF_K
from streamsaver.store.vectors import VectorIndex
from tests.store.test_store_vectors import DIMS, _open, embed


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _flat(texts: list[str]) -> list[list[float]]:
    """Every text at one point: the vector ranking alone cannot tell items apart."""
    return [[1.0] * DIMS for _ in texts]


async def test_a_word_match_lifts_an_item_the_vectors_cannot_tell_apart(kind: str, redis_url: str, prefix: str) -> None:
    index = {"dims": DIMS, "embed": _flat, "fields": ["text"], "text_fields": ["text", "meta.tags"]}
    store, _ = await _open(kind, redis_url, prefix, index)
    values = {"a": {"text": "the weather today"}, "b": {"text": "notes", "meta": {"tags": "espresso coffee"}},
              "c": {"text": "a recipe for coffee cake"}}
    await store.call("batch", [PutOp(("docs",), key, value) for key, value in values.items()])
    plain = await store.call("search", ("docs",), query="coffee", limit=3, hybrid=False)
    assert [item.key for item in plain] == ["a", "b", "c"]  # equal distances: the stems break ties
    fused = await store.call("search", ("docs",), query="coffee", limit=3)
    assert {item.key for item in fused[:2]} == {"b", "c"} and fused[2].key == "a"
    assert fused[2].score == pytest.approx(1 / (RRF_K + 1))  # first by vectors, absent by text... one ranking
    assert all(item.score > fused[2].score for item in fused[:2])


async def test_the_fusion_keeps_filters_and_pages(kind: str, redis_url: str, prefix: str) -> None:
    index = {"dims": DIMS, "embed": embed, "fields": ["text"], "text_fields": ["text"]}
    store, _ = await _open(kind, redis_url, prefix, index)
    texts = [f"apple {'pie ' * n}{'kiwi ' * (9 - n)}" for n in range(10)]
    await store.call("batch", [PutOp(("docs",), f"k{n}", {"text": t, "n": n}) for n, t in enumerate(texts)])
    whole = await store.call("search", ("docs",), query="pie", filter={"n": {"$gte": 3}}, limit=10)
    assert sorted(item.key for item in whole) == [f"k{n}" for n in range(3, 10)]
    paged = []
    for offset in range(0, 8, 2):
        paged += await store.call("search", ("docs",), query="pie", filter={"n": {"$gte": 3}}, limit=2, offset=offset)
    assert [item.key for item in paged] == [item.key for item in whole]


async def test_the_text_ranking_is_bm25_while_rewritten_entries_await_collection(
        kind: str, redis_url: str, prefix: str) -> None:
    """Every put rewrites its item's document; until the index's collector runs, the old entries
    still count for the word statistics. The text ranking must stay BM25 all along: RediSearch's
    default TFIDF gave a word every item holds an IDF of 0 then (all text scores 0, the ranking by
    stem), and 1 after, so pages of one unchanged listing disagreed."""
    index = {"dims": DIMS, "embed": _flat, "fields": ["text"], "text_fields": ["text"]}
    store, _ = await _open(kind, redis_url, prefix, index)
    pies = {"a": 1, "b": 2, "c": 3}
    values = {key: {"text": " ".join(["pie"] * n + ["kiwi"] * (4 - n))} for key, n in pies.items()}
    for _ in range(2):
        await store.call("batch", [PutOp(("docs",), key, value) for key, value in values.items()])
    by_vectors = sorted(pies)  # one point for all: the stems break the ties
    by_text = sorted(pies, key=lambda key: -pies[key])  # same length: more "pie", better BM25
    fused = {key: 1 / (RRF_K + 1 + by_vectors.index(key)) + 1 / (RRF_K + 1 + by_text.index(key)) for key in pies}
    expected = sorted(pies, key=lambda key: (-fused[key], key))
    found = await store.call("search", ("docs",), query="pie", limit=3)
    assert [item.key for item in found] == expected
    paged = []
    for offset in range(3):
        paged += await store.call("search", ("docs",), query="pie", limit=1, offset=offset)
    assert [item.key for item in paged] == expected


async def test_hybrid_without_text_fields_is_refused(kind: str, redis_url: str, prefix: str) -> None:
    store, _ = await _open(kind, redis_url, prefix, {"dims": DIMS, "embed": embed, "fields": ["text"]})
    with pytest.raises(InvalidInputError, match="text_fields"):
        await store.call("search", ("docs",), query="pie", hybrid=True)


def test_text_fields_are_value_paths() -> None:
    with pytest.raises(ConfigurationError, match="text field"):
        VectorIndex.of({"dims": DIMS, "embed": embed, "text_fields": ["tags[*]"]})  # type: ignore[typeddict-unknown-key]
    with pytest.raises(ConfigurationError, match="text_fields"):
        VectorIndex.of({"dims": DIMS, "embed": embed, "text_fields": "text"})  # type: ignore[typeddict-unknown-key]


async def test_a_range_keeps_both_rankings_whole_however_far_its_items(kind: str, redis_url: str, prefix: str) -> None:
    """Each ranking the fusion takes is the first rows that pass the filter: the items that pass
    a range are the farthest from the query, beyond the KNN's first candidates, and the text
    ranking alone would fill the page; the KNN runs again over every item, so each item on the
    page is in both rankings."""
    index = {"dims": DIMS, "embed": embed, "fields": ["text"], "text_fields": ["text"]}
    store, _ = await _open(kind, redis_url, prefix, index)
    ops = [PutOp(("docs",), f"k{n:03d}", {"text": "apple " * (150 - n) + "kiwi " * n, "n": n}) for n in range(150)]
    await store.call("batch", ops)
    found = await store.call("search", ("docs",), query="apple", filter={"n": {"$gte": 140}}, limit=2)
    assert len(found) == 2 and all(item.value["n"] >= 140 for item in found)
    assert all(item.score > 1 / (RRF_K + 1) for item in found)  # one ranking alone gives at most 1/61
