"""A value JSON cannot hold and the serde is not asked for (an int beyond 64 bits, a string with a
lone surrogate: both plain types) is refused with a named error, nothing written, by a lone put
and by a batch alike."""

from __future__ import annotations

import pytest
import redis
from langgraph.store.base import PutOp

from streamsaver import StreamStore
from streamsaver.errors import InvalidInputError

UNSTORABLE = {"an int beyond 64 bits": {"n": 2**64}, "a negative one": {"deep": {"n": -(2**63) - 1}},
              "a lone surrogate": {"s": "\udc80"}, "beside a serde part": {"n": 2**70, "when": {1, 2}}}


@pytest.mark.parametrize("value", list(UNSTORABLE.values()), ids=list(UNSTORABLE))
def test_a_value_json_cannot_hold_is_refused_by_name_and_writes_nothing(
    redis_url: str, prefix: str, value: dict[str, object]
) -> None:
    client = redis.Redis.from_url(redis_url)
    store = StreamStore(client, prefix=prefix)
    store.setup()
    before = sorted(client.scan_iter(match=f"{prefix}:*"))
    with pytest.raises(InvalidInputError, match="value"):
        store.put(("facts",), "lone", value)
    with pytest.raises(InvalidInputError, match="value"):
        store.batch([PutOp(("facts",), "one", {"ok": 1}), PutOp(("other",), "two", value)])
    assert sorted(client.scan_iter(match=f"{prefix}:*")) == before
