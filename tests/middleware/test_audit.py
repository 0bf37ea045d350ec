"""Every model and tool call becomes an audit event beside its thread log (hashed input, sizes,
latency, cache hit or miss, errors) in one round trip; consumer groups follow the partition's audit
feed; the thread log, its views and verify are unchanged."""

from __future__ import annotations

import uuid

import pytest
import redis

from streamsaver import AsyncStreamSaver, StreamSaver, StreamStore, Subscriber
from streamsaver.cli.main import main
from streamsaver.errors import MiddlewareConfigError
from streamsaver.feeds.audit_event import AuditFeedEvent
from streamsaver.middleware import (
    AuditMiddleware,
    SemanticCacheMiddleware,
    ToolCacheMiddleware,
    erase_audit,
    read_audit,
)
from streamsaver.middleware.audit_record import fingerprint
from streamsaver.ops.verify import verify
from tests.middleware.conftest import WeatherTool, ask, make_agent


async def test_model_and_tool_calls_are_audited_with_cache_outcomes(
    saver: StreamSaver, store: StreamStore, weather: WeatherTool, mode: str
) -> None:
    agent = make_agent([AuditMiddleware(saver), ToolCacheMiddleware(store)], tools=[weather.tool], saver=saver)
    await ask(agent, mode, "weather in Paris?", thread="a")
    await ask(agent, mode, "weather in Paris?", thread="a")
    events = read_audit(saver, "a")
    assert [(e["type"], e["name"], e["cache"]) for e in events] == [
        ("ModelCalled", "streamsaver.demo.fake_agent.ScriptedChatModel:scripted", ""),
        ("ToolCalled", "get_weather", "miss"),
        ("ModelCalled", "streamsaver.demo.fake_agent.ScriptedChatModel:scripted", ""),
        ("ModelCalled", "streamsaver.demo.fake_agent.ScriptedChatModel:scripted", ""),
        ("ToolCalled", "get_weather", "hit"),
        ("ModelCalled", "streamsaver.demo.fake_agent.ScriptedChatModel:scripted", ""),
    ]
    tool_event = events[1]
    assert (tool_event["in"], int(tool_event["in_bytes"])) == fingerprint({"city": "Paris"})
    assert int(tool_event["out_bytes"]) > 0 and float(tool_event["ms"]) >= 0
    assert {e["thread"] for e in events} == {"a"} and all(e["error"] == "" for e in events)
    assert read_audit(saver, "b") == []


async def test_a_semantic_hit_is_audited(saver: StreamSaver, store: StreamStore, mode: str) -> None:
    agent = make_agent([AuditMiddleware(saver), SemanticCacheMiddleware(store)])
    await ask(agent, mode, "capital of France?", thread="t")
    await ask(agent, mode, "the capital of France", thread="t")
    assert [e["cache"] for e in read_audit(saver, "t")] == ["miss", "hit"]


async def test_a_failed_call_is_audited_with_its_error(saver: StreamSaver, weather: WeatherTool, mode: str) -> None:
    weather.fail = True
    agent = make_agent([AuditMiddleware(saver)], tools=[weather.tool])
    with pytest.raises(RuntimeError):
        await ask(agent, mode, "weather in Oslo?", thread="e")
    assert [(e["type"], e["error"], e["out_bytes"]) for e in read_audit(saver, "e")][-1] == (
        "ToolCalled", "RuntimeError", "0")


async def test_a_consumer_group_follows_the_audit_feed(saver: StreamSaver, client: redis.Redis, mode: str) -> None:
    feed = saver.core.keys.thread("g").audit_feed
    client.xgroup_create(feed, "costs", id="0", mkstream=True)
    await ask(make_agent([AuditMiddleware(saver)]), mode, "capital of Peru?", thread="g")
    read = client.xreadgroup("costs", "c1", {feed: ">"})
    fields = [f for _, entries in read for _, f in entries]
    assert [(f[b"type"], f[b"thread"]) for f in fields] == [(b"ModelCalled", b"g")]


async def test_a_subscriber_gets_the_audited_calls(saver: StreamSaver, client: redis.Redis,
                                                  weather: WeatherTool, mode: str) -> None:
    got: list[AuditFeedEvent] = []
    prefix = saver.core.keys.prefix
    subscriber = Subscriber(client, "costs", got.append, prefix=prefix, domain="audit", types=["ToolCalled"])
    checkpoints = Subscriber(client, "costs", lambda event: None, prefix=prefix)
    agent = make_agent([AuditMiddleware(saver)], tools=[weather.tool], saver=saver)
    for thread in ("s1", "s2"):
        await ask(agent, mode, "weather in Rome?", thread=thread)
    stats = subscriber.run_burst()
    assert sorted((e.type, e.thread_id, e.fields["name"]) for e in got) == [
        ("ToolCalled", "s1", "get_weather"), ("ToolCalled", "s2", "get_weather")]
    assert (stats.handled, stats.filtered, stats.dead) == (2, 4, 0)
    assert got[0].payload() == got[0].fields and got[0].fields["in"] == fingerprint({"city": "Rome"})[0]
    assert checkpoints.run_burst().handled == sum(client.xlen(saver.core.keys.feed(p))
                                                  for p in range(saver.core.keys.partitions))
    assert subscriber.run_burst().read == 0


async def test_the_thread_log_and_views_are_unchanged(saver: StreamSaver, client: redis.Redis, mode: str) -> None:
    plain_saver = StreamSaver(client, prefix=saver.core.keys.prefix + "-plain")
    plain_saver.setup()
    await ask(make_agent([AuditMiddleware(saver)], saver=saver), mode, "capital of Peru?", thread="v")
    await ask(make_agent([], saver=plain_saver), mode, "capital of Peru?", thread="v")
    types = [f[b"type"] for _, f in client.xrange(saver.core.keys.thread("v").log)]
    plain = [f[b"type"] for _, f in client.xrange(plain_saver.core.keys.thread("v").log)]
    assert sorted(types) == sorted(plain) and set(types) == {b"CheckpointSaved", b"WritesSaved"}
    assert len(read_audit(saver, "v")) == 1
    assert verify(client, saver.core.keys.prefix).matches


def test_a_write_is_one_round_trip(saver: StreamSaver) -> None:
    audit = AuditMiddleware(saver)
    sent: list[object] = []
    real = saver.redis.connection_pool.get_connection

    def counting(*args: object, **kwargs: object) -> object:
        connection = real(*args, **kwargs)
        original = connection.send_packed_command

        def send(command: object, check_health: bool = True) -> None:
            sent.append(command)
            original(command, check_health)

        connection.send_packed_command = send  # type: ignore[method-assign]
        return connection

    saver.redis.connection_pool.get_connection = counting  # type: ignore[method-assign]
    try:
        audit._write({"type": "ModelCalled", "thread": "rt", "v": "1"})
    finally:
        saver.redis.connection_pool.get_connection = real  # type: ignore[method-assign]
    assert len(sent) == 1
    assert len(read_audit(saver, "rt")) == 1


async def test_inspect_shows_the_audited_calls(saver: StreamSaver, redis_url: str, mode: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    await ask(make_agent([AuditMiddleware(saver)], saver=saver), mode, "capital of Peru?", thread="i")
    assert main(["inspect", "i", "--url", redis_url, "--prefix", saver.core.keys.prefix]) == 0
    text = capsys.readouterr().out
    audited = text.split("agent calls audited beside the log (1):")[1].splitlines()
    assert audited[1].split()[:2] == ["type", "name"]
    assert audited[3].split()[0] == "ModelCalled"
    assert read_audit(saver, "i")[0]["id"] in audited[3]


async def test_the_audit_expires_with_the_thread_and_delete_thread_erases_it(client: redis.Redis, prefix: str,
                                                                       mode: str) -> None:
    saver = StreamSaver(client, prefix=prefix, default_ttl=2)
    saver.setup()
    await ask(make_agent([AuditMiddleware(saver)], saver=saver), mode, "capital of Peru?", thread="x")
    audit_key, log_key = saver.core.keys.thread("x").audit, saver.core.keys.thread("x").log
    assert 0 < client.pttl(audit_key) <= 120_000 and client.pttl(log_key) > 0
    saver.delete_thread("x")
    assert client.exists(audit_key, log_key) == 0  # delete_thread's own atomic call took the audit with the log
    assert erase_audit(saver, "x") == 0


async def test_an_async_saver_audits_ainvoke_and_stays_out_of_invoke(async_saver: AsyncStreamSaver) -> None:
    audit = AuditMiddleware(async_saver)
    agent = make_agent([audit])
    await ask(agent, "ainvoke", "capital of Peru?", thread="as")
    await ask(agent, "invoke", "capital of Chile?", thread="as")
    entries = await async_saver.redis.xrange(async_saver.core.keys.thread("as").audit)
    assert [f[b"type"] for _, f in entries] == [b"ModelCalled"]
    assert (audit.stats.stored, audit.stats.skipped, audit.stats.errors) == (1, 1, 0)


def test_a_client_is_not_a_saver(client: redis.Redis) -> None:
    with pytest.raises(MiddlewareConfigError, match="saver"):
        AuditMiddleware(client)


async def test_the_audit_runs_on_redis_cluster(cluster_url: str, mode: str) -> None:
    cluster = redis.RedisCluster.from_url(cluster_url)
    saver = StreamSaver(cluster, prefix=f"mwc{uuid.uuid4().hex[:8]}")
    saver.setup()
    audit = AuditMiddleware(saver)
    agent = make_agent([audit])
    for thread in ("c1", "c2", "c3"):
        await ask(agent, mode, "capital of Peru?", thread=thread)
    assert audit.stats.stored == 3 and audit.stats.errors == 0
    assert [len(read_audit(saver, t)) for t in ("c1", "c2", "c3")] == [1, 1, 1]
    cluster.close()
