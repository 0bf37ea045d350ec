"""What the ``streamsaver`` command says when a command fails: one line naming a cause the
operator can act on, rather than the reply of whichever command first met it.

A server without RediSearch or RedisJSON shows up as "no streamsaver deployment" (there can be
none) or as ``unknown command 'FT._LIST'``: on such a failure the server is asked (two commands)
and, when a module is missing, the library's `MissingModuleError` message is what is said. A
server that wants a password answers ``HELLO`` or the first command with ``NOAUTH``: say that a
password is needed and where it goes. A server that does not answer: a hint to start one.
"""

from __future__ import annotations

from typing import Any

import redis

from streamsaver.errors import ConfigurationError, MissingModuleError

__all__ = ["explain", "missing_module", "one_line"]

PASSWORD_NEEDED = ("noauth", "must be called with the client already authenticated", "authentication required")
PASSWORD_REFUSED = ("wrongpass", "invalid username-password pair", "invalid password")
START_ONE = (
    "is a Redis server running there? 'streamsaver server' starts a local one with the search and JSON "
    "modules; --url or REDIS_URL names another"
)


def one_line(exc: BaseException) -> str:
    """The exception's message on one line (its type's name when it has none)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def explain(exc: BaseException, url: str | None) -> str:
    """The line to print for `exc`, raised by a command run against `url` (None: no server)."""
    text = one_line(exc)
    lowered = text.lower()
    if any(phrase in lowered for phrase in PASSWORD_NEEDED):
        return (
            "the server needs a password: give it in the URL, redis://:PASSWORD@host:port/0 "
            "(or redis://USER:PASSWORD@host:port/0 for an ACL user)"
        )
    if any(phrase in lowered for phrase in PASSWORD_REFUSED):
        return "the server refused the user name or password given in the URL"
    if isinstance(exc, (redis.ConnectionError, redis.TimeoutError)):
        return f"{text} ({START_ONE})"
    if url and isinstance(exc, (ConfigurationError, redis.ResponseError)) and not isinstance(exc, MissingModuleError):
        missing = missing_module(url)
        if missing is not None:
            return one_line(missing)
    return text


def missing_module(url: str) -> MissingModuleError | None:
    """The module the server at `url` lacks (RediSearch first), or None: it has both, or it
    could not be asked."""
    probes = (("RediSearch (search)", ["FT._LIST"]), ("RedisJSON (ReJSON)", ["JSON.TYPE", "streamsaver:probe"]))
    try:
        client = redis.Redis.from_url(url)
    except ValueError:
        return None
    try:
        for module, command in probes:
            if _unknown(client, command):
                return MissingModuleError(module, command[0])
    except redis.RedisError:
        return None  # the question failed too: the original error says more
    finally:
        client.close()
    return None


def _unknown(client: Any, command: list[str]) -> bool:
    """Whether the server answers `command` with "unknown command" (other errors: False)."""
    try:
        client.execute_command(*command)
    except redis.ResponseError as reply:
        return "unknown command" in str(reply).lower()
    return False
