"""The shallow view: only the latest checkpoint of each (thread, namespace), with its writes.

Per namespace one JSON document (indexed), one blobs hash (body and the latest value of each
channel, stored with its version) and one writes hash whose ``@cid`` field names the checkpoint
the writes belong to. A checkpoint older than the one held is ignored; writes for any checkpoint
but the one held are ignored.
"""

from __future__ import annotations

from typing import Final

from projectors.commands import IF_EQUAL, IF_NEWER, PURGE, Command
from projectors._writes import store_writes
from projectors.documents import (
    BODY_FIELD,
    CURRENT_CHECKPOINT_FIELD,
    channel_field,
    checkpoint_document,
    encode_blob,
    encode_versioned_blob,
)
from streamsaver.codec import escape
from streamsaver.events import CheckpointSaved, Event, ThreadDeleted, WritesSaved
from streamsaver.keys import Keyspace, ViewName

__all__ = ["VIEW", "project"]

VIEW: Final[ViewName] = "shallow"


def project(event: Event, keyspace: Keyspace) -> list[Command]:
    """The commands that apply `event` to the shallow view."""
    keys = keyspace.thread(event.thread_id)
    if isinstance(event, CheckpointSaved):
        ns, cid = event.checkpoint_ns, event.checkpoint_id
        writes = keys.in_ns(VIEW, "writes", ns)
        refs = [BODY_FIELD] + [channel_field(ch) for ch in event.channel_versions]
        values: list[str | bytes] = [BODY_FIELD, encode_blob(event.body)]
        for cv in event.values:
            values += [channel_field(cv.channel), encode_versioned_blob(cv.version, cv.blob)]
        return [
            (IF_NEWER, writes, CURRENT_CHECKPOINT_FIELD, cid),
            ("DEL", writes),
            ("HSET", writes, CURRENT_CHECKPOINT_FIELD, cid),
            ("JSON.SET", keys.in_ns(VIEW, "cp", ns), "$", checkpoint_document(event, refs)),
            ("HSET", keys.in_ns(VIEW, "blobs", ns), *values),
            ("SADD", keys.namespaces(VIEW), escape(ns)),
        ]
    if isinstance(event, WritesSaved):
        writes = keys.in_ns(VIEW, "writes", event.checkpoint_ns)
        return [(IF_EQUAL, writes, CURRENT_CHECKPOINT_FIELD, event.checkpoint_id), *store_writes(writes, event)]
    assert isinstance(event, ThreadDeleted)
    return [(PURGE, keys.namespaces(VIEW), keys.base(VIEW, "cp"), "", keys.base(VIEW, "blobs"), keys.base(VIEW, "writes"))]
