"""Every error streamsaver raises on purpose.

The tree::

    StreamSaverError                 base of everything below
    ├── ConfigurationError           a saver or client set up in a way that cannot work
    │   ├── MissingModuleError       the Redis server lacks RediSearch or RedisJSON
    │   ├── EvictionPolicyError      the server evicts keys when full, and the user did not allow it
    │   ├── SettingsLostError        a deployment's data exists but its settings (partition count) are gone
    │   ├── InlineViewsError         a saver's projections disagree with the inline views its deployment records
    │   ├── MiddlewareConfigError    an agent middleware that cannot work (no embedding, wrong dims, policy)
    │   ├── IndexMissingError        an index is gone and this user may not create it (run setup as admin)
    │   └── IndexConfigMismatchError a store's index config differs from the items index its deployment has
    ├── InvalidInputError            (also ValueError) a call's input was rejected before any write
    │   └── ThreadExistsError        copy_thread was refused: the target thread already has a log
    ├── ConcurrentChangeError        a log rewrite (prune, delete_for_runs) kept racing new appends
    ├── SlotLeftImportingError       drop-stale-indexes could not make a slot it set IMPORTING stable again
    ├── WrongKeyTypeError            a key an append would write holds another type (nothing written)
    ├── StaleWriteOwnerError         a write of a superseded owner of a thread was refused (nothing written)
    ├── EventDecodeError             a stored event cannot be read (unknown type or version, bad field)
    │   └── PayloadDecodeError       (also ValueError) a payload a view points at is missing or unreadable
    ├── IndexNotReadyError           a listing's index was still indexing when the wait for it ran out
    ├── DurabilityError              an append was made but not confirmed durable (AOF fsync, replica)
    ├── ServerUnavailableError       (also ConnectionError) the server could not be reached or is loading
    │   └── ServerTimeoutError       (also TimeoutError) the server did not answer within the timeout
    ├── EmbeddedServerError          the embedded Redis could not be found or started
    ├── ExportFileError              an export file cannot be imported: not one, newer, truncated, corrupt
    ├── ReplayJobError               a process of a parallel replay failed or died
    └── TargetNotEmptyError          an import was refused: the target prefix already holds keys

`ServerUnavailableError` and `ServerTimeoutError` are what a saver's or a store's call raises
for redis-py's connection and timeout errors, and for a server still loading its data after the
driver's waits (the original is the ``__cause__``); they subclass the builtin
``ConnectionError`` and ``TimeoutError``. A call failed so was applied whole or not at all.

`PayloadDecodeError` subclasses `ValueError` as the serde's own decoding errors do.
`InvalidInputError` subclasses `ValueError` because LangGraph code and users catch `ValueError`
for a missing `thread_id`; a rejected call never changes the log or the views.
"""

from __future__ import annotations

__all__ = [
    "ConcurrentChangeError",
    "ConfigurationError",
    "DurabilityError",
    "EmbeddedServerError",
    "EventDecodeError",
    "EvictionPolicyError",
    "ExportFileError",
    "IndexConfigMismatchError",
    "IndexMissingError",
    "IndexNotReadyError",
    "InlineViewsError",
    "InvalidInputError",
    "MiddlewareConfigError",
    "MissingModuleError",
    "PayloadDecodeError",
    "ReplayJobError",
    "ServerTimeoutError",
    "ServerUnavailableError",
    "SettingsLostError",
    "SlotLeftImportingError",
    "StaleWriteOwnerError",
    "StreamSaverError",
    "TargetNotEmptyError",
    "ThreadExistsError",
    "WrongKeyTypeError",
]


class StreamSaverError(Exception):
    """Base class of every error raised by streamsaver."""


class ConfigurationError(StreamSaverError):
    """The saver, its client or its server is configured in a way that cannot work."""


class InlineViewsError(ConfigurationError):
    """A saver's `projections` disagree with the views its deployment projects inline (recorded by
    the first `setup()` in the settings hash ``P:meta``, field ``views``): its writes would leave
    a view half-projected. Nothing was written. The message names both and how to change the
    deployment's views (docs/worker.md)."""


class MissingModuleError(ConfigurationError):
    """The Redis server lacks a module streamsaver needs (RediSearch or RedisJSON)."""

    def __init__(self, module: str, command: str) -> None:
        super().__init__(
            f"The Redis server has no {module} module (the command {command} is unknown). "
            "streamsaver needs Redis 8 (its search and JSON modules are built in), Redis Stack, "
            "or `pip install 'streamsaver[embedded]'` to run a local server with both modules."
        )
        self.module = module


class EvictionPolicyError(ConfigurationError):
    """`setup()` was refused: the server's ``maxmemory-policy`` (``allkeys-*``, ``volatile-*``)
    deletes keys when memory is full, which loses acknowledged checkpoints and the deployment's
    settings without an error. Set ``noeviction``, or pass ``allow_eviction=True``."""


class SettingsLostError(ConfigurationError):
    """`setup()` was refused: the deployment's indexes hold documents (its data exists) but its
    settings hash (``<prefix>:meta``, the partition count) is gone (deleted, evicted, a partial
    restore). Setting it up again with a guessed count would re-partition the deployment:
    threads would vanish and writes fork. Nothing was written. Restore the settings with
    ``streamsaver restore-settings --partitions N`` (it checks N against the logs), then start."""


class MiddlewareConfigError(ConfigurationError):
    """An agent middleware (`streamsaver.middleware`) was refused at construction: its store has
    no embedding index where one is needed, the embeddings' dimensions disagree with the index,
    or its namespace policy, threshold or TTL cannot work."""


class IndexMissingError(ConfigurationError):
    """An index the deployment reads is missing (never set up, dropped or lost) and the
    connected user may not create it (the runtime ACL grants no ``FT.CREATE``): run `setup()`
    or ``streamsaver setup`` as the deployment's admin user (docs/security.md)."""


class IndexConfigMismatchError(ConfigurationError):
    """A store's setup found the deployment's items index made with another index config
    (vectors, their dimensions, metric, algorithm or type, or text fields): the index is not
    changed under the items it serves; the message says how to move it to the new config."""


class IndexNotReadyError(StreamSaverError):
    """A listing's index was still indexing the documents already there (just created, or
    re-created after it was lost) when the bounded wait for it ran out: an answer would have
    missed some of them, so none was given. Call again later."""


class InvalidInputError(StreamSaverError, ValueError):
    """A call's input was rejected before anything was written."""


class EventDecodeError(StreamSaverError):
    """A stored event cannot be decoded: unknown type, unknown schema version or a bad field."""

    def __init__(self, message: str, *, event_id: str | None = None) -> None:
        super().__init__(f"{message} (event {event_id})" if event_id else message)
        self.event_id = event_id


class DurabilityError(StreamSaverError):
    """An append was made, but the server did not confirm it durable (fsynced to the AOF, or
    acknowledged by a replica) within the saver's `durability_timeout_ms`. Calling again is
    safe: a repeat of an event already logged writes nothing."""


class PayloadDecodeError(EventDecodeError, ValueError):
    """A payload a view points at cannot be read: the log entry lacks it, it is malformed, or the
    serde rejects it (e.g. an `EncryptedSerializer` whose MAC check fails on a tampered or
    foreign payload). `event_id` names the log entry; only the checkpoint read fails."""


class ServerUnavailableError(StreamSaverError, ConnectionError):
    """The Redis server could not be reached, dropped the connection more often than the client's
    ``Retry`` allows, or was still loading its data after the saver's pauses for it. The call
    was applied whole or not at all (an append is one atomic script, and a connection cut while
    the server holds the request may still run it): calling again is safe, a repeat of an event
    already logged writes nothing."""


class ServerTimeoutError(ServerUnavailableError, TimeoutError):
    """The server did not answer within the client's ``socket_timeout`` (or
    ``socket_connect_timeout``): stopped, overloaded or cut off. As for its parent, the call
    was applied whole or not at all, and calling again is safe."""


class EmbeddedServerError(StreamSaverError):
    """The embedded Redis server could not be found or started."""


class ExportFileError(StreamSaverError):
    """An export file cannot be imported: not an export, a newer format, truncated or corrupt."""


class ReplayJobError(StreamSaverError):
    """A process of a parallel replay failed or died; the others were stopped. Replaying again
    with ``keep`` resumes: every view records per thread the last event it applied."""


class TargetNotEmptyError(StreamSaverError):
    """An import was refused because its target prefix already holds keys; nothing was written."""


class ThreadExistsError(InvalidInputError):
    """`copy_thread` was refused because the target thread already has a log; nothing was written."""


class ConcurrentChangeError(StreamSaverError):
    """A log rewrite gave up: the thread's log changed under it at every attempt; nothing was
    written by the attempts that lost."""


class SlotLeftImportingError(StreamSaverError):
    """`streamsaver drop-stale-indexes` set a slot ``IMPORTING`` on a primary to drop an index
    there, and could not make it ``STABLE`` again (on the client, then on a connection of its
    own). The message names the command an operator runs on that primary; until then the
    primary serves that slot to any client sending ``ASKING``."""

    def __init__(self, node: str, slot: int, failure: Exception) -> None:
        self.node = node
        self.slot = slot
        self.command = f"CLUSTER SETSLOT {slot} STABLE"
        super().__init__(f"slot {slot} is left IMPORTING on {node} ({failure}): run `{self.command}` on {node} "
                         f"(redis-cli -h {node.rpartition(':')[0]} -p {node.rpartition(':')[2]} {self.command})")


class StaleWriteOwnerError(StreamSaverError):
    """A write through a claim of a thread (`StreamSaver.claim_write_ownership`) was refused:
    a later claim superseded it, or the thread was deleted or expired since. Nothing was
    written, and every later write of this claim is refused the same way; claim again to write.

    ``is_stale_write_owner_error`` is the marker LangGraph's conformance suite recognises the
    refusal by (its ``write_ownership`` capability)."""

    is_stale_write_owner_error = True

    def __init__(self, thread_id: str, detail: str) -> None:
        super().__init__(f"write refused: this owner of thread {thread_id!r} has been superseded ({detail})")
        self.thread_id = thread_id


class WrongKeyTypeError(StreamSaverError):
    """An append was refused before its first write: a key it would write (the thread's log, feed
    or positions, or a view key) holds another type than streamsaver gives it (a damaged
    deployment, or another application's key under the prefix). Nothing was written, the log
    entry neither. The message names the key; `verify` and `replay --view` repair a view key."""
