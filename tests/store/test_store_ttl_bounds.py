"""A TTL the scripts cannot carry is refused by name before anything is written: a NaN or
infinite one, or one so long that its milliseconds pass what a Lua number holds exactly (the
script then sent the deadline as ``9e+18``, which ``PEXPIREAT`` refuses after the put's log
entry and document were written: a torn put)."""

from __future__ import annotations

import math

import pytest
import redis

from streamsaver import StreamStore
from streamsaver.errors import ConfigurationError, InvalidInputError

BEYOND = [math.nan, math.inf, 1.5e14, 1e20]
"""Minutes: 1.5e14 is 9e18 ms; 1e20 is past 64 bits."""


@pytest.mark.parametrize("ttl", BEYOND, ids=["nan", "inf", "9e18 ms", "past 64 bits"])
def test_a_put_with_a_ttl_past_what_the_scripts_carry_is_refused_and_writes_nothing(
    redis_url: str, prefix: str, ttl: float
) -> None:
    client = redis.Redis.from_url(redis_url)
    store = StreamStore(client, prefix=prefix)
    store.setup()
    before = sorted(client.scan_iter(match=f"{prefix}:*"))
    with pytest.raises(InvalidInputError, match="ttl"):
        store.put(("facts",), "k", {"v": 1}, ttl=ttl)
    assert sorted(client.scan_iter(match=f"{prefix}:*")) == before


@pytest.mark.parametrize("ttl", BEYOND, ids=["nan", "inf", "9e18 ms", "past 64 bits"])
def test_a_default_ttl_past_what_the_scripts_carry_is_refused(redis_url: str, prefix: str, ttl: float) -> None:
    with pytest.raises(ConfigurationError, match="default_ttl"):
        StreamStore(redis.Redis.from_url(redis_url), prefix=prefix, default_ttl=ttl)


def test_a_ttl_of_a_thousand_years_is_kept(redis_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(redis_url)
    store = StreamStore(client, prefix=prefix)
    store.setup()
    store.put(("facts",), "k", {"v": 1}, ttl=1000 * 365 * 24 * 60)
    assert store.get(("facts",), "k") is not None
