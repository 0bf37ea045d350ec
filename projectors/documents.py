"""The shape of a checkpoint document and of the pointer hashes, written and read in one place.

Views hold no payloads: every value lives once, in the thread log. A checkpoint document
(RedisJSON) holds what the index needs and `refs`, the names of its entries in the view's
pointer hash, each pointing at the log entry holding the payload (its stream id). Body first,
then one entry per channel of ``channel_versions``. The writes hash maps ``task:idx`` to the
entry of the write. ``streamsaver/scripts/_read.lua`` follows the pointers with the same naming:

* ``@body...`` -> stream field ``body``;
* ``<escaped channel>:<escaped version>`` (full) or ``<escaped channel>`` (shallow) -> field
  ``c:<escaped channel>``;
* writes-hash field ``<escaped task id>:<idx>`` -> fields ``task``, ``path``, ``w:<idx>``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import orjson

from streamsaver.log.codec import escape, metadata_tags, order_key, strict_json, tag
from streamsaver.log.events import CheckpointSaved
from streamsaver.log.fields import BODY_POINTER, CURRENT_CHECKPOINT

__all__ = [
    "BODY_FIELD",
    "CURRENT_CHECKPOINT_FIELD",
    "body_field",
    "channel_field",
    "checkpoint_document",
    "versioned_field",
    "write_field",
]

BODY_FIELD = BODY_POINTER
"""Shallow pointer-hash field of the latest body (full view: `body_field`)."""
CURRENT_CHECKPOINT_FIELD = CURRENT_CHECKPOINT
"""Shallow pointer- and writes-hash field naming the checkpoint the hash belongs to."""


def body_field(checkpoint_id: str) -> str:
    """Full-view pointer-hash field of one checkpoint's body."""
    return f"{BODY_POINTER}:{escape(checkpoint_id)}"


@lru_cache(maxsize=65536, typed=True)  # 1, 1.0 and True spell differently
def versioned_field(channel: str, version: str | float) -> str:
    """Full-view pointer-hash field of one channel at one version."""
    # Cached: every checkpoint names every channel's version, most of them unchanged.
    return f"{escape(channel)}:{escape(orjson.dumps(version).decode())}"


@lru_cache(maxsize=65536)
def channel_field(channel: str) -> str:
    """Shallow-view pointer-hash field of one channel's latest value."""
    # Cached: every checkpoint names every channel, twice in the shallow view's commands.
    return escape(channel)


def write_field(task_id: str, idx: int) -> str:
    """Writes-hash field of one write: unique per task and index."""
    return f"{escape(task_id)}:{idx}"


def checkpoint_document(event: CheckpointSaved, refs: Sequence[str]) -> bytes:
    """The JSON document of a checkpoint: ``strict_json({**head, "refs": list(refs), **tail})``.

    Ids are indexed as digests (`streamsaver.log.codec.tag`) and every top-level metadata pair as
    one tag in ``mt``, so any equality filter is one TAG query and no input can alter a query.
    """
    before, after = _indexed_json(event)
    return before + strict_json(refs) + after


Fields = dict[str, Any]
_last: tuple[CheckpointSaved | None, bytes, bytes] = (None, b"", b"")


def _indexed_json(event: CheckpointSaved) -> tuple[bytes, bytes]:
    """The document's JSON before and after the value of ``refs``, remembered for the last
    event seen: each view writes a document of the same event (only ``refs`` differ), and the
    digests and the metadata's JSON cost most."""
    global _last  # noqa: PLW0603 -- a one-slot cache, swapped whole so that readers on other threads see a consistent triple
    last = _last  # one read: another thread may replace it between a check and a use
    if last[0] is event:
        return last[1], last[2]
    head, tail = _indexed_fields(event)
    # Compact JSON of distinct keys: the head's object without its "}", then refs, then the
    # tail's pairs, is byte for byte the JSON of the merged object.
    before = strict_json(head)[:-1] + b',"refs":'
    after = b"," + strict_json(tail)[1:] if tail else b"}"
    _last = (event, before, after)
    return before, after


def _indexed_fields(event: CheckpointSaved) -> tuple[Fields, Fields]:
    """The fields of `event`'s document before and after ``refs``."""
    metadata: Mapping[str, Any] = event.metadata
    head: Fields = {
        "thread_id": event.thread_id,
        "checkpoint_ns": event.checkpoint_ns,
        "checkpoint_id": event.checkpoint_id,
        "parent_checkpoint_id": event.parent_checkpoint_id,
        "th": tag(event.thread_id),
        "nh": tag(event.checkpoint_ns),
        "tk": escape(event.thread_id),
        "nk": escape(event.checkpoint_ns),
        "ck": order_key(event.checkpoint_id),
        "ph": tag(event.parent_checkpoint_id or ""),
        "mt": metadata_tags(sorted(metadata.items())),
        "metadata": metadata,
    }
    tail: Fields = {}
    source, step, run_id = metadata.get("source"), metadata.get("step"), metadata.get("run_id")
    if isinstance(source, str):
        tail["source"] = source
    # A NaN or infinite step is null in JSON, so in the log too: the document has none either.
    if (isinstance(step, int) and not isinstance(step, bool)) or (isinstance(step, float) and math.isfinite(step)):
        tail["step"] = step
    if isinstance(run_id, str):
        tail["rh"] = tag(run_id)
    return head, tail
