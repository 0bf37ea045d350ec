"""The BaseStore contract on StreamStore and AsyncStreamStore: items, upserts, round trips,
label-exact namespaces, filters applied before the page is cut, list_namespaces, bad input."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, ListNamespacesOp, MatchCondition, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore
from store_adapter import StoreAdapter

from streamsaver.errors import InvalidInputError


async def test_put_get_upsert_delete(store: StoreAdapter) -> None:
    await store.call("put", ("users", "alice"), "profile", {"name": "Alice", "tags": ["a", "b"]})
    first = await store.call("get", ("users", "alice"), "profile")
    assert first.value == {"name": "Alice", "tags": ["a", "b"]}
    assert first.namespace == ("users", "alice") and first.key == "profile"
    await asyncio.sleep(0.002)
    await store.call("put", ("users", "alice"), "profile", {"name": "Al"})
    second = await store.call("get", ("users", "alice"), "profile")
    assert second.value == {"name": "Al"}
    assert second.created_at == first.created_at  # an upsert keeps created_at
    assert second.updated_at > first.updated_at
    await store.call("delete", ("users", "alice"), "profile")
    assert await store.call("get", ("users", "alice"), "profile") is None
    assert await store.call("get", ("users", "nobody"), "profile") is None


async def test_put_and_get_are_one_round_trip(store: StoreAdapter) -> None:
    await store.call("put", ("warm",), "up", {"a": 1})
    await store.call("get", ("warm",), "up")
    store.counter.reset()
    await store.call("put", ("users", "bob"), "k", {"a": 1})
    assert store.counter.trips == 1
    store.counter.reset()
    await store.call("get", ("users", "bob"), "k")
    assert store.counter.trips == 1


async def test_a_mixed_batch_is_one_round_trip_with_results_in_op_order(store: StoreAdapter) -> None:
    await store.call("put", ("warm",), "up", {"a": 1})
    store.counter.reset()
    ops = [
        PutOp(("alice", "facts"), "1", {"v": 1}),
        PutOp(("bob", "facts"), "2", {"v": 2}),  # another partition
        GetOp(("alice", "facts"), "1"),
        SearchOp(("bob",), None, 10, 0),
        ListNamespacesOp((MatchCondition("prefix", ("alice",)),), None, 10, 0),
        PutOp(("carol",), "3", {"v": 3}),
    ]
    results = await store.call("batch", ops)
    assert store.counter.trips == 1
    assert results[0] is None and results[1] is None and results[5] is None
    assert results[2].value == {"v": 1}
    assert [item.key for item in results[3]] == ["2"]
    assert results[4] == [("alice", "facts")]


async def test_namespaces_match_label_by_label(store: StoreAdapter) -> None:
    await store.call("put", ("alice",), "a", {"who": "alice"})
    await store.call("put", ("malice",), "m", {"who": "malice"})
    await store.call("put", ("alice2", "x"), "b", {"who": "alice2"})
    await store.call("put", ("al", "ice"), "c", {"who": "al/ice"})
    found = await store.call("search", ("alice",))
    assert [item.key for item in found] == ["a"]
    assert await store.call("list_namespaces", prefix=("alice",)) == [("alice",)]
    assert await store.call("list_namespaces", suffix=("ice",)) == [("al", "ice")]
    assert len(await store.call("search", ())) == 4  # the empty prefix is everything


FILTERS: list[dict[str, Any]] = [
    {"kind": "fact"},
    {"n": {"$gt": 10}},
    {"n": {"$gte": 10, "$lt": 20}},
    {"n": {"$lte": 3}},
    {"kind": {"$ne": "fact"}},
    {"kind": {"$in": ["fact", "pref"]}},
    {"meta": {"lang": "en"}},
    {"meta": {"score": {"$gt": 0.5}}},
    {"kind": "fact", "n": {"$lt": 15}},
    {"tags": ["x", "y"]},
]


def _holds(value: Any, condition: Any) -> bool:
    """The reference: LangGraph's InMemoryStore comparison, with $in, and ranges false on a
    value that is missing or not a number (where InMemoryStore raises)."""
    if isinstance(condition, dict) and any(k.startswith("$") for k in condition):
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        checks = {
            "$eq": lambda x: value == x, "$ne": lambda x: value != x, "$in": lambda x: value in x,
            "$gt": lambda x: number and value > x, "$gte": lambda x: number and value >= x,
            "$lt": lambda x: number and value < x, "$lte": lambda x: number and value <= x,
        }
        return all(checks[op](operand) for op, operand in condition.items())
    if isinstance(condition, dict):
        return isinstance(value, dict) and all(_holds(value.get(k), c) for k, c in condition.items())
    return bool(value == condition)


def _value(n: int) -> dict[str, Any]:
    kind = ("fact", "pref", "note")[n % 3]
    meta = {"lang": "en" if n % 2 else "fr", "score": n / 30}
    return {"n": n, "kind": kind, "meta": meta, "tags": ["x", "y"][: n % 3]}


@pytest.mark.parametrize("filter", FILTERS, ids=[str(f) for f in FILTERS])
async def test_filters_apply_before_the_page_is_cut(store: StoreAdapter, filter: dict[str, Any]) -> None:
    items = [(("docs", f"u{n % 4}"), f"k{n}", _value(n)) for n in range(30)]
    await store.call("batch", [PutOp(ns, key, value) for ns, key, value in items])
    expected = {key for _, key, value in items if _holds(value, filter)}
    assert expected
    pages: list[str] = []
    for offset in range(0, 40, 4):
        page = [item.key for item in await store.call("search", ("docs",), filter=filter, limit=4, offset=offset)]
        assert len(page) == min(4, max(0, len(expected) - offset))  # never short
        pages += page
    assert len(pages) == len(set(pages)) and set(pages) == expected


async def test_a_value_that_is_not_a_number_never_fails_a_range_filter(store: StoreAdapter) -> None:
    await store.call("put", ("docs",), "text", {"n": "many"})
    await store.call("put", ("docs",), "none", {"other": 1})
    await store.call("put", ("docs",), "num", {"n": 5})
    assert [item.key for item in await store.call("search", ("docs",), filter={"n": {"$gt": 1}})] == ["num"]


async def test_list_namespaces_matches_the_in_memory_store_and_pages_equal_the_listing(store: StoreAdapter) -> None:
    memory = InMemoryStore()
    namespaces = [("a",), ("a", "b"), ("a", "b", "c"), ("a", "x", "c"), ("b", "b"), ("c", "d", "e", "f")]
    for ns in namespaces:
        await store.call("put", ns, "k", {"v": 1})
        memory.put(ns, "k", {"v": 1})
    cases: list[dict[str, Any]] = [
        {}, {"prefix": ("a",)}, {"prefix": ("a", "*", "c")}, {"suffix": ("c",)}, {"suffix": ("*", "b")},
        {"max_depth": 1}, {"max_depth": 2, "prefix": ("a",)}, {"prefix": ("*",), "suffix": ("c",)},
    ]
    for case in cases:
        full = await store.call("list_namespaces", **case)
        assert full == memory.list_namespaces(**case), case
        paged: list[tuple[str, ...]] = []
        for offset in range(0, 8, 2):
            paged += await store.call("list_namespaces", **case, limit=2, offset=offset)
        assert paged == full, case


BAD_OPS: list[Any] = [
    PutOp(("a.b",), "k", {"v": 1}),
    PutOp(("langgraph", "x"), "k", {"v": 1}),
    PutOp(("",), "k", {"v": 1}),
    PutOp((), "k", {"v": 1}),
    PutOp(("ok",), "k", ["not", "a", "dict"]),  # type: ignore[arg-type]
    PutOp(("ok",), "k", {"when": object()}),
    PutOp(("ok",), 7, {"v": 1}),  # type: ignore[arg-type]
    SearchOp(("ok",), {"v": {"$like": 1}}, 10, 0),
    SearchOp(("ok",), {"v": {"$gt": "ten"}}, 10, 0),
    SearchOp(("a.b",), None, 10, 0),
    GetOp((1,), "k"),  # type: ignore[arg-type]
    ListNamespacesOp((MatchCondition("prefix", ("x.y",)),), None, 10, 0),
]


@pytest.mark.parametrize("bad", BAD_OPS, ids=[repr(op)[:60] for op in BAD_OPS])
async def test_bad_input_changes_nothing(store: StoreAdapter, bad: Any, client: Any, prefix: str) -> None:
    before = sorted(client.keys(f"{prefix}:*"))
    with pytest.raises((InvalidNamespaceError, InvalidInputError, ValueError)):
        await store.call("batch", [PutOp(("good",), "k", {"v": 1}), bad])
    assert sorted(client.keys(f"{prefix}:*")) == before
    assert await store.call("get", ("good",), "k") is None


async def test_the_public_methods_refuse_invalid_labels(store: StoreAdapter) -> None:
    with pytest.raises(InvalidNamespaceError, match="label"):
        await store.call("put", ("a.b",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError, match="label"):
        await store.call("search", ("x.y",))
    with pytest.raises(InvalidNamespaceError, match="langgraph"):
        await store.call("get", ("langgraph",), "k")
