"""The shallow view: only the latest checkpoint of each (thread, namespace), with its writes.

Per namespace one JSON document (indexed), one pointer hash (``@cid``: the checkpoint held, and
for its body and each channel the log entry holding the latest value; reads check the version
stored there) and one writes hash whose ``@cid`` names the checkpoint its writes belong to.

LangGraph saves a step's writes concurrently with the step's checkpoint, so the log may hold
writes before the checkpoint they belong to. The writes hash therefore follows the newest
checkpoint id seen in either event: writes for a newer checkpoint start a fresh hash, and that
checkpoint, arriving later, keeps them. A checkpoint older than the one held is ignored, and so
are writes older than the newest checkpoint seen. Reads return the writes only while the hash
belongs to the checkpoint held (between the two events the held one shows none; the full view
keeps every checkpoint's writes).
"""

from __future__ import annotations

from typing import Final

from projectors._writes import store_writes
from projectors.commands import FOLLOW, IF_EQUAL, IF_NEWER, POINT, PURGE, Command
from projectors.documents import (
    BODY_FIELD,
    CURRENT_CHECKPOINT_FIELD,
    channel_field,
    checkpoint_document,
)
from streamsaver.log.codec import escape
from streamsaver.log.events import (
    CheckpointSaved,
    Event,
    ThreadDeleted,
    ValuesRetained,
    WritesSaved,
)
from streamsaver.log.keys import Keyspace, ViewName

__all__ = ["VIEW", "project"]

VIEW: Final[ViewName] = "shallow"


def _retained(event: ValuesRetained, keyspace: Keyspace) -> list[Command]:
    """The values of a removed checkpoint, pointed at as its `CheckpointSaved` did (same guard),
    without a document: a newer checkpoint held keeps its own pointers."""
    if not event.values:
        return []
    keys = keyspace.thread(event.thread_id)
    ns = event.checkpoint_ns
    ptrs = keys.in_ns(VIEW, "ptrs", ns)
    return [
        ("SADD", keys.namespaces(VIEW), escape(ns)),
        (IF_NEWER, ptrs, CURRENT_CHECKPOINT_FIELD, event.checkpoint_id),
        (POINT, ptrs, *(channel_field(cv.channel) for cv in event.values)),
    ]


def project(event: Event, keyspace: Keyspace) -> list[Command]:
    """The commands that apply `event` to the shallow view."""
    keys = keyspace.thread(event.thread_id)
    if isinstance(event, CheckpointSaved):
        ns, cid = event.checkpoint_ns, event.checkpoint_id
        writes = keys.in_ns(VIEW, "writes", ns)
        refs = [BODY_FIELD] + [channel_field(ch) for ch in event.channel_versions]
        ptrs = keys.in_ns(VIEW, "ptrs", ns)
        return [
            (FOLLOW, writes, CURRENT_CHECKPOINT_FIELD, cid),  # writes of a newer checkpoint start afresh
            (IF_NEWER, ptrs, CURRENT_CHECKPOINT_FIELD, cid),
            ("JSON.SET", keys.in_ns(VIEW, "cp", ns), "$", checkpoint_document(event, refs)),
            ("HSET", ptrs, CURRENT_CHECKPOINT_FIELD, cid),
            (POINT, ptrs, BODY_FIELD, *(channel_field(cv.channel) for cv in event.values)),
            ("SADD", keys.namespaces(VIEW), escape(ns)),
        ]
    if isinstance(event, WritesSaved):
        writes = keys.in_ns(VIEW, "writes", event.checkpoint_ns)
        cid = event.checkpoint_id
        return [
            (FOLLOW, writes, CURRENT_CHECKPOINT_FIELD, cid),
            (IF_EQUAL, writes, CURRENT_CHECKPOINT_FIELD, cid),
            *store_writes(writes, event),
        ]
    if isinstance(event, ValuesRetained):
        return _retained(event, keyspace)
    if not isinstance(event, ThreadDeleted):
        return []  # a marker (ThreadCopied, ThreadPruned, RunsDeleted) changes no view
    return [
        (PURGE, keys.namespaces(VIEW), keys.base(VIEW, "cp"), "", keys.base(VIEW, "ptrs"), keys.base(VIEW, "writes")),
        ("DEL", keys.audit),  # the agent audit beside the log goes with the thread (streamsaver.middleware)
    ]
