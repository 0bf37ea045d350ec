"""Placing steps on redis-py clients: the one module that talks to Redis Cluster.

On one Redis server every command goes to that server. On a Redis Cluster, redis-py routes a
command by its keys; every command of a thread names keys with the thread's partition tag, so
appends, reads and log rewrites go to the one primary that owns the partition's slot, unchanged.
What has no key, or must reach every primary, is a `Routed` step here:

* ``SCRIPT LOAD`` and ``FT._LIST`` go to every primary (`Topology.on_every_node`); a driver's
  reload after ``NOSCRIPT`` goes to every primary the client knows now (`enqueue_everywhere`),
  which includes one that joined the cluster after the slot map was read;
* each primary holds its own RediSearch indexes (an index covers only its node's keys), and in
  cluster mode RediSearch answers ``MOVED`` for an index name whose slot is another node's: so
  on a cluster a view's index is one index per primary, named with a hash tag that primary owns
  (`Keyspace.index(view, tag)`; the tag is the first ``{iK}`` whose slot the node owns, so every
  process derives the same names from the same slot map), and a cross-thread query is sent to
  each of them (`index_targets`) and the pages are merged (`streamsaver.checkpoints.listing`);
* ``WAITAOF`` / ``WAIT`` after an append, and ``TIME`` beside a log read, go to the node of the
  thread's slot (`Routed` with one of the thread's keys), in the same pipeline: one round trip;
* a script call goes to the node of its first key (`route`): a cluster pipeline would otherwise
  ask a server for its keys (``COMMAND GETKEYS``) first, a round trip per call;
* bulk tools (replay, verify, import) send raw pipelines node by node (`by_node`, `primaries`).

The slot map is read once with ``CLUSTER SLOTS`` by `setup()` (`Topology.from_slots`). A listing
whose query finds that slots moved (`index_moved`) runs `setup()` again, which reads the map
again, creates the indexes it names and waits until they have indexed the documents already on
their nodes, and the listing goes on from the last checkpoint it returned. A primary that joined
the cluster does not make a query fail, it holds documents under no index: a listing asks
``CLUSTER SLOTS`` beside its queries and sets up again when it names one
(`streamsaver.log.new_primaries`).

`Routed` steps on a plain ``redis.Redis`` are plain commands, so the core emits them whatever
the client is; the shells place steps with `enqueue` / `execute`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import redis
import redis.asyncio
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.asyncio.retry import Retry as AsyncRetry
from redis.cluster import RedisCluster
from redis.exceptions import BusyLoadingError, MovedError, NoScriptError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError

from streamsaver.drivers.wire import client_options, still_loading
from streamsaver.log.program import Refused
from streamsaver.log.routing import Command, Routed, Step, command_key, script_key

__all__ = [
    "acluster_enabled",
    "aconnect",
    "by_node",
    "cluster_enabled",
    "connect",
    "enqueue",
    "enqueue_everywhere",
    "execute",
    "index_moved",
    "initialize",
    "is_cluster",
    "loading_refused",
    "node_name",
    "primaries",
    "refused",
    "route",
]


def index_moved(error: Exception) -> bool:
    """Whether a query on a per-primary index failed because slots moved since the slot map was
    read: the node answered ``MOVED`` for the index name, or (redis-py having followed the
    redirection) the node that now owns the tag has no index of that name."""
    text = str(error).lower()
    return isinstance(error, MovedError) or (
        isinstance(error, ResponseError) and ("no such index" in text or "unknown index name" in text)
    )


def is_cluster(client: Any) -> bool:
    """Whether `client` is a redis-py cluster client (sync or asyncio)."""
    return isinstance(client, (RedisCluster, AsyncRedisCluster))


def by_node(client: Any, commands: Sequence[Command]) -> list[tuple[redis.Redis, list[int]]]:
    """The commands' positions grouped by the primary that owns their key, each with a plain
    client of that primary (for tools that send raw pipelines node by node)."""
    groups: dict[str, tuple[redis.Redis, list[int]]] = {}
    for i, command in enumerate(commands):
        node = client.get_node_from_key(command_key(command))
        groups.setdefault(node.name, (node.redis_connection, []))[1].append(i)
    return list(groups.values())


def primaries(client: Any) -> list[redis.Redis]:
    """A plain client of every primary."""
    return [node.redis_connection for node in client.get_primaries()]


def route(client: Any, step: Step) -> tuple[Command, dict[str, Any]]:
    """The command of `step` and the keyword arguments that send it where it belongs.

    A script call is routed by its first key here: a cluster pipeline would otherwise ask a
    server for its keys (``COMMAND GETKEYS``, a round trip per call) before sending it.
    """
    command, key = (step.command, step.key) if isinstance(step, Routed) else (step, script_key(step))
    if key is None or not is_cluster(client):
        return command, {}
    return command, {"target_nodes": client.get_node_from_key(key)}


def enqueue(pipe: Any, client: Any, steps: Sequence[Step]) -> None:
    """Queue `steps` on a non-transactional pipeline of `client` (synchronous in both clients)."""
    for step in steps:
        command, options = route(client, step)
        pipe.execute_command(*command, **options)


def enqueue_everywhere(pipe: Any, client: Any, steps: Sequence[Step]) -> None:
    """Queue the commands of `steps` (``SCRIPT LOAD``s, each a `Routed` step per primary of a
    slot map) once on every primary `client` knows now, on a pipeline of `client`; on a plain
    client, each command once.

    A driver's reload after ``NOSCRIPT`` goes there rather than where the steps say: the slot
    map the steps were made from may be older than the client's, which learns of a primary that
    joined the cluster when a command is redirected to it (``MOVED``), as the refused call was.
    """
    commands = list({repr(command): command for command in (
        step.command if isinstance(step, Routed) else step for step in steps)}.values())
    nodes = client.get_primaries() if is_cluster(client) else [None]
    for node in nodes:
        for command in commands:
            pipe.execute_command(*command, **({} if node is None else {"target_nodes": node}))


def node_name(client: Any, key: str) -> str | None:
    """The name of the primary `client` would send `key` to now; None for a plain client."""
    return client.get_node_from_key(key).name if is_cluster(client) else None


def execute(client: Any, step: Step) -> Any:
    """Send one step (the reply, or for an asyncio client the awaitable of it)."""
    command, options = route(client, step)
    return client.execute_command(*command, **options)


async def initialize(client: Any) -> None:
    """Let an asyncio cluster client read the slot map (it does so lazily, on its first command,
    and `route` needs it before then); nothing for other clients."""
    if isinstance(client, AsyncRedisCluster):
        await client.initialize()


def cluster_enabled(url: str, options: Mapping[str, Any] | None = None) -> bool:
    """Whether the server at `url` runs in cluster mode (``HELLO``), for `from_conn_string`:
    asked with the client `options` given (TLS, credentials, timeouts) and the library's
    `client_options`, so a dropped connection or a server still loading is asked again."""
    client = redis.Redis.from_url(url, **client_options(options))
    try:
        return _cluster_mode(cast(Any, client).execute_command("HELLO"))
    except ResponseError:  # a server older than Redis 6 (no HELLO)
        return bool(int(client.info("cluster").get("cluster_enabled", 0)))
    finally:
        client.close()


def _cluster_mode(hello: Any) -> bool:
    """Whether a ``HELLO`` reply (a map in RESP3, a flat list in RESP2) says ``mode: cluster``.
    ``HELLO`` and not ``INFO``: the runtime ACL (docs/security.md) grants no ``INFO``."""
    fields = hello if isinstance(hello, dict) else dict(zip(hello[::2], hello[1::2], strict=False))
    mode = fields.get(b"mode", fields.get("mode", b""))
    return (mode.decode() if isinstance(mode, bytes) else str(mode)) == "cluster"


def connect(url: str, *, cluster: bool | None = None, **options: Any) -> redis.Redis:
    """A client for `url`: a ``RedisCluster`` (typed as the ``redis.Redis`` whose commands it
    offers) when the server runs in cluster mode, else a ``redis.Redis``. `cluster` True or
    False skips asking the server (``HELLO``); `options` go to ``from_url``."""
    if cluster if cluster is not None else cluster_enabled(url, options):
        return cast(redis.Redis, RedisCluster.from_url(url, **options))
    return redis.Redis.from_url(url, **options)


async def acluster_enabled(url: str, options: Mapping[str, Any] | None = None) -> bool:
    """`cluster_enabled` with an asyncio client."""
    client = redis.asyncio.Redis.from_url(url, **client_options(options, retry_class=AsyncRetry))
    try:
        return _cluster_mode(await cast(Any, client).execute_command("HELLO"))
    except ResponseError:  # a server older than Redis 6 (no HELLO)
        return bool(int((await client.info("cluster")).get("cluster_enabled", 0)))
    finally:
        await client.aclose()


async def aconnect(url: str, *, cluster: bool | None = None, **options: Any) -> Any:
    """`connect` with an asyncio client: a ``redis.asyncio.cluster.RedisCluster`` or a
    ``redis.asyncio.Redis`` (None asks the server whether it runs in cluster mode)."""
    if cluster if cluster is not None else await acluster_enabled(url, options):
        return AsyncRedisCluster.from_url(url, **options)
    return redis.asyncio.Redis.from_url(url, **options)


def loading_refused(client: Any, steps: Sequence[Step], replies: list[Any]) -> None:
    """Mark as refused with ``LOADING`` (in place) the steps of one round trip that an asyncio
    cluster pipeline left unread: redis-py closes a primary's connection on the first
    ``LOADING`` reply it reads there and gives the steps after it a ``ConnectionError``. They
    were written with the refused one, to a primary that was loading its data, which answers
    every command it reads then with ``LOADING`` (the sync cluster pipeline marks them so
    itself). Nothing for a plain client, or a call with no ``LOADING`` reply."""
    if not is_cluster(client) or still_loading(replies) is None:
        return
    loading: set[str] = set()
    for n, (step, reply) in enumerate(zip(steps, replies, strict=True)):
        command = step.command if isinstance(step, Routed) else step
        if len(command) < 2 and not isinstance(step, Routed):
            continue
        node = client.get_node_from_key(step.key if isinstance(step, Routed) else command_key(command)).name
        if isinstance(reply, BusyLoadingError):
            loading.add(node)
        elif type(reply) is RedisConnectionError and node in loading:
            replies[n] = BusyLoadingError(f"unread after LOADING on {node}")


def refused(error: ResponseError) -> Refused:
    """An error reply as programs see it (`streamsaver.log.program.Refused`), with whether it
    says the slots moved (`index_moved`) or a script is missing (the drivers raise a
    ``NOSCRIPT`` only after loading the scripts again)."""
    return Refused(error, index_moved(error), isinstance(error, NoScriptError))
