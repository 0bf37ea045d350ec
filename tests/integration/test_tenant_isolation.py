"""Tenant isolation on one shared server: the admin and runtime ACL users of
`streamsaver.log.acl` (``streamsaver acl``), two tenants on the embedded server.

* The admin user sets a deployment up (indexes, scripts, settings); the runtime user then runs
  every saver, store and subscriber call, through `from_conn_string` too, and can create no index.
* Every command the runtime ACL grants, sent by tenant B's runtime user against tenant A's keys
  and indexes, is refused (``NoPermissionError``, also from inside a script); the keyless ones
  return nothing of A's. The commands that would list, read or disturb other tenants (``SCAN``,
  ``KEYS``, ``RANDOMKEY``, ``FT._LIST``, ``FT.CREATE`` over A's prefix, ``SCRIPT FLUSH``,
  ``INFO``, ...) are refused.
* Nested prefixes (``P`` and ``P:tenant1``) are isolated both ways: no key of one matches the
  other's patterns, and each direction of the attack is refused.
"""

from __future__ import annotations

import asyncio
import fnmatch
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import redis.asyncio
import redis.cluster
from helpers import config, new_checkpoint
from redis.exceptions import NoPermissionError, ResponseError

from streamsaver import AsyncStreamSaver, AsyncStreamStore, StreamSaver, StreamStore, Subscriber
from streamsaver.errors import IndexMissingError
from streamsaver.log.acl import RUNTIME_COMMANDS, admin_rules, key_patterns, runtime_rules
from streamsaver.log.keys import STORE_VIEW, Keyspace

SECRET = "123-45-6789"

KEYLESS = {
    "ping", "hello", "auth", "select", "client|setinfo", "client|setname", "client|getname", "time", "wait",
    "waitaof", "command", "cluster|slots", "cluster|shards", "readonly", "asking", "script|load",
    "multi", "exec", "discard",
}
"""The runtime commands that name no key: `test_keyless_runtime_commands_reveal_nothing_of_another_tenant`."""


def attacks(key: str, stream: str, doc: str, index: str, sha: str) -> dict[str, list[Any]]:
    """Per runtime command that names keys, a call of it on tenant A's `key` (a hash), `stream`,
    JSON `doc` and `index`."""
    return {
        "get": ["GET", key], "set": ["SET", key, "x"], "del": ["DEL", key], "exists": ["EXISTS", key],
        "type": ["TYPE", key], "rename": ["RENAME", key, key + "2"],
        "hget": ["HGET", key, "partitions"], "hset": ["HSET", key, "f", "v"], "hsetnx": ["HSETNX", key, "f", "v"],
        "hdel": ["HDEL", key, "partitions"], "hmget": ["HMGET", key, "partitions"], "hgetall": ["HGETALL", key],
        "hlen": ["HLEN", key], "hincrby": ["HINCRBY", key, "n", 1],
        "sadd": ["SADD", key, "m"], "srem": ["SREM", key, "m"], "smembers": ["SMEMBERS", key],
        "zadd": ["ZADD", key, 1, "m"], "zrange": ["ZRANGE", key, 0, -1], "zrem": ["ZREM", key, "m"],
        "zremrangebyscore": ["ZREMRANGEBYSCORE", key, 0, 1], "zlexcount": ["ZLEXCOUNT", key, "-", "+"],
        "pexpire": ["PEXPIRE", key, 1], "pexpireat": ["PEXPIREAT", key, 1], "pexpiretime": ["PEXPIRETIME", key],
        "persist": ["PERSIST", key], "pttl": ["PTTL", key],
        "xadd": ["XADD", stream, "*", "f", "v"], "xrange": ["XRANGE", stream, "-", "+"],
        "xrevrange": ["XREVRANGE", stream, "+", "-"], "xlen": ["XLEN", stream], "xdel": ["XDEL", stream, "0-1"],
        "xtrim": ["XTRIM", stream, "MAXLEN", 0], "xread": ["XREAD", "STREAMS", stream, "0"],
        "xreadgroup": ["XREADGROUP", "GROUP", "g", "c", "STREAMS", stream, ">"],
        "xack": ["XACK", stream, "g", "0-1"], "xautoclaim": ["XAUTOCLAIM", stream, "g", "c", 0, "0"],
        "xpending": ["XPENDING", stream, "g"], "xgroup|create": ["XGROUP", "CREATE", stream, "spy", "0"],
        "xgroup|createconsumer": ["XGROUP", "CREATECONSUMER", stream, "g", "c"],
        "xgroup|delconsumer": ["XGROUP", "DELCONSUMER", stream, "g", "c"],
        "xinfo|consumers": ["XINFO", "CONSUMERS", stream, "g"], "xinfo|groups": ["XINFO", "GROUPS", stream],
        "xinfo|stream": ["XINFO", "STREAM", stream],
        "json.get": ["JSON.GET", doc], "json.set": ["JSON.SET", doc, "$", "1"], "json.type": ["JSON.TYPE", doc],
        "ft.search": ["FT.SEARCH", index, "*"], "ft.aggregate": ["FT.AGGREGATE", index, "*", "LOAD", 1, "@thread"],
        "ft.info": ["FT.INFO", index],
        "evalsha": ["EVALSHA", sha, 1, key],
    }


REFUSED = [
    ["SCAN", 0], ["KEYS", "*"], ["RANDOMKEY"], ["DBSIZE"], ["INFO"], ["INFO", "keyspace"], ["FT._LIST"],
    ["SCRIPT", "FLUSH"], ["SCRIPT", "KILL"], ["FUNCTION", "FLUSH"], ["FUNCTION", "LIST"], ["EVAL", "return 1", 0],
    ["CLIENT", "LIST"], ["CLIENT", "KILL", "ID", 1], ["CLIENT", "PAUSE", 1], ["CONFIG", "GET", "*"], ["FLUSHALL"],
    ["FLUSHDB"], ["SLOWLOG", "GET"], ["MONITOR"], ["ACL", "LIST"], ["ACL", "LOG"], ["PUBLISH", "c", "m"],
    ["FT.CONFIG", "GET", "*"], ["FT.DICTDUMP", "d"], ["MEMORY", "STATS"], ["LATENCY", "LATEST"],
]
"""Commands the runtime user may not send at all (the ``{A}``-templated ones are below)."""


def _user(client: redis.Redis, rules: list[str]) -> tuple[str, str]:
    name, password = f"ss-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    client.execute_command("ACL", "SETUSER", name, "on", f">{password}", *rules)
    return name, password


def _url(redis_url: str, user: tuple[str, str]) -> str:
    return redis_url.replace("redis://", f"redis://{user[0]}:{user[1]}@", 1)


class Tenant:
    """One deployment with its admin and runtime users."""

    def __init__(self, client: redis.Redis, redis_url: str, prefix: str) -> None:
        self.prefix = prefix
        self.admin = _user(client, admin_rules(prefix))
        self.runtime = _user(client, runtime_rules(prefix))
        self.admin_url, self.runtime_url = _url(redis_url, self.admin), _url(redis_url, self.runtime)

    def set_up(self) -> None:
        """What ``streamsaver setup --view full --view shallow`` does, as the admin user."""
        with redis.Redis.from_url(self.admin_url) as admin:
            for view in ("full", "shallow"):
                StreamSaver(admin, prefix=self.prefix, view=view, projections=("full", "shallow")).setup()
            StreamStore(admin, prefix=self.prefix).setup()

    def owns(self, key: str) -> bool:
        return any(fnmatch.fnmatchcase(key, pattern[1:]) for pattern in key_patterns(self.prefix))


@pytest.fixture
def tenants(
    client: redis.Redis, redis_url: str, prefix: str, request: pytest.FixtureRequest
) -> Iterator[tuple[Tenant, Tenant]]:
    """Tenant A and tenant B; nested prefixes (``P`` and ``P:tenant1``), in the order asked."""
    outer, inner = Tenant(client, redis_url, prefix), Tenant(client, redis_url, f"{prefix}:tenant1")
    pair = (outer, inner) if getattr(request, "param", "outer-first") == "outer-first" else (inner, outer)
    yield pair
    for tenant in pair:
        client.execute_command("ACL", "DELUSER", tenant.admin[0], tenant.runtime[0])


def _run_everything(tenant: Tenant) -> list[Any]:
    """Every runtime call of the savers, the store and a subscriber, as `tenant`'s runtime user;
    the events its subscriber saw."""
    with StreamSaver.from_conn_string(tenant.runtime_url, prefix=tenant.prefix) as saver:
        saver.setup()
        checkpoint, versions = new_checkpoint({"a": 1})
        saved = saver.put(config("t1"), checkpoint, {"ssn": SECRET}, versions)
        saver.put_writes(saved, [("a", 2)], "task")
        got = saver.get_tuple(saved)
        assert got is not None and got.pending_writes == [("task", "a", 2)]
        assert [t.config for t in saver.list(None, filter={"ssn": SECRET})] == [saved]
        saver.copy_thread("t1", "t2")
        saver.delete_thread("t2")
    with redis.Redis.from_url(tenant.runtime_url) as runtime:
        shallow = StreamSaver(runtime, prefix=tenant.prefix, view="shallow")
        assert [t.config["configurable"]["thread_id"] for t in shallow.list(None, filter={"ssn": SECRET})] == ["t1"]
        store = StreamStore(runtime, prefix=tenant.prefix)
        store.put(("users", "ann"), "profile", {"ssn": SECRET})
        assert [item.key for item in store.search(("users",), filter={"ssn": SECRET})] == ["profile"]
        assert store.list_namespaces(prefix=("users",)) == [("users", "ann")]
        seen: list[Any] = []
        Subscriber(runtime, "audit", lambda event: seen.append(event.payload()), prefix=tenant.prefix).run_burst()
    asyncio.run(_run_async(tenant))
    return seen


async def _run_async(tenant: Tenant) -> None:
    async with AsyncStreamSaver.from_conn_string(tenant.runtime_url, prefix=tenant.prefix) as saver:
        checkpoint, versions = new_checkpoint({"a": 1})
        saved = await saver.aput(config("t3"), checkpoint, {"ssn": SECRET}, versions)
        assert (await saver.aget_tuple(saved)) is not None
        await saver.adelete_thread("t3")
    async with redis.asyncio.Redis.from_url(tenant.runtime_url) as runtime:
        store = AsyncStreamStore(runtime, prefix=tenant.prefix)
        assert (await store.aget(("users", "ann"), "profile")) is not None


@pytest.mark.parametrize("tenants", ["outer-first", "inner-first"], indirect=True)
def test_the_runtime_acl_runs_everything_and_reaches_nothing_of_another_tenant(
    client: redis.Redis, tenants: tuple[Tenant, Tenant]
) -> None:
    a, b = tenants
    a.set_up()
    b.set_up()
    assert len(_run_everything(a)) >= 3
    assert len(_run_everything(b)) >= 3
    keys = [k.decode() for k in client.scan_iter(match=f"{a.prefix.split(':')[0]}*", count=1000)]
    assert [k for k in keys if a.owns(k) and b.owns(k)] == []
    assert {k for k in keys if not a.owns(k) and not b.owns(k)} == set()
    a_keys = Keyspace(a.prefix)
    stream = next(k for k in keys if a.owns(k) and k.startswith(f"{a.prefix}:log:"))
    doc = next(k for k in keys if a.owns(k) and k.startswith(a_keys.document_prefix("full")))
    sha = client.script_load("return redis.call('HGET', KEYS[1], 'partitions')")
    reader_sha = client.script_load(f"return redis.call('HGETALL', '{a_keys.meta}')")
    before = {k: client.dump(k) for k in keys if a.owns(k)}
    with redis.Redis.from_url(b.runtime_url) as spy:
        table = attacks(a_keys.meta, stream, doc, a_keys.index("full"), sha)
        assert set(table) | KEYLESS == set(RUNTIME_COMMANDS), "a runtime command without an attack here"
        for name, command in table.items():
            with pytest.raises(NoPermissionError):
                spy.execute_command(*command)
            assert name  # every granted command that names a key was tried
        for index in (a_keys.index("full"), a_keys.index("shallow"), a_keys.index(STORE_VIEW)):
            with pytest.raises(NoPermissionError):
                spy.execute_command("FT.AGGREGATE", index, "*", "GROUPBY", 1, "@thread")
        # A script B may run reads with B's rights, whatever keys it declares.
        with pytest.raises(ResponseError, match=r"(?i)no permissions"):
            spy.execute_command("EVALSHA", reader_sha, 1, Keyspace(b.prefix).meta)
        spy_index = Keyspace(b.prefix).index("full", "spy")
        with pytest.raises(NoPermissionError):
            spy.execute_command("FT.CREATE", spy_index, "ON", "JSON", "PREFIX", 1, a_keys.document_prefix("full"),
                                "SCHEMA", "$.metadata.ssn", "AS", "ssn", "TAG")
        for command in REFUSED:
            with pytest.raises(NoPermissionError):
                spy.execute_command(*command)
    assert {k: client.dump(k) for k in keys if a.owns(k)} == before
    assert spy_index.encode() not in client.execute_command("FT._LIST")


def test_keyless_runtime_commands_reveal_nothing_of_another_tenant(
    client: redis.Redis, tenants: tuple[Tenant, Tenant]
) -> None:
    a, b = tenants
    a.set_up()
    _run_everything(a)
    with redis.Redis.from_url(b.runtime_url) as spy:
        replies = [
            spy.ping(), spy.execute_command("HELLO"), spy.execute_command("TIME"), spy.execute_command("WAIT", 0, 0),
            spy.execute_command("WAITAOF", 0, 0, 0), spy.execute_command("CLIENT", "SETNAME", "spy"),
            spy.execute_command("CLIENT", "GETNAME"), spy.command_count(),
            spy.execute_command("SCRIPT", "LOAD", "return 1"),
            spy.execute_command("SELECT", 0),
            spy.pipeline(transaction=True).execute(),  # MULTI / EXEC of nothing
            spy.execute_command("MULTI"), spy.execute_command("DISCARD"),
        ]
        for cluster_only in (["CLUSTER", "SLOTS"], ["CLUSTER", "SHARDS"], ["READONLY"], ["ASKING"]):
            with pytest.raises(ResponseError, match=r"(?i)cluster support disabled"):
                spy.execute_command(*cluster_only)
    text = repr(replies)
    assert a.prefix not in text and SECRET not in text and "t1" not in text


def test_the_runtime_user_creates_no_index_and_names_the_admin_step(
    client: redis.Redis, redis_url: str, prefix: str
) -> None:
    tenant = Tenant(client, redis_url, prefix)
    try:
        with (
            StreamSaver.from_conn_string(tenant.runtime_url, prefix=prefix) as saver,
            pytest.raises(IndexMissingError, match="admin user"),
        ):
            saver.setup()
        assert [n for n in client.execute_command("FT._LIST") if n.decode().startswith(f"{prefix}:")] == []
        tenant.set_up()
        with StreamSaver.from_conn_string(tenant.runtime_url, prefix=prefix) as saver:
            saver.setup()
            checkpoint, versions = new_checkpoint({"a": 1})
            saved = saver.put(config("t1"), checkpoint, {}, versions)
            assert saver.get_tuple(saved) is not None
    finally:
        client.execute_command("ACL", "DELUSER", tenant.admin[0], tenant.runtime[0])


def test_the_admin_user_runs_the_operator_tools(client: redis.Redis, redis_url: str, prefix: str) -> None:
    from streamsaver.ops.doctor import diagnose
    from streamsaver.ops.shadow import ShadowRebuild
    from streamsaver.ops.verify import verify

    tenant = Tenant(client, redis_url, prefix)
    try:
        tenant.set_up()
        _run_everything(tenant)
        with redis.Redis.from_url(tenant.admin_url) as admin:
            assert verify(admin, prefix).matches
            ShadowRebuild.open(admin, prefix).run(["full"])
            assert verify(admin, prefix).matches
            assert {finding.check for finding in diagnose(admin, prefix)} >= {"indexes", "acl"}
    finally:
        client.execute_command("ACL", "DELUSER", tenant.admin[0], tenant.runtime[0])


def test_the_runtime_user_works_on_a_cluster(embedded_cluster: Any, prefix: str) -> None:
    """The same two users on every primary: the admin sets up, the runtime user (whose client
    reads the slot map with ``CLUSTER SLOTS`` and ``COMMAND``) writes, reads and lists."""
    nodes = [redis.Redis(port=node.port) for node in embedded_cluster.nodes]
    users = {"admin": _user(nodes[0], admin_rules(prefix)), "runtime": _user(nodes[0], runtime_rules(prefix))}
    try:
        for node in nodes[1:]:
            for (name, password), rules in zip(users.values(), (admin_rules(prefix), runtime_rules(prefix)),
                                               strict=True):
                node.execute_command("ACL", "SETUSER", name, "on", f">{password}", *rules)
        with StreamSaver.from_conn_string(_url(embedded_cluster.url, users["admin"]), prefix=prefix) as admin:
            admin.setup()
        with StreamSaver.from_conn_string(_url(embedded_cluster.url, users["runtime"]), prefix=prefix) as saver:
            assert isinstance(saver.redis, redis.cluster.RedisCluster)
            checkpoint, versions = new_checkpoint({"a": 1})
            saved = saver.put(config("t1"), checkpoint, {"ssn": SECRET}, versions)
            assert saver.get_tuple(saved) is not None
            assert [t.config for t in saver.list(None, filter={"ssn": SECRET})] == [saved]
            with pytest.raises(NoPermissionError):
                saver.redis.execute_command("FT._LIST", target_nodes=saver.redis.get_primaries())
    finally:
        for node in nodes:
            node.execute_command("ACL", "DELUSER", *(name for name, _ in users.values()))
            node.close()


def test_the_agent_audit_writes_as_the_runtime_user(
    client: redis.Redis, tenants: tuple[Tenant, Tenant]
) -> None:
    """The audit middleware's MULTI (its stream, the partition's feed, the thread's TTL) passes
    the runtime ACL, and a deleted thread takes its audit with it."""
    from streamsaver.middleware.audit import AuditMiddleware, read_audit

    a, _ = tenants
    a.set_up()
    with StreamSaver.from_conn_string(a.runtime_url, prefix=a.prefix, default_ttl=5) as saver:
        saver.setup()  # as an agent's first checkpoint read does; the runtime user creates nothing
        audit = AuditMiddleware(saver)
        audit._write({"type": "ModelCalled", "thread": "t-audit", "name": "fake", "in": "0" * 16})
        assert audit.stats.errors == 0
        assert [e["type"] for e in read_audit(saver, "t-audit")] == ["ModelCalled"]
