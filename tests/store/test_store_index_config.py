"""A store's setup compares its index config with the deployment's items index: an index made
without vectors or text fields, or with other vectors, is not changed under its items; the
setup raises `IndexConfigMismatchError` saying what to run, and following it gives a store
that finds its items by meaning."""

from __future__ import annotations

import pytest
import redis

from streamsaver import StreamStore
from streamsaver.errors import IndexConfigMismatchError, IndexNotReadyError
from tests.store.test_store_vectors import DIMS, embed

VECTORS = {"dims": DIMS, "embed": embed, "fields": ["text"]}


def _store(client: redis.Redis, prefix: str, index: dict[str, object] | None) -> StreamStore:
    return StreamStore(client, prefix=prefix, index=index)  # type: ignore[arg-type]


def _set_up(store: StreamStore) -> None:
    """`setup()`, called again while it says a new index is still indexing, as its error asks: a
    new index scans the whole keyspace, and the suite's shared server holds every other test's keys."""
    for attempt in range(10):
        try:
            store.setup()
        except IndexNotReadyError:
            if attempt == 9:
                raise
        else:
            break


@pytest.mark.parametrize("later", [
    VECTORS,
    VECTORS | {"text_fields": ["text"]},
    VECTORS | {"dims": DIMS * 2},
    VECTORS | {"distance_type": "l2"},
    VECTORS | {"ann_index_config": {"vector_type": "hnsw"}},
    VECTORS | {"ann_index_config": {"datatype": "float16"}},
])
def test_a_setup_with_another_index_config_is_refused_and_says_what_to_run(
        redis_url: str, prefix: str, later: dict[str, object]) -> None:
    client = redis.Redis.from_url(redis_url)
    first = VECTORS if later is not VECTORS else None  # the first store had no vectors, or other ones
    _set_up(_store(client, prefix, first))
    with pytest.raises(IndexConfigMismatchError, match=r"FT\.DROPINDEX") as refused:
        _set_up(_store(client, prefix, later))
    assert f"{prefix}:items:idx" in str(refused.value)
    _set_up(_store(client, prefix, first))  # the index was left as it was: its own config still sets up


def test_the_same_config_and_a_store_without_one_set_up_as_before(redis_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(redis_url)
    _set_up(_store(client, prefix, VECTORS | {"text_fields": ["text"]}))
    _set_up(_store(client, prefix, VECTORS | {"text_fields": ["text"]}))
    _set_up(_store(client, prefix, None))  # the CLI's tools, a store that only puts and gets


def test_following_the_message_moves_the_items_to_the_new_index(redis_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(redis_url)
    plain = _store(client, prefix, None)
    _set_up(plain)
    plain.put(("docs",), "a", {"text": "apple"})
    store = _store(client, prefix, VECTORS)
    with pytest.raises(IndexConfigMismatchError):
        _set_up(store)
    client.execute_command("FT.DROPINDEX", store.core.index)
    _set_up(store)
    store.put(("docs",), "a", {"text": "apple"})  # an item put without vectors gets them when put again
    store.put(("docs",), "b", {"text": "kiwi"})
    assert [item.key for item in store.search(("docs",), query="apple", limit=2)] == ["a", "b"]
    assert all(item.score is not None for item in store.search(("docs",), query="apple"))
