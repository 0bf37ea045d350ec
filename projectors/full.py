"""The full-history view: every checkpoint of every namespace, with its pending writes.

Per checkpoint one JSON document (indexed) and one writes hash; per namespace a sorted set of
checkpoint ids (lexical order = LangGraph's order) and a blobs hash holding each checkpoint body
and each channel value once per version, so a channel that did not change is not stored again.
Stored history never changes: a value already stored for a (channel, version) is kept.
"""

from __future__ import annotations

from typing import Final

from projectors.commands import PURGE, Command
from projectors._writes import store_writes
from projectors.documents import body_field, checkpoint_document, encode_blob, versioned_field
from streamsaver.codec import escape
from streamsaver.events import CheckpointSaved, Event, ThreadDeleted, WritesSaved
from streamsaver.keys import Keyspace, ViewName

__all__ = ["VIEW", "project"]

VIEW: Final[ViewName] = "full"


def project(event: Event, keyspace: Keyspace) -> list[Command]:
    """The commands that apply `event` to the full view."""
    keys = keyspace.thread(event.thread_id)
    if isinstance(event, CheckpointSaved):
        ns, cid = event.checkpoint_ns, event.checkpoint_id
        blobs = keys.in_ns(VIEW, "blobs", ns)
        refs = [body_field(cid)] + [versioned_field(ch, v) for ch, v in event.channel_versions.items()]
        commands: list[Command] = [
            ("JSON.SET", keys.per_checkpoint(VIEW, "cp", ns, cid), "$", checkpoint_document(event, refs)),
            ("HSET", blobs, body_field(cid), encode_blob(event.body)),
        ]
        commands += [
            ("HSETNX", blobs, versioned_field(cv.channel, cv.version), encode_blob(cv.blob))
            for cv in event.values
        ]
        commands += [
            ("ZADD", keys.in_ns(VIEW, "ids", ns), "0", cid),
            ("SADD", keys.namespaces(VIEW), escape(ns)),
        ]
        return commands
    if isinstance(event, WritesSaved):
        key = keys.per_checkpoint(VIEW, "writes", event.checkpoint_ns, event.checkpoint_id)
        return store_writes(key, event)
    assert isinstance(event, ThreadDeleted)
    return [
        (
            PURGE,
            keys.namespaces(VIEW),
            keys.base(VIEW, "cp"),
            keys.base(VIEW, "ids"),
            keys.base(VIEW, "blobs"),
            keys.base(VIEW, "writes"),
        )
    ]
