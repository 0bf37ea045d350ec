"""A saver copied with a new serde (as `with_allowlist` does for `graph.compile`) decodes with it."""

from __future__ import annotations

import copy

import redis
import redis.asyncio
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from streamsaver import AsyncStreamSaver, StreamSaver


def test_a_copied_saver_uses_its_own_serde_and_leaves_the_original_alone() -> None:
    for saver in (StreamSaver(redis.Redis(port=1)), AsyncStreamSaver(redis.asyncio.Redis(port=1))):
        original_serde = saver.serde
        clone = copy.copy(saver)
        clone.serde = JsonPlusSerializer(allowed_msgpack_modules=[("mymodule", "MyType")])
        assert clone.core.serde is clone.serde
        assert saver.core.serde is original_serde is saver.serde
