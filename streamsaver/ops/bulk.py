"""Pipelines for bulk work (replay): commands packed by hiredis, sent on one pooled connection.

redis-py's pipeline re-checks and re-wraps every argument in Python before hiredis packs it;
for replay, whose applies carry dozens of arguments per event, that was a third of the client's
time. Here hiredis packs each command straight from its argument tuple, and replies are read
without response callbacks (an ``XRANGE`` reply stays a list of ``[id, [field, value, ...]]``).
On Redis Cluster the commands are grouped by the primary owning their key and sent to each in
turn (one round trip per primary they touch), and NOSCRIPT loads the scripts on every primary.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import hiredis
from redis import Redis
from redis.cluster import RedisCluster
from redis.exceptions import NoScriptError, ResponseError

from streamsaver.drivers.cluster import by_node, primaries
from streamsaver.drivers.wire import Command, failed_reply, not_run
from streamsaver.scripts import LOAD_SCRIPTS

__all__ = ["bulk_round_trip"]

# hiredis's stub types the argument as a one-element tuple; it takes any number of arguments.
_pack: Callable[[tuple[Any, ...]], bytes] = hiredis.pack_command


def _send(client: Redis, commands: Sequence[Command]) -> list[Any]:
    """One round trip; error replies come back as exception objects, in place."""
    packed = b"".join(_pack(tuple(command)) for command in commands)
    pool = client.connection_pool
    connection: Any = pool.get_connection()  # redis-py leaves Connection's methods untyped
    try:
        connection.send_packed_command([packed], check_health=False)
        replies: list[Any] = []
        for _ in commands:
            try:
                replies.append(connection.read_response())
            except ResponseError as error:  # consumed whole: the next reply follows
                replies.append(error)
        return replies
    except BaseException:
        connection.disconnect()  # replies may be left unread: never reuse this connection
        raise
    finally:
        pool.release(connection)


def _send_routed(client: Redis | RedisCluster, commands: Sequence[Command]) -> list[Any]:
    if isinstance(client, Redis):
        return _send(client, commands)
    replies: list[Any] = [None] * len(commands)
    for node, positions in by_node(client, commands):
        for i, reply in zip(positions, _send(node, [commands[i] for i in positions]), strict=True):
            replies[i] = reply
    return replies


def _load_scripts(client: Redis | RedisCluster) -> None:
    for node in [client] if isinstance(client, Redis) else primaries(client):
        _send(node, LOAD_SCRIPTS)


def bulk_round_trip(client: Redis | RedisCluster, commands: Sequence[Command]) -> list[Any]:
    """Send `commands` in one round trip (per primary they touch, on a cluster) and return
    their raw replies; on NOSCRIPT (a flushed or restarted server) load the scripts and send
    again what did not run (`streamsaver.drivers.wire.not_run`; callers send idempotent commands).

    Raises:
        RedisError: the first error among the replies, or a connection error.
    """
    replies = _send_routed(client, commands)
    if any(isinstance(reply, NoScriptError) for reply in replies):
        _load_scripts(client)
        again = not_run(commands, replies)
        for n, reply in zip(again, _send_routed(client, [commands[n] for n in again]), strict=True):
            replies[n] = reply
    if (error := failed_reply(replies)) is not None:
        raise error
    return replies
