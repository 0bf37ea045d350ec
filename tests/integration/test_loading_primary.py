"""Calls across the primaries of a Redis Cluster while one primary reloads its data (``LOADING``:
restarted, ``DEBUG RELOAD``, a replica promoted while it synced): the other primaries run their
steps, the loading one refuses its own (they ran nothing there). The driver waits until it has
loaded and sends again only what it refused, so every event is logged once (a store batch has no
repeat probe: a write sent twice would be logged twice); when it stays loading longer than the
driver waits, the call fails with `ServerUnavailableError`, each partition's events logged once
or not at all. A primary that also lost its scripts (as a restarted one has) answers ``NOSCRIPT``
once loaded: the driver loads them and sends its steps again, still once."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
import redis.asyncio
from helpers import config, new_checkpoint
from langgraph.store.base import PutOp
from loading_server import DEBUG_ARGS, fill, reloading
from redis.cluster import RedisCluster

from streamsaver import AsyncStreamSaver, AsyncStreamStore, StreamSaver, StreamStore
from streamsaver.drivers import aio, sync
from streamsaver.errors import ServerUnavailableError
from streamsaver.log.keys import Keyspace
from streamsaver.server.cluster import EmbeddedCluster

USERS = [f"user{n}" for n in range(12)]  # first labels spread over the partitions, so over the primaries


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(2, extra_args=DEBUG_ARGS) as embedded:
        yield embedded


@pytest.fixture
def client(cluster: EmbeddedCluster) -> Iterator[RedisCluster]:
    with RedisCluster.from_url(cluster.url) as plain:
        yield plain


def _ops(tag: str) -> list[PutOp]:
    return [PutOp((user, "facts"), f"{tag}{n}", {"n": n}) for user in USERS for n in range(3)]


def _logged(client: RedisCluster, keyspace: Keyspace, users: list[str]) -> list[tuple[str, bytes]]:
    """(partition, event id) of every entry of the store partition logs of `users`."""
    partitions = {keyspace.store_partition(user) for user in users}
    return sorted((log_id, entry_id) for log_id in partitions
                  for entry_id, _ in client.xrange(keyspace.store(log_id).log))


def _loading_primary(client: RedisCluster, keyspace: Keyspace) -> tuple[str, list[str]]:
    """The URL of user0's primary, filled so that it reloads slowly, and the users it holds."""
    partition = keyspace.store_partition("user0")
    node = client.get_node_from_key(keyspace.store(partition).log)
    fill(node.redis_connection, f"p{partition}")  # the partition's own hash tag: a slot of that node
    held = [u for u in USERS if client.get_node_from_key(keyspace.store(keyspace.store_partition(u)).log) == node]
    assert len(held) < len(USERS)  # the batch spans both primaries
    return f"redis://{node.host}:{node.port}", held


async def _store(kind: str, url: str, prefix: str) -> Any:
    if kind == "sync":
        store: Any = StreamStore(RedisCluster.from_url(url), prefix=prefix)  # type: ignore[arg-type]
        store.setup()
    else:
        store = AsyncStreamStore(redis.asyncio.RedisCluster.from_url(url), prefix=prefix)  # type: ignore[arg-type]
        await store.setup()
    return store


async def _batch(store: Any, ops: list[PutOp]) -> Any:
    return await store.abatch(ops) if isinstance(store, AsyncStreamStore) else store.batch(ops)


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_store_batch_across_primaries_while_one_loads_logs_every_event_once(
        cluster: EmbeddedCluster, client: RedisCluster, prefix: str, kind: str) -> None:
    store = await _store(kind, cluster.url, prefix)
    url, _ = _loading_primary(client, store.core.keyspace)
    with reloading(url):
        await _batch(store, _ops("b"))
    # one ItemPut per put, whatever primary it went to: none sent twice
    assert len(_logged(client, store.core.keyspace, USERS)) == len(_ops("b"))
    for user in USERS:
        found = await store.aget((user, "facts"), "b2") if kind == "async" else store.get((user, "facts"), "b2")
        assert found is not None and found.value == {"n": 2}


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_primary_loading_longer_than_the_waits_fails_the_batch_by_name_each_event_once_or_not_at_all(
        cluster: EmbeddedCluster, client: RedisCluster, prefix: str, kind: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    for driver in (sync, aio):
        monkeypatch.setattr(driver, "LOADING_RETRIES", 2)  # two waits of 0.25 s, then the error
    store = await _store(kind, cluster.url, prefix)
    url, held = _loading_primary(client, store.core.keyspace)
    elsewhere = [user for user in USERS if user not in held]
    with reloading(url, delay_us=1000), pytest.raises(ServerUnavailableError, match="loading"):
        await _batch(store, _ops("b"))  # the reload takes ~10 s at 1 ms a key: it outlasts the waits
    assert _logged(client, store.core.keyspace, held) == []
    assert len(_logged(client, store.core.keyspace, elsewhere)) == 3 * len(elsewhere)


def _thread_on(client: RedisCluster, url: str, saver: Any) -> str:
    """A thread id whose log lives on the primary at `url`."""
    keys = saver.core.keys
    return next(f"t{n}" for n in range(1000)
                if f"redis://{(node := client.get_node_from_key(keys.thread(f't{n}').log)).host}:{node.port}" == url)


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_saver_put_and_put_writes_on_a_loading_primary_wait_it_out_each_logged_once(
        cluster: EmbeddedCluster, client: RedisCluster, prefix: str, kind: str) -> None:
    saver: Any = (StreamSaver(RedisCluster.from_url(cluster.url), prefix=prefix)  # type: ignore[arg-type]
                  if kind == "sync" else AsyncStreamSaver(redis.asyncio.RedisCluster.from_url(cluster.url),  # type: ignore[arg-type]
                                                          prefix=prefix))
    await saver.asetup() if kind == "async" else saver.setup()
    url, _ = _loading_primary(client, saver.core.keys)
    thread = _thread_on(client, url, saver)
    checkpoint, versions = new_checkpoint({"step": 0})
    with reloading(url):
        if kind == "sync":
            stored = saver.put(config(thread), checkpoint, {"source": "input"}, versions)
            saver.put_writes(stored, [("ch", 1)], "task")
        else:
            stored = await saver.aput(config(thread), checkpoint, {"source": "input"}, versions)
            await saver.aput_writes(stored, [("ch", 1)], "task")
    assert client.xlen(saver.core.keys.thread(thread).log) == 2  # CheckpointSaved, WritesSaved: once each
    got = saver.get_tuple(config(thread)) if kind == "sync" else await saver.aget_tuple(config(thread))
    assert got is not None and got.pending_writes == [("task", "ch", 1)]


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_primary_that_loads_and_lost_its_scripts_like_a_restarted_one_gets_them_and_logs_each_event_once(
        cluster: EmbeddedCluster, client: RedisCluster, prefix: str, kind: str,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "streamsaver.drivers")
    store = await _store(kind, cluster.url, prefix)
    url, _ = _loading_primary(client, store.core.keyspace)
    with redis.Redis.from_url(url) as node:
        node.script_flush()  # once it has loaded, it answers NOSCRIPT
    with reloading(url):
        await _batch(store, _ops("b"))
    assert len(_logged(client, store.core.keyspace, USERS)) == len(_ops("b"))
    said = [record.getMessage().split(" ")[0] for record in caplog.records]
    assert said.index("LOADING") < said.index("NOSCRIPT")  # waited, then reloaded the scripts
