"""What both saver twins need of a redis-py client, without decisions: the client check, the
pipelining of command lists, and the resend policy for dropped connections. Re-exported by
`streamsaver.checkpoints.core`, where callers have always found them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.backoff import ExponentialBackoff
from redis.exceptions import NoScriptError

from streamsaver.errors import ConfigurationError

__all__ = ["CONNECTION_RETRIES", "Command", "check_client", "enqueue", "failed_reply", "retry_backoff"]

Command = list[str | bytes | int]


def check_client(client: Any) -> None:
    """Reject a client that decodes replies: payloads are binary.

    Raises:
        ConfigurationError: the client was made with ``decode_responses=True``.
    """
    if client.get_connection_kwargs().get("decode_responses"):
        raise ConfigurationError("streamsaver needs a Redis client with decode_responses=False")


def failed_reply(replies: Sequence[Any]) -> Exception | None:
    """The first error among pipelined replies, NOSCRIPT first (it means: load and resend)."""
    errors = [r for r in replies if isinstance(r, Exception)]
    return next((e for e in errors if isinstance(e, NoScriptError)), errors[0] if errors else None)


def enqueue(pipe: Any, commands: Sequence[Command]) -> None:
    """Queue commands on a non-transactional pipeline; queuing is synchronous in both clients.
    (`streamsaver.log.routing.enqueue` also places `Routed` steps.)"""
    for command in commands:
        pipe.execute_command(*command)


CONNECTION_RETRIES = 3
"""How often a client that `from_conn_string` makes resends a call whose connection dropped.
Safe for appends: a repeat of an event already logged writes nothing (see `append.lua`)."""


def retry_backoff() -> ExponentialBackoff:
    """The pause between those resends: 10 ms doubling, at most 0.5 s."""
    return ExponentialBackoff(cap=0.5, base=0.01)
