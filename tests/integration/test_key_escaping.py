"""The Lua copy of the key escaping rule (scripts/_esc.lua) spells keys exactly as Python does.

Scripts rebuild per-checkpoint keys from a stem and a checkpoint id, and the purge walks
namespaces and ids; a disagreement would leave keys behind or read the wrong ones.
"""

from __future__ import annotations

import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamsaver.log.codec import escape
from streamsaver.scripts import Script

LUA_ESCAPE = Script.with_library("escape-probe", "return esc(ARGV[1])", "#!lua flags=no-writes")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=40))
def test_lua_and_python_escape_agree(client: redis.Redis, value: str) -> None:
    lua = client.eval(LUA_ESCAPE.source, 0, value.encode("utf-8", "surrogatepass"))
    assert lua.decode() == escape(value)
