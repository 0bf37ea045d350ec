"""The sync saver's round trips on a plain client skip ``execute_command``'s per-command work
(`streamsaver.drivers.lane`) without taking from the client what it promises others: connections
its pool allows, commands its instrumentation sees, a forked child's own sockets, a server that
closed an idle connection."""

from __future__ import annotations

import functools
import multiprocessing
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis
from helpers import config, new_checkpoint
from redis.auth.token import SimpleToken
from redis.backoff import NoBackoff
from redis.credentials import CredentialProvider
from redis.retry import Retry

from streamsaver import StreamSaver
from streamsaver.drivers import lane


def _steps(saver: StreamSaver, thread: str, steps: int = 3) -> None:
    parent = config(thread)
    previous = None
    for step in range(steps):
        checkpoint, versions = new_checkpoint({"step": step}, previous)
        saved = saver.put(parent, checkpoint, {"source": "loop", "step": step}, versions)
        saver.put_writes(saved, [("step", step + 1)], f"task-{step}")
        parent, previous = saved, checkpoint
    latest = saver.get_tuple(config(thread))
    assert latest is not None and latest.checkpoint["channel_values"] == {"step": steps - 1}


def _busy(saver: StreamSaver, prefix: str, threads: int) -> None:
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda i: _steps(saver, f"{prefix}-{i}"), range(threads)))


def _free_connections(pool: redis.ConnectionPool, wanted: int) -> int:
    """How many of `wanted` connections the pool hands out at once (all given back after)."""
    taken = []
    try:
        for _ in range(wanted):
            taken.append(pool.get_connection())  # noqa: PERF401 -- keeps those taken before the pool ran out
    except redis.ConnectionError:  # MaxConnectionsError: the pool is out
        pass
    finally:
        for connection in taken:
            pool.release(connection)
    return len(taken)


def test_savers_sharing_a_client_keep_few_of_its_connections(redis_url: str, prefix: str) -> None:
    """Savers made and dropped on one client (one per request, say) share one lane, which keeps
    at most an eighth of what the pool allows: the client's other users still get the rest."""
    pool = redis.ConnectionPool.from_url(redis_url, max_connections=16)
    client = redis.Redis(connection_pool=pool)
    try:
        for n in range(12):
            _busy(StreamSaver(client, prefix=prefix), f"s{n}", 4)
        assert _free_connections(pool, 16) >= 14
    finally:
        client.close()


def test_a_blocking_pool_gets_all_its_connections_back(redis_url: str, prefix: str) -> None:
    """A blocking pool is sized for its users, who wait for a free connection: none is kept."""
    pool = redis.BlockingConnectionPool.from_url(redis_url, max_connections=8, timeout=5)
    client = redis.Redis(connection_pool=pool)
    try:
        _busy(StreamSaver(client, prefix=prefix), "t", 4)
        assert _free_connections(pool, 8) == 8
    finally:
        client.close()


def test_a_wrapped_execute_command_sees_every_command(
    client: redis.Redis, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tracing instrumentations wrap ``redis.Redis.execute_command``, also after the saver was made."""
    saver = StreamSaver(client, prefix=prefix)
    _steps(saver, "before")
    seen: list[Any] = []
    plain = redis.Redis.execute_command

    @functools.wraps(plain)
    def traced(self: redis.Redis, *args: Any, **options: Any) -> Any:
        seen.append(args[0])
        return plain(self, *args, **options)

    monkeypatch.setattr(redis.Redis, "execute_command", traced)
    _steps(saver, "after", steps=2)
    assert seen.count("EVALSHA") == 5  # two puts, two put_writes, one get_tuple


_FORKED: list[StreamSaver] = []


def _child(thread: str) -> None:
    saver = _FORKED[0]  # inherited from the parent, with its lane and the parent's sockets
    _steps(saver, thread)
    # Every connection the child's lane went on to keep is the child's own.
    kept = [connection for connection, _ in saver._driver.lane._idle]  # type: ignore[union-attr]
    if not kept or any(connection.pid != os.getpid() for connection in kept):
        raise SystemExit(1)


def test_a_forked_child_does_not_share_the_parents_connections(redis_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(redis_url)
    saver = StreamSaver(client, prefix=prefix)
    try:
        _busy(saver, "parent", 3)  # the lane now holds connections
        _FORKED[:] = [saver]
        context = multiprocessing.get_context("fork")
        children = [context.Process(target=_child, args=(f"child-{n}",)) for n in range(2)]
        for child in children:
            child.start()
        _busy(saver, "parent-again", 3)  # meanwhile, on the same (inherited) connections
        for child in children:
            child.join(60)
        assert [child.exitcode for child in children] == [0, 0]
        for thread in ("child-0", "child-1", "parent-again-0"):
            latest = saver.get_tuple(config(thread))
            assert latest is not None and latest.checkpoint["channel_values"] == {"step": 2}
    finally:
        _FORKED.clear()
        client.close()


def test_a_connection_the_server_closed_while_idle_is_replaced_without_retries(
    redis_url: str, client: redis.Redis, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the pool does for the connections it hands out: a client made without retries gets
    through the first call after the server dropped its idle connections (a timeout, a restart)."""
    monkeypatch.setattr(lane, "STALE_S", 0.0)  # every idle connection counts as having waited
    no_retries = redis.Redis.from_url(redis_url, retry=Retry(NoBackoff(), 0))
    try:
        saver = StreamSaver(no_retries, prefix=prefix)
        _busy(saver, "before", 3)
        killed = client.client_kill_filter(_type="normal", skipme=True)
        assert killed >= 1
        _busy(saver, "after", 3)
    finally:
        no_retries.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_clients_of_either_protocol_get_a_lane_and_read_alike(redis_url: str, prefix: str, protocol: int) -> None:
    """redis-py 8 speaks RESP3 unless told otherwise: a lane serves both, replies of either kind."""
    client = redis.Redis.from_url(redis_url, protocol=protocol)
    assert lane.Lane.of(client) is not None
    saver = StreamSaver(client, prefix=f"{prefix}-{protocol}")
    saver.setup()
    _steps(saver, "t", steps=3)
    found = list(saver.list(None, filter={"source": "loop"}))
    assert [t.metadata["step"] for t in found] == [2, 1, 0]
    assert found[0].pending_writes == [("task-2", "step", 3)]
    client.close()


_PATCHED_AT_START_UP = """
import functools, sys
import redis
seen = []
plain = redis.Redis.execute_command

def traced(self, *args, **options):
    seen.append(args[0])
    return plain(self, *args, **options)

# As opentelemetry-instrument (wrapt: __wrapped__) or sentry_sdk.init (a bare replacement) do,
# before the application imports anything else.
redis.Redis.execute_command = functools.wraps(plain)(traced) if sys.argv[3] == "wraps" else traced
sys.path.insert(0, "tests")
from helpers import config, new_checkpoint
from streamsaver import StreamSaver

saver = StreamSaver(redis.Redis.from_url(sys.argv[1]), prefix=sys.argv[2])
saver.setup()
seen.clear()
checkpoint, versions = new_checkpoint({"step": 0}, None)
saver.put(config("t"), checkpoint, {}, versions)
saver.get_tuple(config("t"))
print(seen)
raise SystemExit(0 if seen.count("EVALSHA") == 2 else 1)
"""


@pytest.mark.parametrize("style", ["wraps", "bare"])
def test_an_execute_command_patched_before_the_saver_was_imported_sees_every_command(
    redis_url: str, prefix: str, style: str
) -> None:
    """Instrumentations usually patch at start-up, before the application imports the saver."""
    done = subprocess.run(
        [sys.executable, "-c", _PATCHED_AT_START_UP, redis_url, prefix, style],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


class _Rotating(CredentialProvider):
    def __init__(self, user: str, secret: str) -> None:
        self.current = (user, secret)

    def get_credentials(self) -> tuple[str, str]:
        return self.current


def test_a_rotated_token_authenticates_the_lanes_connections(redis_url: str, client: redis.Redis, prefix: str) -> None:
    """A streaming credential provider (Entra ID, ...) hands the pool each new token; the pool
    re-authenticates the connections it holds at once and those in use when they come back.
    The lane's connections must not go on under the old one (it expires: the server drops them)."""
    users = {f"{prefix}-old": "old-secret", f"{prefix}-new": "new-secret"}
    for user, secret in users.items():
        client.acl_setuser(user, enabled=True, passwords=[f"+{secret}"], keys=["*"], channels=["*"], commands=["+@all"])
    old, new = users
    credentials = _Rotating(old, users[old])
    rotated = redis.Redis.from_url(redis_url, credential_provider=credentials)
    try:
        saver = StreamSaver(rotated, prefix=prefix)
        _busy(saver, "before", 3)  # the lane now holds connections logged in as `old`
        credentials.current = (new, users[new])  # what new connections log in with
        token = SimpleToken(users[new], time.time() * 1000 + 60_000, time.time() * 1000, {"oid": new})
        rotated.connection_pool.re_auth_callback(token)  # what the provider calls on a new token
        assert rotated.execute_command("ACL", "WHOAMI") == new.encode()
        assert saver._driver.lane is not None
        assert saver._driver.lane.send([["ACL", "WHOAMI"]]) == [new.encode()]
        _busy(saver, "after", 3)
    finally:
        rotated.close()
        client.acl_deluser(*users)


def test_a_connection_marked_for_reconnection_is_reconnected(redis_url: str, prefix: str) -> None:
    """On a maintenance notice (MOVING: the endpoint moves), the pool marks the connections in
    use for reconnection; execute_command and the pool reconnect them after their command. So does the lane."""
    moved = redis.Redis.from_url(redis_url)
    try:
        saver = StreamSaver(moved, prefix=prefix)
        _steps(saver, "before")
        assert saver._driver.lane is not None
        [before] = saver._driver.lane.send([["CLIENT", "ID"]])
        for connection, _ in saver._driver.lane._idle:
            connection.mark_for_reconnect()  # what MaintNotificationsPoolHandler does to connections in use
        [after] = saver._driver.lane.send([["CLIENT", "ID"]])
        assert after != before
        _steps(saver, "after")
    finally:
        moved.close()
