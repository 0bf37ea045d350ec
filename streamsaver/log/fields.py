"""Every stored field name, spelt once: stream fields of log entries and feed pointers, and the
reserved fields of the hashes the views and positions keep.

The Lua scripts spell the same names as string literals; ``tests/unit/test_stored_names.py``
checks each literal they use against the constant here, so the two cannot drift.
"""

from __future__ import annotations

__all__ = [
    "BASE_RECORD", "BODY", "BODY_POINTER", "CHANNEL_PREFIX", "CHECKPOINT_ID", "CURRENT_CHECKPOINT", "EMPTY_TYPE",
    "ENTRY_ID", "INCARNATION", "ITEM_EMBEDDING", "ITEM_EXPIRES", "ITEM_KEY", "ITEM_TTL", "ITEM_VALUE", "ITEM_VECTORS",
    "KEPT",
    "LABELS", "METADATA", "NAMESPACE", "OWNER", "PARENT", "PINNED",
    "REQUEUED_FOR", "RUN", "RUNS", "SOURCE", "STRATEGY", "TASK", "TASK_PATH", "THREAD", "TYPE", "UNTIL", "VERSION",
    "VERSIONS", "WRITER", "WRITE_PREFIX", "WRITTEN_AT",
]

# Stream fields of a log entry (`streamsaver.log.stored`); ``type`` and ``v`` lead every entry.
TYPE = b"type"
"""The event's type name (also a feed pointer's)."""
VERSION = b"v"
"""The schema version of the event's stored form."""
THREAD = b"thread"
"""The id of the log the event belongs to (a thread id)."""
NAMESPACE = b"ns"
CHECKPOINT_ID = b"cid"
PARENT = b"parent"
METADATA = b"meta"
VERSIONS = b"versions"
BODY = b"body"
"""The checkpoint body, packed ``(type, bytes)``."""
CHANNEL_PREFIX = b"c:"
"""``c:<escaped channel>``: one channel value, packed ``(channel, version JSON, type, bytes)``."""
WRITE_PREFIX = b"w:"
"""``w:<idx>``: one write, packed ``(channel, type, bytes)``."""
TASK = b"task"
TASK_PATH = b"path"
SOURCE = b"source"
UNTIL = b"until"
STRATEGY = b"strategy"
KEPT = b"kept"
RUNS = b"runs"
# Store events (`streamsaver.log.items`): the namespace as a JSON list of labels, the item key,
# its value (plain JSON), when it was written (microseconds) and its TTL (ms, "0": none).
LABELS = b"labels"
ITEM_KEY = b"key"
ITEM_VALUE = b"value"
WRITTEN_AT = b"at"
ITEM_TTL = b"ttl"
ITEM_VECTORS = b"vectors"
"""An ItemPut's embeddings, a JSON list of float lists (absent: none)."""
ITEM_EXPIRES = b"expires"
"""An ItemPut's kept deadline (version 2, only when set): Unix milliseconds."""
ITEM_EMBEDDING = b"embedding"
"""What computed an ItemPut's embeddings (version 2, only with vectors): a JSON object with the
model's name ``model``, the dimensions ``dims`` and, for a put's own paths, ``paths``."""
WRITER = b"writer"
"""Who wrote a store event (ItemPut version 3, ItemDeleted version 2): the store's ``writer=``."""
RUN = b"run"
"""The LangGraph run a store event was written in (same versions, only inside a run): a JSON
object of strings, ``thread_id``, ``checkpoint_ns``, ``run_id``, each only when the run's config
named it."""

EMPTY_TYPE = "empty"
"""The stored type of a channel value with a new version but no value (LangGraph's convention);
a reader looking for a channel's last value passes over it."""

ENTRY_ID = "id"
"""A feed pointer's first field: the log entry id it points at (``append.lua`` adds it)."""
REQUEUED_FOR = b"for"
"""A re-queued feed pointer's last field: the one subscriber group it is for
(`streamsaver.feeds.admin.requeue_dead_letters`); other groups acknowledge it unseen."""

# Reserved fields of the hashes views and positions keep (never a view name, channel or task).
BODY_POINTER = "@body"
"""Pointer-hash field of a body: the shallow view's latest, ``@body:<escaped id>`` in full."""
CURRENT_CHECKPOINT = "@cid"
"""Shallow pointer- and writes-hash field naming the checkpoint the hash belongs to."""
PINNED = "@pinned"
"""Positions-hash field of a pinned log (it never expires)."""
INCARNATION = "@inc"
"""Positions-hash field naming the log's incarnation: new whenever the log is made anew or
rewritten, so that a reader's held entries are of this log (`streamsaver.checkpoints.entry_cache`)."""
BASE_RECORD = "@base:"
"""Positions-hash field prefix of the record ``append.lua`` keeps of the last full value of a
namespace and channel, which a delta must link to (``@base:<length of ns>:<ns>c:<channel>``:
``<entry id> <field size> <version>``); dropped with every write that removes or rewrites log
entries (`streamsaver.checkpoints.delta_plan`)."""
OWNER = "@owner"
"""Positions-hash field holding the token of the thread's current write-ownership claim
(`streamsaver.checkpoints.ownership`)."""
