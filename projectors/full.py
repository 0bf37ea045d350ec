"""The full-history view: every checkpoint of every namespace, with its pending writes.

Per checkpoint one JSON document (indexed) and one writes hash; per namespace a sorted set of
checkpoint ids (lexical order = LangGraph's order) and a pointer hash naming, for each checkpoint
body and each (channel, version), the log entry that holds it. Payloads stay in the log, once;
a channel that did not change costs nothing. Stored history never changes: the first pointer to
a (channel, version) is kept.
"""

from __future__ import annotations

from typing import Final

from projectors._writes import store_writes
from projectors.commands import POINT, POINT_IF_NEW, PURGE, Command
from projectors.documents import body_field, checkpoint_document, versioned_field
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

VIEW: Final[ViewName] = "full"


def project(event: Event, keyspace: Keyspace) -> list[Command]:
    """The commands that apply `event` to the full view."""
    keys = keyspace.thread(event.thread_id)
    if isinstance(event, CheckpointSaved):
        ns, cid = event.checkpoint_ns, event.checkpoint_id
        ptrs = keys.in_ns(VIEW, "ptrs", ns)
        body = body_field(cid)
        refs = [body] + [versioned_field(ch, v) for ch, v in event.channel_versions.items()]
        commands: list[Command] = [
            ("JSON.SET", keys.per_checkpoint(VIEW, "cp", ns, cid), "$", checkpoint_document(event, refs)),
            (POINT, ptrs, body),
        ]
        if event.values:
            commands.append((POINT_IF_NEW, ptrs, *(versioned_field(cv.channel, cv.version) for cv in event.values)))
        commands += [
            ("ZADD", keys.in_ns(VIEW, "ids", ns), "0", cid),
            ("SADD", keys.namespaces(VIEW), escape(ns)),
        ]
        return commands
    if isinstance(event, WritesSaved):
        key = keys.per_checkpoint(VIEW, "writes", event.checkpoint_ns, event.checkpoint_id)
        return store_writes(key, event)
    if isinstance(event, ValuesRetained):
        ptrs = keys.in_ns(VIEW, "ptrs", event.checkpoint_ns)
        if not event.values:
            return []
        fields = (versioned_field(cv.channel, cv.version) for cv in event.values)
        return [(POINT_IF_NEW, ptrs, *fields), ("SADD", keys.namespaces(VIEW), escape(event.checkpoint_ns))]
    if not isinstance(event, ThreadDeleted):
        return []  # a marker (ThreadCopied, ThreadPruned, RunsDeleted) changes no view
    return [
        (
            PURGE,
            keys.namespaces(VIEW),
            keys.base(VIEW, "cp"),
            keys.base(VIEW, "ids"),
            keys.base(VIEW, "ptrs"),
            keys.base(VIEW, "writes"),
        ),
        ("DEL", keys.audit),  # the agent audit beside the log goes with the thread (streamsaver.middleware)
    ]
