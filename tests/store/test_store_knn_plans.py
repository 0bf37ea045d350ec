"""How a search by meaning runs its filter: while the search's shape is not known to be
selective, a bare KNN whose candidates the filter checks (a KNN with a pre-filter most items
pass costs RediSearch several times a bare one); a short page hands over to the pre-filtered
KNN, and the shape is remembered. Either way the page is exact: the nearest items that pass,
pages never short."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.store.base import PutOp, SearchOp

from streamsaver.store.core import StoreCore
from streamsaver.store.postfilter import RETRY_AFTER, RETRY_FIRST, SelectivityMemory, candidate_filter, shape
from streamsaver.store.vectors import VectorIndex
from tests.store.test_store_vector_pages import _nearest
from tests.store.test_store_vectors import DIMS, Vectors, _open, embed

INDEX = {"dims": DIMS, "embed": embed, "fields": ["text"]}


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _text(n: int) -> str:
    return "apple " * (61 - n) + "kiwi " * n


async def _paged(store: Vectors, prefix: tuple[str, ...], size: int, pages: int, **search: Any) -> list[str]:
    found: list[str] = []
    for offset in range(0, size * pages, size):
        found += [item.key for item in await store.call("search", prefix, limit=size, offset=offset, **search)]
    return found


async def test_a_filter_most_items_pass_checks_a_bare_knns_candidates_exactly(
        kind: str, redis_url: str, prefix: str) -> None:
    store, _ = await _open(kind, redis_url, prefix, INDEX)
    values = {f"k{n:02d}": {"text": _text(n), "n": n, "kind": "even" if n % 2 == 0 else "odd"} for n in range(60)}
    await store.call("batch", [PutOp(("docs", f"u{n % 4}"), key, value) for n, (key, value) in enumerate(
        values.items())])
    searches: list[tuple[dict[str, Any] | None, Any]] = [
        (None, lambda v: True),
        ({"kind": "even"}, lambda v: v["kind"] == "even"),
        ({"n": {"$ne": 7}}, lambda v: v["n"] != 7),
        ({"n": {"$in": list(range(0, 60, 3))}}, lambda v: v["n"] % 3 == 0),
        ({"kind": "odd", "n": {"$ne": 1}}, lambda v: v["kind"] == "odd" and v["n"] != 1),
    ]
    for filter, passes in searches:
        expected = _nearest("apple", {key: v["text"] for key, v in values.items() if passes(v)})
        assert await _paged(store, ("docs",), 5, 3, query="apple", filter=filter) == expected[:15]
        core = store.store.core
        assert shape(SearchOp(("docs",), filter)) not in core.selectivity  # every page came from the bare KNN


async def test_a_selective_prefix_hands_over_to_the_prefiltered_knn_and_its_shape_is_remembered(
        kind: str, redis_url: str, prefix: str) -> None:
    store, _ = await _open(kind, redis_url, prefix, INDEX)
    near = {f"b{n:02d}": _text(n) for n in range(50)}  # nearest the query: every bare KNN candidate
    far = {f"s{n}": "kiwi " * 20 + "apple " * n for n in range(6)}
    await store.call("batch", [PutOp(("docs", "big"), key, {"text": text}) for key, text in near.items()])
    await store.call("batch", [PutOp(("docs", "small"), key, {"text": text}) for key, text in far.items()])
    core = store.store.core
    assert shape(SearchOp(("docs", "small"))) not in core.selectivity
    assert await _paged(store, ("docs", "small"), 2, 4, query="apple") == _nearest("apple", far)
    assert shape(SearchOp(("docs", "other"))) in core.selectivity  # a namespace of that depth is selective
    found = await store.call("search", ("docs", "big"), query="apple", limit=4)
    assert [item.key for item in found] == _nearest("apple", near)[:4]


def test_ranges_and_an_empty_in_keep_the_prefiltered_plan() -> None:
    assert candidate_filter(SearchOp(("a",), {"n": {"$gt": 1}})) is None
    assert candidate_filter(SearchOp(("a",), {"n": {"$in": []}})) is None
    assert candidate_filter(SearchOp(("a",), limit=90, offset=20)) is None  # 1,100 candidates: too deep
    assert candidate_filter(SearchOp(("a",), limit=90, offset=10)) is not None
    [clause, test] = candidate_filter(SearchOp(("a b", "c"))) or []
    assert clause == "FILTER" and test == '(@n == "a%20b.c" || startswith(@n, "a%20b.c."))'


def test_a_selective_shape_takes_the_prefiltered_plan_for_a_while_growing_while_it_stays_selective() -> None:
    memory, users = SelectivityMemory(), shape(SearchOp(("users", "alice")))

    def prefiltered_in_a_row() -> int:
        count = 0
        while not memory.try_bare(users):
            count += 1
        return count

    assert memory.try_bare(users)
    memory.selective(users)
    assert prefiltered_in_a_row() == RETRY_FIRST
    memory.selective(users)  # short again: twice as long
    assert prefiltered_in_a_row() == RETRY_FIRST * 2
    for _ in range(10):
        memory.selective(users)
    assert prefiltered_in_a_row() == RETRY_AFTER
    memory.selective(users)
    memory.filled(users)  # a bare KNN filled its page (another thread's): forgotten
    assert users not in memory and memory.try_bare(users)


@pytest.mark.parametrize(("vector_type", "bare_first"), [("flat", True), ("hnsw", False)])
def test_a_flat_index_tries_the_bare_knn_first_and_hnsw_keeps_the_prefiltered_plan(
        vector_type: str, bare_first: bool) -> None:
    index = VectorIndex.of({**INDEX, "ann_index_config": {"vector_type": vector_type}})  # type: ignore[typeddict-item]
    core = StoreCore("plans", vectors=index)
    ops = [SearchOp(("users",), query="q"), SearchOp((), query="q")]
    searches = core.knn_searches(ops, {0: b"v", 1: b"v"})
    assert (searches[0].postfilter is not None) is bare_first
    assert searches[1].postfilter is None  # no prefix, no filter: the KNN is bare already
