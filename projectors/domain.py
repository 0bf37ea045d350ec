"""The checkpoint domain, as the log core sees it: its views (projector, read call, index
schema) and how an append recognises a repeat.

Every place that needs "the checkpoint views" reads them here: the append and apply calls, the
TTL block, replay, verify, shadow rebuild, restore, setup (index schemas) and the read side
(`View.read` builds the call that reads one checkpoint of the view). Adding a view is adding
one `View` to `CHECKPOINTS`.
"""

from __future__ import annotations

from collections.abc import Sequence

from projectors import full, shallow
from projectors.documents import BODY_FIELD, body_field, write_field
from projectors.schema import FIELDS
from streamsaver.log.domain import Domain, HeldEntry, LogScripts, View
from streamsaver.log.events import CheckpointSaved, Event, ThreadDeleted, WritesSaved
from streamsaver.log.keys import Keyspace, ViewName
from streamsaver.scripts import ALL, APPEND, APPLY, ERASE, READ_FULL, READ_SHALLOW, REWRITE, TTL, TTL_TOUCH

__all__ = ["CHECKPOINTS", "held_entry_probe"]


def _read_full(keyspace: Keyspace, thread_id: str, ns: str, checkpoint_id: str) -> list[str | bytes | int]:
    keys = keyspace.thread(thread_id)
    return READ_FULL.evalsha_args(
        [keys.in_ns(full.VIEW, "ids", ns), keys.in_ns(full.VIEW, "ptrs", ns), keys.log],
        [keys.doc_prefix(full.VIEW, "cp", ns), keys.doc_prefix(full.VIEW, "writes", ns), "id", checkpoint_id, 0],
    )


def _read_shallow(keyspace: Keyspace, thread_id: str, ns: str, checkpoint_id: str) -> list[str | bytes | int]:
    keys = keyspace.thread(thread_id)
    view = shallow.VIEW
    return READ_SHALLOW.evalsha_args(
        [keys.in_ns(view, "cp", ns), keys.in_ns(view, "ptrs", ns), keys.in_ns(view, "writes", ns), keys.log],
        [checkpoint_id],
    )


def held_entry_probe(event: Event, keyspace: Keyspace, views: Sequence[ViewName]) -> HeldEntry | None:
    """Where a view records the log entry that holds `event` once appended: ``(hash, field,
    checkpoint id the hash's @cid must hold or "")``, for `append.lua` to recognise a repeat.

    A checkpoint is recorded by its body pointer (full: per checkpoint id; shallow: the latest,
    so only while ``@cid`` names it); a put_writes by the pointer of its first write.
    """
    view: ViewName = full.VIEW if full.VIEW in views else views[0]
    keys = keyspace.thread(event.thread_id)
    if isinstance(event, CheckpointSaved):
        ptrs = keys.in_ns(view, "ptrs", event.checkpoint_ns)
        if view == full.VIEW:
            return ptrs, body_field(event.checkpoint_id), ""
        return ptrs, BODY_FIELD, event.checkpoint_id
    if isinstance(event, WritesSaved) and event.writes:
        ns, cid = event.checkpoint_ns, event.checkpoint_id
        key = keys.per_checkpoint(view, "writes", ns, cid) if view == full.VIEW else keys.in_ns(view, "writes", ns)
        return key, write_field(event.task_id, event.writes[0].idx), "" if view == full.VIEW else cid
    return None


CHECKPOINTS = Domain(
    name="checkpoints",
    views=(
        View(full.VIEW, full.project, _read_full, FIELDS, keeps_history=True),
        View(shallow.VIEW, shallow.project, _read_shallow, FIELDS),
    ),
    held_entry=held_entry_probe,
    erase=ThreadDeleted,
    scripts=LogScripts(append=APPEND, apply=APPLY, rewrite=REWRITE, ttl=TTL, erase=ERASE, touch=TTL_TOUCH),
    loads=ALL,
)
"""The checkpoint domain: a log per thread, folded into the full and the shallow view."""
