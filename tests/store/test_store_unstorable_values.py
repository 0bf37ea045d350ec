"""A value JSON cannot hold and the serde is not asked for (an int beyond 64 bits, a string with a
lone surrogate: both plain types; a NaN or infinite float), or that nests deeper than the item's
document may, is refused with a named error, nothing written, by a lone put and by a batch
alike."""

from __future__ import annotations

import asyncio
import math

import pytest
import redis
import redis.asyncio
from langgraph.store.base import PutOp

from streamsaver import AsyncStreamStore, StreamStore
from streamsaver.errors import InvalidInputError
from streamsaver.store.values import MAX_VALUE_DEPTH

UNSTORABLE = {"an int beyond 64 bits": {"n": 2**64}, "a negative one": {"deep": {"n": -(2**63) - 1}},
              "a lone surrogate": {"s": "\udc80"}, "beside a serde part": {"n": 2**70, "when": {1, 2}}}


@pytest.mark.parametrize("value", list(UNSTORABLE.values()), ids=list(UNSTORABLE))
def test_a_value_json_cannot_hold_is_refused_by_name_and_writes_nothing(
    redis_url: str, prefix: str, value: dict[str, object]
) -> None:
    _refused_writing_nothing(redis_url, prefix, value, ("other",))


def _refused_writing_nothing(redis_url: str, prefix: str, value: dict[str, object], beside: tuple[str, ...]) -> None:
    """A put of `value` alone, and in a batch after a valid put of ``("facts",)`` while `value`
    goes under `beside` (another partition or the same), is refused by name; nothing is written."""
    client = redis.Redis.from_url(redis_url)
    store = StreamStore(client, prefix=prefix)
    store.setup()
    before = sorted(client.scan_iter(match=f"{prefix}:*"))
    with pytest.raises(InvalidInputError, match="value"):
        store.put(("facts",), "lone", value)
    with pytest.raises(InvalidInputError, match="value"):
        store.batch([PutOp(("facts",), "one", {"ok": 1}), PutOp(beside, "two", value)])
    assert sorted(client.scan_iter(match=f"{prefix}:*")) == before


def _nested(levels: int) -> dict[str, object]:
    value: object = "leaf"
    for _ in range(levels - 1):
        value = {"d": value}
    return {"d": value}


@pytest.mark.parametrize("value", [_nested(MAX_VALUE_DEPTH + 1), _nested(130), {"x": math.nan}, {"x": [1, -math.inf]}],
                         ids=["just past the depth", "past RedisJSON's depth", "a NaN", "an infinity"])
def test_a_value_the_item_document_cannot_hold_is_refused_before_the_log_entry(
    redis_url: str, prefix: str, value: dict[str, object]
) -> None:
    """RedisJSON refuses a document nested past 128 levels after the log entry was appended (the
    put was torn: an ItemPut logged, no item); orjson writes a NaN or infinite float as null (the
    value would read back otherwise)."""
    _refused_writing_nothing(redis_url, prefix, value, ("facts",))


async def test_an_async_put_of_such_a_value_fails_alone(redis_url: str, prefix: str) -> None:
    client = redis.asyncio.Redis.from_url(redis_url)
    async with AsyncStreamStore(client, prefix=prefix) as store:
        await store.setup()
        calls = [store.aput(("facts",), "ok", {"v": 1}), store.aput(("facts",), "deep", _nested(MAX_VALUE_DEPTH + 1))]
        ok, deep = await asyncio.gather(*calls, return_exceptions=True)
        assert ok is None and isinstance(deep, InvalidInputError)
        assert await store.aget(("facts",), "deep") is None
    await client.aclose()


def test_a_value_as_deep_as_allowed_reads_back(redis_url: str, prefix: str) -> None:
    store = StreamStore(redis.Redis.from_url(redis_url), prefix=prefix)
    store.setup()
    store.put(("facts",), "deep", _nested(MAX_VALUE_DEPTH))
    item = store.get(("facts",), "deep")
    assert item is not None and item.value == _nested(MAX_VALUE_DEPTH)
