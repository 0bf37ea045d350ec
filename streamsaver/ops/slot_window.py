"""Dropping an index RediSearch answers ``MOVED`` for, inside a slot made ``IMPORTING`` for the
drop, and the slot's state always made stable again.

A primary's index named for a hash tag whose slot another primary owns (a slot move left it,
`streamsaver.ops.stale_indexes`) cannot be named by any command there: RediSearch routes
``FT.DROPINDEX`` by the index name as by a key and answers ``MOVED``. A primary importing a slot
serves a command for it after ``ASKING``, so the drop runs between ``CLUSTER SETSLOT <slot>
IMPORTING <owner>`` and ``CLUSTER SETSLOT <slot> STABLE`` (``STABLE``, not ``NODE <owner>``:
``NODE`` to another node leaves an importing state in place, and the owner never changed).

The importing state is the node's, not the connection's, so it outlives a lost connection: if
any step fails (a connection lost after ``IMPORTING`` took effect, its reply never read, is
one), ``STABLE`` is sent again on the node's client (which reconnects) and then on a connection
of its own; if both fail, `SlotLeftImportingError` names the command to run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from redis.exceptions import RedisError

from streamsaver.errors import ConcurrentChangeError, SlotLeftImportingError

__all__ = ["NamedElsewhere", "drop_in_importing_window", "make_stable"]


class NamedElsewhere(Protocol):
    """An index named for a slot its primary does not own (`streamsaver.ops.stale_indexes.StaleIndex`)."""

    @property
    def node(self) -> str: ...  # its primary (``host:port``)
    @property
    def name(self) -> str: ...
    @property
    def slot(self) -> int: ...  # the slot its name's hash tag hashes to
    @property
    def owner_id(self) -> str: ...  # the node id of that slot's owner


def _text(value: Any) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)


def _moving(connection: Any) -> bool:
    """Whether the node of `connection` sees a slot migrating or importing (``CLUSTER NODES``)."""
    nodes = _text(connection.execute_command("CLUSTER", "NODES"))
    return "->-" in nodes or "-<-" in nodes


def drop_in_importing_window(node: Any, index: NamedElsewhere, command: Sequence[Any]) -> Any:
    """The reply of `command` (``FT.DROPINDEX`` of `index`, or a script naming it as its key),
    sent on `node` (a primary's client, which does not own the slot of `index`'s name) after
    ``ASKING``, between ``SETSLOT IMPORTING`` and ``SETSLOT STABLE``; the slot is made stable
    again whatever fails.

    Raises:
        ConcurrentChangeError: a slot is migrating or importing on `node` (nothing was sent).
        SlotLeftImportingError: a step failed and so did making the slot stable again (the
            step's error is further down its chain of ``__context__``).
        RedisError: a step failed (the slot was made stable again; so it is for any exception).
    """
    if _moving(node):
        raise ConcurrentChangeError(f"slots are moving on {index.node}: drop {index.name} once they are not")
    try:
        _set_importing(node, index)
        pipe = node.pipeline(transaction=False)  # one connection: ASKING holds for its next command
        pipe.execute_command("ASKING")
        pipe.execute_command(*command)
        reply = pipe.execute()[1]
    except BaseException:  # Ctrl-C or a bug's error too: the IMPORTING state outlives this process
        make_stable(node, index)
        raise
    make_stable(node, index)
    return reply


def _set_importing(node: Any, index: NamedElsewhere) -> None:
    """``CLUSTER SETSLOT <slot> IMPORTING <owner>`` on `node`: the window opens."""
    node.execute_command("CLUSTER", "SETSLOT", index.slot, "IMPORTING", index.owner_id)


def make_stable(node: Any, index: NamedElsewhere) -> None:
    """``CLUSTER SETSLOT <slot> STABLE`` on the primary of `node` (its client): once on the
    client (a lost connection is made anew), then on a connection of its own.

    Raises:
        SlotLeftImportingError: both were refused or failed.
    """
    command = ("CLUSTER", "SETSLOT", index.slot, "STABLE")
    try:
        node.execute_command(*command)
        return
    except RedisError:
        pass  # the client's connection may be the one lost: the same once more, on a connection of its own
    pool = node.connection_pool
    connection = pool.connection_class(**pool.connection_kwargs)
    try:
        connection.send_command(*command)
        connection.read_response()
    except RedisError as failed:
        raise SlotLeftImportingError(index.node, index.slot, failed) from failed
    finally:
        connection.disconnect()
