"""Connection faults and a full server never duplicate, tear or lose a checkpoint.

* A connection dropped before, midway through or after the server ran an append: a redis-py
  client made with a ``retry`` (as `from_conn_string` makes it) sends the call again on a new
  connection, and the append is idempotent per checkpoint (`put`) and
  per task write (`put_writes`): `append.lua` looks up the log entry the view records for that
  checkpoint or write and, when it holds exactly this event, returns its id writing nothing. So
  every call is logged once, whichever moment the connection died.
* A Redis out of memory (``maxmemory``, ``noeviction``) refuses an append whole, with redis-py's
  `OutOfMemoryError`; nothing is written, and appends work again once memory is freed.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlparse

import pytest
import redis
from fault_proxy import DroppingProxy, Moment
from helpers import VARIANT_IDS, VARIANTS, config, new_checkpoint, open_adapter, snapshot
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.exceptions import OutOfMemoryError
from redis.retry import Retry

from streamsaver import StreamSaver
from streamsaver.ops.verify import verify
from streamsaver.server.embedded import EmbeddedRedis

STEPS = 6


@pytest.mark.parametrize("moment", ["before", "midway", "after"])
@pytest.mark.parametrize(("kind", "view"), VARIANTS, ids=VARIANT_IDS)
async def test_a_call_retried_after_a_dropped_connection_is_logged_once(
    redis_url: str, client: redis.Redis, prefix: str, kind: str, view: str, moment: Moment
) -> None:
    port = urlparse(redis_url).port
    assert port is not None
    with DroppingProxy(port, marker=b"EVALSHA", moment=moment) as proxy:
        retrying = {"retry": (AsyncRetry if kind == "async" else Retry)(NoBackoff(), 3)}
        async with open_adapter(kind, view, proxy.url, prefix, client_options=retrying) as saver:
            previous = None
            parent = config("t1")
            for step in range(STEPS):
                proxy.drops = 1
                saved, previous = await saver.save("t1", {"step": step}, parent=parent, previous=previous)
                proxy.drops = 1
                await saver.put_writes(saved, [("step", step), ("__error__", "boom")], f"task-{step}")
                parent = saved

            latest = await saver.get_tuple(config("t1"))
    assert proxy.dropped == 2 * STEPS
    assert client.xlen(saver.saver.core.keys.thread("t1").log) == 2 * STEPS
    assert latest is not None and latest.checkpoint["channel_values"] == {"step": STEPS - 1}
    assert sorted(latest.pending_writes) == [
        (f"task-{STEPS - 1}", "__error__", "boom"),
        (f"task-{STEPS - 1}", "step", STEPS - 1),
    ]
    assert verify(client, prefix).matches


async def test_a_repeated_identical_call_is_a_no_op_but_a_changed_one_is_logged(
    redis_url: str, client: redis.Redis, prefix: str
) -> None:
    saver = StreamSaver(client, prefix=prefix)
    checkpoint, versions = new_checkpoint({"a": 1})
    saved = saver.put(config("t1"), checkpoint, {"step": 1}, versions)
    saver.put(config("t1"), checkpoint, {"step": 1}, versions)
    saver.put_writes(saved, [("a", 2)], "task")
    saver.put_writes(saved, [("a", 2)], "task")
    log = saver.core.keys.thread("t1").log
    assert client.xlen(log) == 2

    saver.put(config("t1"), checkpoint, {"step": 2}, versions)
    saver.put_writes(saved, [("__interrupt__", "again")], "task")
    saver.put_writes(saved, [("__interrupt__", "later")], "task")

    assert client.xlen(log) == 5
    got = saver.get_tuple(saved)
    assert got is not None and got.metadata["step"] == 2
    assert ("task", "__interrupt__", "later") in got.pending_writes
    assert verify(client, prefix).matches


@pytest.fixture
def small_server() -> Iterator[redis.Redis]:
    with EmbeddedRedis(extra_args=["--maxmemory-policy", "noeviction"]) as server:
        c = redis.Redis.from_url(server.url)
        yield c
        c.close()


def _fill_until_out_of_memory(server: redis.Redis, fillers: list[str]) -> None:
    """Write 100 kB values until the server refuses one; `fillers` collects the keys written."""
    while True:
        server.set(f"filler:{len(fillers)}", b"x" * 100_000)
        fillers.append(f"filler:{len(fillers)}")


def test_out_of_memory_refuses_the_whole_append_and_writes_nothing(small_server: redis.Redis) -> None:
    saver = StreamSaver(small_server, prefix="oom")
    first, versions = new_checkpoint({"n": 0})
    saved = saver.put(config("t1"), first, {}, versions)
    used = int(small_server.info("memory")["used_memory"])
    small_server.config_set("maxmemory", used + 2_000_000)
    fillers: list[str] = []
    with pytest.raises(OutOfMemoryError):
        _fill_until_out_of_memory(small_server, fillers)
    before = snapshot(small_server, "oom")

    second, versions = new_checkpoint({"n": 1, "big": "y" * 50_000}, first)
    with pytest.raises(OutOfMemoryError):
        saver.put(saved, second, {}, versions)
    with pytest.raises(OutOfMemoryError):
        saver.put_writes(saved, [("n", 5)], "task")

    assert snapshot(small_server, "oom") == before
    small_server.delete(*fillers)
    saver.put(saved, second, {}, versions)
    got = saver.get_tuple(config("t1"))
    assert got is not None and got.checkpoint["channel_values"]["n"] == 1
    assert verify(small_server, "oom").matches


def test_a_saver_from_a_connection_string_survives_a_lost_reply(
    redis_url: str, client: redis.Redis, prefix: str
) -> None:
    port = urlparse(redis_url).port
    assert port is not None
    with (
        DroppingProxy(port, marker=b"EVALSHA", moment="after") as proxy,
        StreamSaver.from_conn_string(proxy.url, prefix=prefix) as saver,
    ):
        checkpoint, versions = new_checkpoint({"a": 1})
        proxy.drops = 1
        saved = saver.put(config("t1"), checkpoint, {}, versions)
        proxy.drops = 1
        saver.put_writes(saved, [("a", 2)], "task")
        got = saver.get_tuple(saved)
    assert proxy.dropped == 2
    assert client.xlen(saver.core.keys.thread("t1").log) == 2
    assert got is not None and got.pending_writes == [("task", "a", 2)]


@pytest.mark.parametrize("moment", ["after"])
async def test_a_shallow_only_deployment_also_logs_a_retried_call_once(
    redis_url: str, client: redis.Redis, prefix: str, moment: Moment
) -> None:
    """With ``projections=("shallow",)`` the repeat is recognised through the shallow view's
    pointers, which hold only the latest checkpoint (and its writes)."""
    port = urlparse(redis_url).port
    assert port is not None
    retrying = {"retry": Retry(NoBackoff(), 3)}
    with DroppingProxy(port, marker=b"EVALSHA", moment=moment) as proxy:
        async with open_adapter(
            "sync", "shallow", proxy.url, prefix, client_options=retrying, projections=("shallow",)
        ) as saver:
            previous, parent = None, config("t1")
            for step in range(STEPS):
                proxy.drops = 1
                saved, previous = await saver.save("t1", {"step": step}, parent=parent, previous=previous)
                proxy.drops = 1
                await saver.put_writes(saved, [("step", step)], f"task-{step}")
                parent = saved
            latest = await saver.get_tuple(config("t1"))
    assert proxy.dropped == 2 * STEPS
    assert client.xlen(saver.saver.core.keys.thread("t1").log) == 2 * STEPS
    assert latest is not None and latest.pending_writes == [(f"task-{STEPS - 1}", "step", STEPS - 1)]
    assert verify(client, prefix, ["shallow"]).matches
