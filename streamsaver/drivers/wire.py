"""What both saver twins need of a redis-py client, without decisions: the client check, the
pipelining of command lists, and the resend policy for dropped connections. Re-exported by
`streamsaver.checkpoints.core`, where callers have always found them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from redis.backoff import ExponentialBackoff
from redis.exceptions import BusyLoadingError, NoScriptError, RedisError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from streamsaver.errors import ConfigurationError, ServerTimeoutError, ServerUnavailableError
from streamsaver.log.routing import Routed, Step

__all__ = [
    "CONNECTION_RETRIES",
    "CONNECT_TIMEOUT_S",
    "LOADING_PAUSE_S",
    "LOADING_RETRIES",
    "SERVER_ERRORS",
    "SOCKET_TIMEOUT_S",
    "Command",
    "check_client",
    "client_options",
    "enqueue",
    "failed_reply",
    "final_error",
    "named_server_error",
    "not_run",
    "retry_backoff",
    "still_loading",
]

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


_SCRIPT_CALLS = frozenset({"EVALSHA", "EVALSHA_RO", "EVAL", "EVAL_RO", "FCALL", "FCALL_RO"})


def not_run(steps: Sequence[Step], replies: Sequence[Any], refusal: type[Exception] = NoScriptError) -> list[int]:
    """The positions of `steps` to send again once what the server refused them for is over (a
    ``NOSCRIPT``: once the scripts are loaded again; a ``LOADING``, `refusal`
    ``BusyLoadingError``: once the server has loaded its data; `streamsaver.log.program.Call`):
    the script calls refused with `refusal` (they ran nothing), and every command that is not a
    script call (a read, a durability wait, ``TIME``: harmless to repeat, and sent again they
    see the writes sent again). A script call with any other reply ran (on a cluster, on a
    primary that was not refusing; on one server, a script the server still held or ran before
    it began loading) and is not sent again: an append would be logged twice."""
    again = []
    for n, (step, reply) in enumerate(zip(steps, replies, strict=True)):
        head = (step.command if isinstance(step, Routed) else step)[0]
        name = head.decode() if isinstance(head, bytes) else str(head)
        if isinstance(reply, refusal) or name.upper() not in _SCRIPT_CALLS:
            again.append(n)
    return again


def still_loading(replies: Sequence[Any]) -> BusyLoadingError | None:
    """The first ``LOADING`` refusal among `replies` (a server still reading its data: the step
    ran nothing there), if any."""
    return next((reply for reply in replies if isinstance(reply, BusyLoadingError)), None)


def final_error(replies: Sequence[Any]) -> Exception | None:
    """The error a call whose resends are over ends with: a ``LOADING`` first (the call is not
    whole: the server is unavailable, whatever else it refused), then as `failed_reply`."""
    return still_loading(replies) or failed_reply(replies)


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


CONNECT_TIMEOUT_S = 5.0
"""``socket_connect_timeout`` of a client the library makes (`client_options`)."""

SOCKET_TIMEOUT_S = 10.0
"""``socket_timeout`` of a client the library makes: a stopped or cut-off server fails a call
after this long (a timeout is not resent: the caller decides), where redis-py waits forever."""

LOADING_RETRIES = 20
"""How often a driver sends again the steps of a call a server refused with ``LOADING`` (a
restarting server reading its data; on a cluster, only the steps of the primaries that refused:
`not_run`), `LOADING_PAUSE_S` apart, before it gives up with `ServerUnavailableError`."""

LOADING_PAUSE_S = 0.25

SERVER_ERRORS = (RedisConnectionError, RedisTimeoutError)
"""redis-py's errors that `named_server_error` names."""


def client_options(given: Mapping[str, Any] | None = None, *, retry_class: type[Any] = Retry) -> dict[str, Any]:
    """The options of a client the library makes (``from_conn_string``, the CLI), each
    overridden by `given` (and by the URL's own query, which ``from_url`` reads last): connect
    and socket timeouts, and a ``Retry`` (`retry_class`: the asyncio one for asyncio clients)
    that resends a call whose connection dropped, not one that timed out."""
    retry = retry_class(retry_backoff(), CONNECTION_RETRIES, supported_errors=(RedisConnectionError,))
    defaults = {"retry": retry, "socket_connect_timeout": CONNECT_TIMEOUT_S, "socket_timeout": SOCKET_TIMEOUT_S}
    return {**defaults, **(given or {})}


def named_server_error(error: RedisError) -> ServerUnavailableError:
    """`error` (one of `SERVER_ERRORS`) as the streamsaver error a saver raises for it."""
    kind = ServerTimeoutError if isinstance(error, RedisTimeoutError) else ServerUnavailableError
    loading = " (still loading its data)" if isinstance(error, BusyLoadingError) else ""
    return kind(f"the Redis server did not answer{loading}: {error}")
