"""A put's own `index` is False, None, or a list of JSON paths (strings): anything else is refused
by name before anything is embedded or written (a path that is not a string raised a bare
TypeError from the embedding step; a plain string was read as a list of one-letter paths and
embedded nothing)."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from streamsaver import StreamStore
from streamsaver.errors import InvalidInputError

CALLS: list[list[str]] = []


def embed(texts: list[str]) -> list[list[float]]:
    CALLS.append(list(texts))
    return [[float(len(text)), 1.0] for text in texts]


@pytest.mark.parametrize("index", [["text", 1], [b"text"], [None], "text", {"text": 1}],
                         ids=["an int path", "a bytes path", "a None path", "a string", "a dict"])
def test_an_index_that_is_not_a_list_of_paths_is_refused_and_writes_nothing(
    redis_url: str, prefix: str, index: Any
) -> None:
    client = redis.Redis.from_url(redis_url)
    store = StreamStore(client, prefix=prefix, index={"dims": 2, "embed": embed, "fields": ["text"]})
    store.setup()
    before, CALLS[:] = sorted(client.scan_iter(match=f"{prefix}:*")), []
    with pytest.raises(InvalidInputError, match="index"):
        store.put(("docs",), "k", {"text": "hello", "1": "one"}, index=index)
    assert CALLS == [] and sorted(client.scan_iter(match=f"{prefix}:*")) == before


def test_a_list_of_paths_embeds_those_paths(redis_url: str, prefix: str) -> None:
    store = StreamStore(redis.Redis.from_url(redis_url), prefix=prefix,
                        index={"dims": 2, "embed": embed, "fields": ["text"]})
    store.setup()
    CALLS[:] = []
    store.put(("docs",), "k", {"text": "hello", "other": "a longer text"}, index=["other"])
    assert CALLS == [["a longer text"]]
