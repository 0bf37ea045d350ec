"""The Lua copy of the key escaping rule and key names (scripts/_esc.lua) spells keys exactly
as Python does (streamsaver/log/codec.py, streamsaver/log/keys.py).

Scripts rebuild per-checkpoint keys from a stem and a checkpoint id, and the purge walks
namespaces and ids; a disagreement would leave keys behind or read the wrong ones.
"""

from __future__ import annotations

import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projectors.domain import CHECKPOINTS
from streamsaver.log.codec import escape
from streamsaver.log.keys import Keyspace
from streamsaver.scripts import Script

LUA_ESCAPE = Script.with_library("escape-probe", "return esc(ARGV[1])", "#!lua flags=no-writes")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=40))
def test_lua_and_python_escape_agree(client: redis.Redis, value: str) -> None:
    lua = client.eval(LUA_ESCAPE.source, 0, value.encode("utf-8", "surrogatepass"))
    assert lua.decode() == escape(value)


LUA_KEYS = Script.with_library(
    "keys-probe",
    """local prefix, view, kind, thread, ens, cid = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local base = thread_base(prefix, view, kind, thread)
return {base, in_ns(base, ens), per_checkpoint(base, ens, cid), thread_log(prefix, thread),
        document_prefix(prefix, view)}""",
    "#!lua flags=no-writes",
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    thread_id=st.text(max_size=20),
    ns=st.text(max_size=20),
    checkpoint_id=st.text(max_size=20),
    view=st.sampled_from(CHECKPOINTS.view_names),
    kind=st.sampled_from(["cp", "ids", "ptrs", "writes", "ns"]),
    partitions=st.integers(1, 64),
)
def test_lua_and_python_key_names_agree(
    client: redis.Redis, thread_id: str, ns: str, checkpoint_id: str, view: str, kind: str, partitions: int
) -> None:
    """The key names scripts build (``_esc.lua``) are those `streamsaver.log.keys` spells."""
    keyspace = Keyspace("app.v1:tenant", partitions)
    keys = keyspace.thread(thread_id)
    thread = f"{keys.slot_tag}:{keys.escaped_thread}"
    args = [keyspace.prefix, view, kind, thread, escape(ns), checkpoint_id]
    lua = client.eval(LUA_KEYS.source, 0, *(a.encode("utf-8", "surrogatepass") for a in args))
    expected = [
        keys.base(view, kind),
        keys.in_ns(view, kind, ns),
        keys.per_checkpoint(view, kind, ns, checkpoint_id),
        keys.log,
        keyspace.document_prefix(view),
    ]
    assert [k.decode() for k in lua] == expected
