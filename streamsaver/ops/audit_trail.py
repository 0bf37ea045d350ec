"""A thread's agent audit events (``P:audit:{pN}:<thread>``, written by
`streamsaver.middleware.audit.AuditMiddleware`), read for ``streamsaver inspect``."""

from __future__ import annotations

from typing import Any

from redis import Redis

from streamsaver.log.deployment import keyspace_of
from streamsaver.log.keys import Keyspace

__all__ = ["thread_audit"]


def thread_audit(client: Redis, prefix: str, thread_id: str) -> list[dict[str, str]]:
    """The audit events of `thread_id` under `prefix`, oldest first, each with its entry ``id``
    ([] when the thread's calls were never audited).

    Raises:
        ConfigurationError: no deployment under `prefix`.
    """
    keyspace = keyspace_of(prefix, client.hget(Keyspace(prefix).meta, "partitions"))
    reply: Any = client.xrange(keyspace.thread(thread_id).audit)
    return [{"id": entry_id.decode(), **{k.decode(): v.decode("utf-8", "replace") for k, v in fields.items()}}
            for entry_id, fields in reply]
