"""langgraph-checkpoint-redis's spellings work on our savers (issue 22, item 2): ``redis_url=``
(or a URL first), ``redis_client=``, ``ttl={...}``, ``asetup()``, the shallow savers; and
arguments that contradict each other are refused before anything is written."""

from __future__ import annotations

from typing import Any

import pytest
import redis
import redis.asyncio
from langgraph.checkpoint.base import empty_checkpoint

from streamsaver import AsyncShallowStreamSaver, AsyncStreamSaver, ShallowStreamSaver, StreamSaver
from streamsaver.errors import InvalidInputError


def _put_two(saver: Any, thread: str) -> None:
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    for _ in range(2):
        config = saver.put(config, empty_checkpoint(), {"source": "loop", "step": 1}, {})


def test_redis_url_and_ttl_dict_as_the_peer_spells_them(
    redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed: list[bool] = []
    with StreamSaver(redis_url=redis_url, prefix=prefix, ttl={"default_ttl": 5, "refresh_on_read": True}) as saver:
        close = saver.redis.close
        monkeypatch.setattr(saver.redis, "close", lambda: (closed.append(True), close()))
        saver.setup()
        _put_two(saver, "t")
        assert saver.core.ttl_ms == 5 * 60_000 and saver.core.refresh_on_read
        assert len(list(saver.list({"configurable": {"thread_id": "t"}}))) == 2
        ttl = saver.redis.pttl(next(iter(saver.redis.scan_iter(f"{prefix}:*log*"))))
        assert 0 < ttl <= 5 * 60_000
    assert closed == [True]  # a client made from a URL is the saver's own: closed on exit


def test_a_url_as_first_argument_and_from_conn_string_spellings(redis_url: str, prefix: str) -> None:
    with StreamSaver(redis_url, prefix=prefix) as saver:
        saver.setup()
        _put_two(saver, "t")
    client = redis.Redis.from_url(redis_url)
    with StreamSaver.from_conn_string(redis_client=client, prefix=prefix) as saver:
        assert saver.get_tuple({"configurable": {"thread_id": "t"}}) is not None
    assert client.ping()  # a client passed in stays open
    with StreamSaver.from_conn_string(redis_url=redis_url, prefix=prefix, ttl={"default_ttl": 1}) as saver:
        assert saver.core.ttl_ms == 60_000
    with StreamSaver(redis_client=client, prefix=prefix) as saver:
        assert saver.get_tuple({"configurable": {"thread_id": "t"}}) is not None
    assert client.ping()
    client.close()


def test_shallow_saver_keeps_the_latest_checkpoint_only(redis_url: str, prefix: str) -> None:
    with ShallowStreamSaver.from_conn_string(redis_url=redis_url, prefix=prefix) as saver:
        saver.setup()
        _put_two(saver, "t")
        assert saver.core.view == "shallow"
        assert len(list(saver.list({"configurable": {"thread_id": "t"}}))) == 1


async def test_async_spellings_and_asetup(redis_url: str, prefix: str) -> None:
    spellings = {"redis_url": redis_url, "prefix": prefix, "ttl": {"default_ttl": 2}}
    async with AsyncStreamSaver.from_conn_string(**spellings, projections=("full", "shallow")) as s:  # both read
        await s.asetup()
        await s.aput({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, empty_checkpoint(), {}, {})
        assert s.core.ttl_ms == 120_000
    async with AsyncShallowStreamSaver(redis_url=redis_url, prefix=prefix) as shallow:
        await shallow.asetup()
        assert await shallow.aget_tuple({"configurable": {"thread_id": "t"}}) is not None
    client = redis.asyncio.Redis.from_url(redis_url)
    saver = AsyncStreamSaver(redis_client=client, prefix=prefix)
    await saver.asetup()
    await saver.aclose()
    assert await client.ping()  # not ours to close
    await client.aclose()


@pytest.mark.parametrize(
    "arguments",
    [
        {"redis_url": "{url}", "redis_client": "client"},
        {"redis_client": "{url}", "redis_url": "{url}"},
        {},
        {"redis_client": "client", "connection_args": {"socket_timeout": 1}},
        {"redis_url": "{url}", "ttl": {"default_ttl": 5, "refresh": True}},
        {"redis_url": "{url}", "ttl": {"default_ttl": 5}, "default_ttl": 5},
        {"redis_url": "{url}", "ttl": 5},
    ],
    ids=["client-and-url", "url-twice", "neither", "args-beside-a-client", "unknown-ttl-key", "ttl-twice",
         "ttl-not-a-dict"],
)
def test_contradicting_arguments_are_refused_and_write_nothing(
    redis_url: str, prefix: str, client: redis.Redis, arguments: dict[str, Any]
) -> None:
    given = {k: (client if v == "client" else redis_url if v == "{url}" else v) for k, v in arguments.items()}
    first = given.pop("redis_client", None)
    with pytest.raises(InvalidInputError):
        StreamSaver(first, prefix=prefix, **given)
    with pytest.raises(InvalidInputError), StreamSaver.from_conn_string(redis_client=first, prefix=prefix, **given):
        pass
    assert list(client.scan_iter(f"{prefix}*")) == []
