"""Rewriting a thread's log without I/O: what `copy_thread`, `prune` and `delete_for_runs` keep.

Views point at log entries (see `projectors.documents`), so a log cannot simply lose entries:
a checkpoint that survives may name a channel version whose payload sits in the entry of a
checkpoint being removed. `compact` therefore keeps, at the removed entry's own id, a
`ValuesRetained` entry holding only the values surviving checkpoints still point at, and drops
everything else of the removed checkpoints (their bodies, other values, their writes). The log
keeps its ids, so every pointer of a survivor stays valid, and ``rewrite.lua`` refolds the
thread's views from the new log in the same atomic call: the live views are then by
construction what a replay of the remaining log gives.

The generic half (reading a log, the ``rewrite.lua`` call, `whole_values`) is the log core's
`streamsaver.log.rewrite`; what a rewrite keeps is decided here.

`delta_ancestors` makes ``keep_latest`` DeltaChannel-safe: from each kept checkpoint it walks
the parent chain, as `get_delta_channel_history` does, and keeps every ancestor (with its
writes) up to the nearest one holding a stored value for each delta channel the kept checkpoint
counts updates for (metadata ``counters_since_delta_snapshot``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import orjson

from projectors.domain import CHECKPOINTS
from streamsaver.log import rewrite as log_rewrite
from streamsaver.log.events import (
    ChannelValue,
    CheckpointSaved,
    Event,
    ThreadDeleted,
    ValuesRetained,
    WritesSaved,
)
from streamsaver.log.fields import EMPTY_TYPE
from streamsaver.log.keys import Keyspace, ViewName
from streamsaver.log.rewrite import Entry, whole_values

__all__ = [
    "LogIndex",
    "compact",
    "delta_ancestors",
    "removed_for_prune",
    "removed_for_retention",
    "removed_for_runs",
    "retarget",
    "rewrite_call",
]

CheckpointKey = tuple[str, str]
"""(namespace, checkpoint id)."""
ValueKey = tuple[str, str, bytes]
"""(namespace, channel, version as JSON): what a full-view pointer names."""


def _value_key(ns: str, cv: ChannelValue) -> ValueKey:
    return (ns, cv.channel, orjson.dumps(cv.version))


@dataclass
class LogIndex:
    """The checkpoints of a decoded log and the first entry carrying each channel version (the
    one the full view points at)."""

    checkpoints: dict[CheckpointKey, CheckpointSaved]
    carriers: dict[ValueKey, tuple[str, ChannelValue]]
    logged_at: dict[CheckpointKey, int]
    """When each checkpoint was logged: the millisecond of its entry id."""

    @classmethod
    def of(cls, entries: Iterable[Entry]) -> LogIndex:
        checkpoints: dict[CheckpointKey, CheckpointSaved] = {}
        carriers: dict[ValueKey, tuple[str, ChannelValue]] = {}
        logged_at: dict[CheckpointKey, int] = {}
        for entry_id, event in entries:
            if isinstance(event, CheckpointSaved):
                checkpoints[(event.checkpoint_ns, event.checkpoint_id)] = event
                logged_at[(event.checkpoint_ns, event.checkpoint_id)] = int(entry_id.split("-")[0])
            if isinstance(event, (CheckpointSaved, ValuesRetained)):
                for cv in event.values:
                    carriers.setdefault(_value_key(event.checkpoint_ns, cv), (entry_id, cv))
        return cls(checkpoints, carriers, logged_at)

    def has_value(self, checkpoint: CheckpointSaved, channel: str) -> bool:
        """Whether `checkpoint` stores a value for `channel` (not only a version)."""
        if channel not in checkpoint.channel_versions:
            return False
        key = (checkpoint.checkpoint_ns, channel, orjson.dumps(checkpoint.channel_versions[channel]))
        carrier = self.carriers.get(key)
        return carrier is not None and carrier[1].blob.type != EMPTY_TYPE


def removed_for_runs(index: LogIndex, run_ids: Collection[str]) -> set[CheckpointKey]:
    """The checkpoints whose metadata names one of `run_ids`."""
    return {key for key, cp in index.checkpoints.items() if cp.metadata.get("run_id") in run_ids}


def delta_ancestors(index: LogIndex, kept: CheckpointSaved) -> list[CheckpointKey]:
    """The ancestors of `kept` that reconstructing its delta channels reads: parents, nearest
    first, up to and including the first holding a value for each of them."""
    counters = kept.metadata.get("counters_since_delta_snapshot")
    channels = counters if isinstance(counters, Mapping) else {}
    remaining = {ch for ch in channels if isinstance(ch, str) and not index.has_value(kept, ch)}
    ns, parent = kept.checkpoint_ns, kept.parent_checkpoint_id
    out: list[CheckpointKey] = []
    while parent is not None and remaining and (ns, parent) in index.checkpoints:
        ancestor = index.checkpoints[(ns, parent)]
        out.append((ns, parent))
        remaining = {ch for ch in remaining if not index.has_value(ancestor, ch)}
        parent = ancestor.parent_checkpoint_id
    return out


def _removed_keeping(index: LogIndex, kept: set[CheckpointKey]) -> set[CheckpointKey]:
    """Every checkpoint but `kept` and the ancestors their delta channels need. Not closed
    transitively: an ancestor kept to carry writes may itself need older history for another
    channel (two channels snapshotting at different steps would then keep everything), so only
    the checkpoints chosen are guaranteed to reconstruct."""
    for key in list(kept):
        kept.update(delta_ancestors(index, index.checkpoints[key]))
    return set(index.checkpoints) - kept


def _latest(index: LogIndex, count: int) -> set[CheckpointKey]:
    """The `count` newest checkpoints of each namespace."""
    by_ns: dict[str, list[str]] = {}
    for ns, cid in index.checkpoints:
        by_ns.setdefault(ns, []).append(cid)
    return {(ns, cid) for ns, cids in by_ns.items() for cid in sorted(cids, reverse=True)[:count]}


def removed_for_prune(index: LogIndex, strategy: str) -> set[CheckpointKey]:
    """The checkpoints a prune removes: all (``"delete"``), or all but the latest of each
    namespace and the ancestors its delta channels need (``"keep_latest"``)."""
    if strategy == "delete":
        return set(index.checkpoints)
    return _removed_keeping(index, _latest(index, 1))


def removed_for_retention(
    index: LogIndex, *, keep_last: int | None, max_age_ms: int | None, now_ms: int
) -> set[CheckpointKey]:
    """The checkpoints retention removes: all but, in each namespace, the newest, the
    `keep_last` newest, those logged less than `max_age_ms` before `now_ms`, and the ancestors
    their delta channels need."""
    kept = _latest(index, max(1, keep_last or 1))
    if max_age_ms is not None:
        kept |= {key for key, at in index.logged_at.items() if now_ms - at <= max_age_ms}
    return _removed_keeping(index, kept)


def compact(entries: Sequence[Entry], removed: Collection[CheckpointKey]) -> list[Entry]:
    """The log without the `removed` checkpoints and their writes, under the original ids.

    A removed checkpoint's entry becomes a `ValuesRetained` holding the values that surviving
    checkpoints point at (when it was their first carrier), or goes entirely.
    """
    index = LogIndex.of(entries)
    needed = {
        (ns, ch, orjson.dumps(version))
        for (ns, cid), cp in index.checkpoints.items()
        if (ns, cid) not in removed
        for ch, version in cp.channel_versions.items()
    }
    out: list[Entry] = []
    for entry_id, event in entries:
        if isinstance(event, WritesSaved):
            if (event.checkpoint_ns, event.checkpoint_id) not in removed:
                out.append((entry_id, event))
        elif isinstance(event, CheckpointSaved) and (event.checkpoint_ns, event.checkpoint_id) not in removed:
            out.append((entry_id, event))
        elif isinstance(event, (CheckpointSaved, ValuesRetained)):
            ns = event.checkpoint_ns
            values = tuple(
                cv
                for cv in event.values
                if _value_key(ns, cv) in needed and index.carriers[_value_key(ns, cv)][0] == entry_id
            )
            if values:
                out.append((entry_id, ValuesRetained(event.thread_id, ns, event.checkpoint_id, values)))
        elif not isinstance(event, ThreadDeleted):
            out.append((entry_id, event))
    return whole_values(entries, out)


def retarget(entries: Sequence[Entry], thread_id: str, until_checkpoint: str | None) -> list[Event] | None:
    """The content events of a log (markers left out) under `thread_id`, up to the state the log
    held when checkpoint `until_checkpoint` was the newest of its namespace: the log up to the
    next checkpoint of that namespace, plus the writes logged later against a checkpoint it keeps
    (a late write belongs to its checkpoint, as a listing of the source shows it). None when
    `until_checkpoint` is not in the log."""
    renumbered = [("*", e) for _, e in entries if isinstance(e, (CheckpointSaved, WritesSaved, ValuesRetained))]
    events = [e for _, e in whole_values(entries, renumbered)]
    if until_checkpoint is not None:
        at = next(
            (i for i, e in enumerate(events) if isinstance(e, CheckpointSaved) and e.checkpoint_id == until_checkpoint),
            None,
        )
        if at is None:
            return None
        ns = events[at].checkpoint_ns
        end = next(
            (
                i for i in range(at + 1, len(events))
                if isinstance(events[i], CheckpointSaved) and events[i].checkpoint_ns == ns
            ),
            len(events),
        )
        kept = {(e.checkpoint_ns, e.checkpoint_id) for e in events[:end] if isinstance(e, CheckpointSaved)}
        late = [e for e in events[end:] if isinstance(e, WritesSaved) and (e.checkpoint_ns, e.checkpoint_id) in kept]
        events = [*events[:end], *late]
    return [replace(e, thread_id=thread_id) for e in events]


def rewrite_call(
    keyspace: Keyspace,
    views: Sequence[ViewName],
    thread_id: str,
    *,
    guard: str,
    replace_log: bool | None,
    entries: Sequence[tuple[str, Event]],
    pointers: bool,
    ttl: Sequence[str | bytes | int] = (),
) -> list[str | bytes | int]:
    """The ``rewrite.lua`` call on a thread's log (`streamsaver.log.rewrite.rewrite_call`, for
    the checkpoint domain; the arguments are documented there)."""
    return log_rewrite.rewrite_call(
        CHECKPOINTS, keyspace, views, thread_id,
        guard=guard, replace_log=replace_log, entries=entries, pointers=pointers, ttl=ttl,
    )
