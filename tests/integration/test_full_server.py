"""A full server (``maxmemory``, ``noeviction``) still reads, and deleting threads frees it;
a server that evicts keys is refused unless the user allows it.

* A fresh saver's lazy setup needs no write once the deployment exists (the refused write of
  the settings is not an error when they are there), so `get_tuple`, `list` and a
  `refresh_on_read` `get_tuple` (its refresh runs in ``ttl_touch.lua``, flagged ``allow-oom``:
  it only moves expiries) return the checkpoints of a full server.
* `delete_thread` runs ``erase.lua`` (``append.lua`` flagged ``allow-oom``, refusing any call
  that does not erase a log): it frees memory on a full server, and appends work again.
* `setup()` (and the lazy setup of a first call) refuses ``allkeys-*`` / ``volatile-*`` with
  `EvictionPolicyError` unless ``allow_eviction=True``.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
import redis
from helpers import config, new_checkpoint
from redis.exceptions import OutOfMemoryError, ResponseError

from streamsaver import StreamSaver
from streamsaver.errors import EvictionPolicyError
from streamsaver.scripts import ERASE
from streamsaver.server.embedded import EmbeddedRedis

THREADS = 8
VALUE = secrets.token_hex(100_000)  # 200,000 characters that zstd cannot shrink to nothing


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddedRedis]:
    with EmbeddedRedis() as embedded:
        yield embedded


@pytest.fixture
def admin(server: EmbeddedRedis) -> Iterator[redis.Redis]:
    with redis.Redis.from_url(server.url) as client:
        yield client
        client.config_set("maxmemory", 0)
        client.config_set("maxmemory-policy", "noeviction")


def fill(server: EmbeddedRedis, admin: redis.Redis, prefix: str) -> StreamSaver:
    """A saver whose threads t0..t7 hold a checkpoint each, on a server then made full."""
    saver = StreamSaver(redis.Redis.from_url(server.url), prefix=prefix, default_ttl=60)
    for t in range(THREADS):
        checkpoint, versions = new_checkpoint({"text": f"{t}{VALUE}"})
        saver.put(config(f"t{t}"), checkpoint, {"n": t}, versions)
    memory = admin.info("memory")
    # Below what the data takes without the clients' buffers (a connection keeps the query
    # buffer of a ~150 KB put until it idles): freeing those cannot make room.
    admin.config_set("maxmemory", int(memory["used_memory"]) - int(memory["mem_clients_normal"]) - 100_000)
    checkpoint, versions = new_checkpoint({"text": VALUE})
    with pytest.raises(OutOfMemoryError):
        saver.put(config("more"), checkpoint, {}, versions)
    return saver


def test_a_fresh_saver_reads_a_full_server(server: EmbeddedRedis, admin: redis.Redis, prefix: str) -> None:
    fill(server, admin, prefix)
    fresh = StreamSaver(redis.Redis.from_url(server.url), prefix=prefix)
    latest = fresh.get_tuple(config("t3"))
    assert latest is not None and latest.checkpoint["channel_values"]["text"] == f"3{VALUE}"
    assert [t.metadata["n"] for t in fresh.list(None, filter={"n": 5})] == [5]
    refreshing = StreamSaver(redis.Redis.from_url(server.url), prefix=prefix, default_ttl=60, refresh_on_read=True)
    latest = refreshing.get_tuple(config("t4"))
    assert latest is not None and latest.checkpoint["channel_values"]["text"] == f"4{VALUE}"


def test_deleting_threads_frees_a_full_server(server: EmbeddedRedis, admin: redis.Redis, prefix: str) -> None:
    fill(server, admin, prefix)
    fresh = StreamSaver(redis.Redis.from_url(server.url), prefix=prefix, default_ttl=60)
    # ~85-95 KB a thread (measured): all eight free ~700 KB, more than the 100 KB margin plus the
    # client buffers counted when the next put is checked (measured 0-410 KB: the refused put's
    # query buffer until its connection idles, and the next put's own). Six (~530 KB) left too
    # little in about half the runs.
    for t in range(THREADS):
        fresh.delete_thread(f"t{t}")
    assert fresh.get_tuple(config("t0")) is None
    assert admin.exists(fresh.core.keys.thread("t0").log) == 0
    checkpoint, versions = new_checkpoint({"text": VALUE})
    fresh.put(config("more"), checkpoint, {}, versions)  # there is room again
    assert fresh.get_tuple(config("more")) is not None


def test_the_erase_script_runs_nothing_but_an_erasure(
    server: EmbeddedRedis, admin: redis.Redis, prefix: str
) -> None:
    saver = StreamSaver(redis.Redis.from_url(server.url), prefix=prefix)
    saver.setup()
    checkpoint, versions = new_checkpoint({"text": "a"})
    command, _ = saver.core.put_request(config("t"), checkpoint, {}, versions)
    command = list(command)
    command[1] = ERASE.sha
    with pytest.raises(ResponseError, match="only runs an append that erases"):
        admin.execute_command(*command)
    assert admin.exists(saver.core.keys.thread("t").log) == 0


def test_setup_refuses_an_evicting_server_unless_allowed(
    server: EmbeddedRedis, admin: redis.Redis, prefix: str
) -> None:
    admin.config_set("maxmemory-policy", "allkeys-lru")
    with pytest.raises(EvictionPolicyError, match="allkeys-lru"):
        StreamSaver(redis.Redis.from_url(server.url), prefix=prefix).setup()
    with pytest.raises(EvictionPolicyError):
        StreamSaver(redis.Redis.from_url(server.url), prefix=prefix).get_tuple(config("t"))
    admin.config_set("maxmemory-policy", "volatile-ttl")
    with pytest.raises(EvictionPolicyError):
        StreamSaver(redis.Redis.from_url(server.url), prefix=prefix).setup()
    allowed = StreamSaver(redis.Redis.from_url(server.url), prefix=prefix, allow_eviction=True)
    allowed.setup()
    assert allowed.get_tuple(config("t")) is None
