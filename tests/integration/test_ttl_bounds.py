"""A saver's TTL the scripts cannot carry is refused by name when the saver is made: a NaN or
infinite one, or one so long that its milliseconds pass what a Lua number holds exactly (the
append then sent ``9e+18`` to ``PEXPIRE``, refused after the log entry was written: a torn put)."""

from __future__ import annotations

import math

import pytest
import redis
from helpers import config, new_checkpoint

from streamsaver import StreamSaver
from streamsaver.errors import InvalidInputError


@pytest.mark.parametrize("ttl", [math.nan, math.inf, 1.5e14, 1e20], ids=["nan", "inf", "9e18 ms", "past 64 bits"])
def test_a_ttl_past_what_the_scripts_carry_is_refused(client: redis.Redis, ttl: float) -> None:
    with pytest.raises(InvalidInputError, match="default_ttl"):
        StreamSaver(client, default_ttl=ttl)


def test_a_ttl_of_a_thousand_years_is_kept(client: redis.Redis, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix, default_ttl=1000 * 365 * 24 * 60)
    saver.setup()
    checkpoint, versions = new_checkpoint({"note": "x"})
    saver.put(config("t"), checkpoint, {}, versions)
    assert saver.get_tuple(config("t")) is not None
    assert client.pttl(saver.core.keys.thread("t").log) > 0
