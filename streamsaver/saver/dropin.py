"""The spellings of langgraph-checkpoint-redis's savers, normalised to ours.

Its users write ``RedisSaver(redis_url=...)`` or ``RedisSaver("redis://...")``,
``redis_client=``, ``connection_args=`` and ``ttl={"default_ttl": minutes, "refresh_on_read": bool}``.
`client_source` says where a saver's client comes from and `ttl_options` turns the ``ttl``
dict into our ``default_ttl`` / ``refresh_on_read``; both refuse what contradicts itself with
`InvalidInputError` before any client is made.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from streamsaver.errors import InvalidInputError

__all__ = ["ClientSource", "client_source", "conn_string_source", "ttl_options"]

TTL_KEYS = frozenset({"default_ttl", "refresh_on_read"})


class ClientSource(NamedTuple):
    """Either a client the caller made (`client`, never closed by us) or a URL to connect to
    (`url`, with `connection_args` for ``from_url``)."""

    client: Any
    url: str | None
    connection_args: dict[str, Any]


def client_source(
    client_or_url: Any, redis_url: str | None, connection_args: Mapping[str, Any] | None
) -> ClientSource:
    """The client a saver runs on: `client_or_url` (our first argument, the peer's
    ``redis_client=``; a ``str`` there is a URL, as the peer's first argument is) or `redis_url`.

    Raises:
        InvalidInputError: both a client and a URL, two URLs, neither, or `connection_args`
            beside a client (they only shape a client made from a URL).
    """
    if isinstance(client_or_url, str):
        if redis_url is not None:
            raise InvalidInputError("pass the URL once: as the first argument or as redis_url=, not both")
        client_or_url, redis_url = None, client_or_url
    if client_or_url is not None and redis_url is not None:
        raise InvalidInputError("pass either a client (redis_client=) or a URL (redis_url=), not both")
    if client_or_url is None and redis_url is None:
        raise InvalidInputError("a saver needs a client (redis_client=) or a URL (redis_url=)")
    if client_or_url is not None and connection_args:
        raise InvalidInputError("connection_args shape a client made from redis_url=; this one was passed in made")
    return ClientSource(client_or_url, redis_url, dict(connection_args or {}))


def conn_string_source(
    url: str | None, redis_url: str | None, redis_client: Any, connection_args: Mapping[str, Any] | None
) -> ClientSource:
    """`client_source` for ``from_conn_string``, whose first argument is our `url` or the
    peer's `redis_url` (one of them), or its ``redis_client=``.

    Raises:
        InvalidInputError: as `client_source`, and `url` beside `redis_url`.
    """
    if url is not None and redis_url is not None:
        raise InvalidInputError("pass the URL once: as the first argument or as redis_url=, not both")
    return client_source(redis_client, url if url is not None else redis_url, connection_args)


def ttl_options(
    ttl: Mapping[str, Any] | None, default_ttl: float | None, refresh_on_read: bool
) -> tuple[float | None, bool]:
    """Our ``(default_ttl, refresh_on_read)`` from the peer's ``ttl`` dict (minutes, as ours).

    Raises:
        InvalidInputError: `ttl` is no mapping, has a key other than ``default_ttl`` and
            ``refresh_on_read``, or is given beside ``default_ttl=`` / ``refresh_on_read=True``.
    """
    if ttl is None:
        return default_ttl, refresh_on_read
    if not isinstance(ttl, Mapping):
        raise InvalidInputError(f"ttl must be a dict with keys {sorted(TTL_KEYS)}, not {type(ttl).__name__}")
    if unknown := set(ttl) - TTL_KEYS:
        raise InvalidInputError(f"ttl has unknown keys {sorted(map(str, unknown))}; it takes {sorted(TTL_KEYS)}")
    if default_ttl is not None or refresh_on_read:
        raise InvalidInputError("pass the TTL once: as ttl={...} or as default_ttl=/refresh_on_read=, not both")
    return ttl.get("default_ttl"), bool(ttl.get("refresh_on_read", False))
