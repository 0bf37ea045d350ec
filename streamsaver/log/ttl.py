"""Log expiry without I/O: the TTL block the write scripts take, and pin / unpin / refresh.

Every key of a log (the log, its positions, every view key) shares one deadline, the log's, so
a log expires whole: log, views and, with its documents, its index entries. The deadline is set
inside the same script as the append (``append.lua``, ``rewrite.lua``: no extra round trip, no
key left without its TTL): keys the append touches get the log's deadline; when less than half
of the TTL is left (or none is set), every key of the log gets the full TTL again, so the cost
of refreshing a long history is paid once per half-TTL, not per append. A pinned log
(`streamsaver.log.fields.PINNED` in its positions hash) never expires until unpinned.
"""

from __future__ import annotations

from streamsaver.log.domain import Domain
from streamsaver.log.keys import Keyspace

__all__ = ["MAX_TTL_MINUTES", "ttl_block", "ttl_call"]

Arg = str | bytes | int

MAX_TTL_MINUTES = 2**52 / 60_000
"""The longest TTL (minutes, LangGraph's unit; ~142,000 years): the scripts add it to the clock
as Lua numbers, which hold integers exactly to 2**53 only and pass larger ones to Redis as
``9e+18``, which ``PEXPIRE`` refuses after the write it follows."""


def ttl_block(domain: Domain, keyspace: Keyspace, thread_id: str, ttl: int) -> list[Arg]:
    """The TTL block of a write script: the TTL, then per view the stems of its log keys.

    Every view of the domain, not only those the caller projects: a view a projector worker
    keeps, or a replay built, holds keys of the log too, and they must move with its deadline.
    """
    block: list[Arg] = [ttl, len(domain.views)]
    for view in domain.view_names:
        block += domain.erase_stems(view, thread_id, keyspace)
    return block


def ttl_call(domain: Domain, keyspace: Keyspace, thread_id: str, ttl: int, mode: str) -> list[Arg]:
    """The ``ttl.lua`` call: mode ``touch``, ``pin``, ``unpin``, or ``at`` (then `ttl` is an
    absolute deadline in ms since the epoch, given to every key of the log)."""
    keys = keyspace.thread(thread_id)
    args = [mode, *ttl_block(domain, keyspace, thread_id, ttl)]
    script = domain.scripts.touch if mode == "touch" and domain.scripts.touch else domain.scripts.ttl
    return script.evalsha_args([keys.log, keys.positions], args)
