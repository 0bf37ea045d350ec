"""The command language projectors speak: plain Redis commands plus eight script-side ops.

A `Command` is a tuple of arguments exactly as sent to Redis. The ``SS.`` pseudo-commands are
interpreted by ``streamsaver/scripts/_lib.lua`` because they depend on stored state; the two
guards each gate the commands between them and the next guard (or the end of the list):

* ``SS.IFNEWER key field id``: run the commands that follow, up to the next guard, only when
  ``HGET key field`` is missing or sorts before ``id`` (a newer checkpoint replaces an older
  one, never the reverse).
* ``SS.IFEQ key field id``: a guard likewise, passing when ``HGET key field`` equals ``id``.
* ``SS.FOLLOW key field id``: when ``HGET key field`` is missing or sorts before ``id``, delete
  ``key`` and set ``field`` to ``id`` (a hash that belongs to the newest id seen starts afresh).
  Not a guard: it runs when the last guard passed, and leaves what follows to the next guard.
* ``SS.PTR key field...``: ``HSET key field <id>`` for each field, where ``<id>`` is the stream
  id of the event being applied: the fields point at the log entry that holds their payload.
* ``SS.PTRNX key field...``: the same with ``HSETNX`` for each field: keep the first pointer.
* ``SS.PURGE nsset cp ids ptrs writes``: delete every key of one view of one thread, found
  through the set of escaped namespaces ``nsset`` and the key stems ``cp``, ``ids``, ``ptrs``,
  ``writes`` (``ids`` empty when the view keeps one document per namespace).
* ``SS.ITEM key created json items stem counts ns expiring flag``: an item's put. ``SADD
  items stem``; for a new stem, ``HINCRBY counts ns 1`` and ``JSON.SET key $
  {"c":created,"i":json}``; else ``JSON.SET key $.i json`` (an upsert keeps its creation time),
  or the whole document when that fails (the document expired). Then ``ZADD expiring 0 stem``
  when `flag` is ``1``, else ``ZREM`` (skipped for a new stem). One document write either way.
* ``SS.NSREM items stem counts ns expiring``: when ``SREM items stem`` removes it,
  ``HINCRBY counts ns -1`` (the field deleted at 0) and ``ZREM expiring stem``.
"""

from __future__ import annotations

__all__ = [
    "FOLLOW", "IF_EQUAL", "IF_NEWER", "ITEM", "NAMESPACE_REMOVE", "POINT", "POINT_IF_NEW", "PURGE",
    "Arg", "Command",
]

Arg = str | bytes
Command = tuple[Arg, ...]

IF_NEWER = "SS.IFNEWER"
IF_EQUAL = "SS.IFEQ"
FOLLOW = "SS.FOLLOW"
PURGE = "SS.PURGE"
POINT = "SS.PTR"
POINT_IF_NEW = "SS.PTRNX"
ITEM = "SS.ITEM"
NAMESPACE_REMOVE = "SS.NSREM"
