"""Thread expiry without I/O: the TTL block the write scripts take, and pin / unpin / refresh.

Every key of a thread (log, positions, every view key) shares one deadline, the log's, so a
thread expires whole: log, views and, with its documents, its index entries. The deadline is
set inside the same script as the append (``append.lua``, ``rewrite.lua``: no extra round trip,
no key left without its TTL): keys the append touches get the log's deadline; when less than
half of the TTL is left (or none is set), every key of the thread gets the full TTL again, so
the cost of refreshing a long history is paid once per half-TTL, not per append.
`refresh_on_read` pipelines a ``ttl.lua`` "touch" with the read of `get_tuple` (one round trip).
A pinned thread (``@pinned`` in its positions hash) never expires until unpinned.
"""

from __future__ import annotations

from projectors import PROJECTORS
from streamsaver.errors import InvalidInputError
from streamsaver.log.events import ThreadDeleted
from streamsaver.log.keys import Keyspace
from streamsaver.scripts import TTL

__all__ = ["PINNED_FIELD", "ttl_block", "ttl_call", "ttl_ms"]

Arg = str | bytes | int

PINNED_FIELD = "@pinned"
"""Positions-hash field of a pinned thread (written and read by ``ttl.lua`` and ``_lib.lua``)."""


def ttl_ms(default_ttl: float | None) -> int:
    """The TTL in milliseconds of `default_ttl` minutes (LangGraph's unit); 0 for none.

    Raises:
        InvalidInputError: a TTL that is not a positive number.
    """
    if default_ttl is None:
        return 0
    if isinstance(default_ttl, bool) or not isinstance(default_ttl, (int, float)) or not default_ttl > 0:
        raise InvalidInputError(f"default_ttl must be a positive number of minutes, not {default_ttl!r}")
    return max(1, round(default_ttl * 60_000))


def ttl_block(keyspace: Keyspace, thread_id: str, ttl: int) -> list[Arg]:
    """The TTL block of a write script: the TTL, then per view the stems of its thread keys.

    Every view, not only those the calling saver projects: a view a projector worker keeps, or
    a replay built, holds keys of the thread too, and they must move with the log's deadline.
    """
    block: list[Arg] = [ttl, len(PROJECTORS)]
    for view in PROJECTORS:
        [(_, *stems)] = PROJECTORS[view](ThreadDeleted(thread_id), keyspace)
        block += stems
    return block


def ttl_call(keyspace: Keyspace, thread_id: str, ttl: int, mode: str) -> list[Arg]:
    """The ``ttl.lua`` call: mode ``touch``, ``pin``, ``unpin``, or ``at`` (then `ttl` is an
    absolute deadline in ms since the epoch, given to every key of the thread)."""
    keys = keyspace.thread(thread_id)
    return TTL.evalsha_args([keys.log, keys.positions], [mode, *ttl_block(keyspace, thread_id, ttl)])
