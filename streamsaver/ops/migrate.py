"""Migration: copy every thread of another LangGraph saver into a StreamSaver deployment, and
check the copy checkpoint by checkpoint.

The source is read through its public API only (`streamsaver.ops.migrate_sources`): its ids
with ``list`` and each checkpoint with ``get_tuple`` (langgraph-checkpoint-redis's ``list``
gives messages as plain dicts; its ``get_tuple`` gives them as LangChain messages). The target
is written through `StreamSaver.put` and `StreamSaver.put_writes`, so the copy is what a graph
running on StreamSaver would have saved:

* a thread's checkpoints are copied oldest first (by checkpoint id, namespaces interleaved, so
  subgraph checkpoints keep their place), each ``put`` under its source parent's id, so parent
  links and ``checkpoint_ns`` survive; its ``new_versions`` are the channel versions not yet
  stored for its namespace, so each channel value is stored once, as LangGraph does;
* each checkpoint's pending writes are put per task, in their source order (their indexes,
  special channels included, come out the same);
* then the copy is read back with ``get_tuple`` and compared with the source's: checkpoint id,
  timestamp, channel values, channel versions, versions seen, metadata, parent id, and the
  pending writes as a set of (task, channel, value).

**Resumable:** a checkpoint the target already holds is not put again (only the tasks whose
writes it lacks are), so a re-run after a failure or Ctrl-C continues where it stopped, and a
re-run of a finished migration copies nothing and checks everything again. Copying into a
thread that already has other history in StreamSaver is the caller's choice; the check still
compares each copied checkpoint.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple

from streamsaver.errors import InvalidInputError
from streamsaver.ops.migrate_sources import Source
from streamsaver.saver.sync import StreamSaver

__all__ = ["MigrationReport", "Mismatch", "differences", "migrate_thread", "migrate_threads"]

_CHECKED = ("id", "ts", "channel_values", "channel_versions", "versions_seen")


@dataclass(frozen=True)
class Mismatch:
    """A checkpoint whose copy differs from its source (or is missing)."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parts: tuple[str, ...]
    """What differs: ``"missing"``, ``"checkpoint.<key>"``, ``"metadata"``, ``"parent"``, ``"writes"``."""


@dataclass
class MigrationReport:
    """What a migration did. ``ok`` when every checkpoint's copy equals its source."""

    threads: int = 0
    checkpoints: int = 0
    copied_checkpoints: int = 0
    copied_writes: int = 0
    skipped_checkpoints: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def as_dict(self) -> dict[str, Any]:
        return {
            "threads": self.threads, "checkpoints": self.checkpoints, "copied_checkpoints": self.copied_checkpoints,
            "copied_writes": self.copied_writes, "skipped_checkpoints": self.skipped_checkpoints, "ok": self.ok,
            "mismatches": [m.__dict__ for m in self.mismatches],
        }


def _config(thread_id: str, ns: str, checkpoint_id: str | None) -> RunnableConfig:
    configurable: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _ids(source: Source, thread_id: str) -> list[tuple[str, str]]:
    """The (checkpoint_id, checkpoint_ns) pairs of a source thread, oldest first.

    Raises:
        InvalidInputError: the source's ``list`` is capped and the thread reaches the cap (the
            migration would silently miss its oldest checkpoints).
    """
    found = {
        (t.config["configurable"]["checkpoint_id"], t.config["configurable"].get("checkpoint_ns") or "")
        for t in source.saver.list({"configurable": {"thread_id": thread_id}})
    }
    if source.list_cap is not None and len(found) >= source.list_cap:
        raise InvalidInputError(
            f"thread {thread_id!r} has {source.list_cap:,} checkpoints or more, the most the {source.kind} "
            "saver's list returns: it cannot be migrated whole (prune it in the source first)"
        )
    return sorted(found)


def _writes_by_task(writes: Iterable[tuple[str, str, Any]] | None) -> dict[str, list[tuple[str, Any]]]:
    tasks: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for task_id, channel, value in writes or ():
        tasks[task_id].append((channel, value))
    return tasks


def differences(source: CheckpointTuple, copy: CheckpointTuple | None) -> tuple[str, ...]:
    """What differs between a source checkpoint and its copy (empty: equal)."""
    if copy is None:
        return ("missing",)
    parts = [f"checkpoint.{k}" for k in _CHECKED if source.checkpoint.get(k) != copy.checkpoint.get(k)]
    if dict(source.metadata or {}) != dict(copy.metadata or {}):
        parts.append("metadata")
    parent = (source.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    if parent != (copy.parent_config or {}).get("configurable", {}).get("checkpoint_id"):
        parts.append("parent")
    if not _same_writes(source.pending_writes, copy.pending_writes):
        parts.append("writes")
    return tuple(parts)


def _same_writes(a: Sequence[Any] | None, b: Sequence[Any] | None) -> bool:
    left, right = list(a or ()), list(b or ())
    if len(left) != len(right):
        return False
    unmatched = list(right)
    for write in left:
        if write not in unmatched:
            return False
        unmatched.remove(write)
    return True


def migrate_thread(source: Source, target: StreamSaver, thread_id: str, report: MigrationReport) -> None:
    """Copy one thread (what the target lacks) and check every checkpoint of it; see the module
    docstring. Counts into `report`."""
    stored: dict[str, set[tuple[str, str]]] = defaultdict(set)  # namespace -> {(channel, version json)}
    for checkpoint_id, ns in _ids(source, thread_id):
        config = _config(thread_id, ns, checkpoint_id)
        original = source.saver.get_tuple(config)
        if original is None:  # deleted meanwhile
            continue
        report.checkpoints += 1
        versions = dict(original.checkpoint.get("channel_versions", {}))
        copy = target.get_tuple(config)
        if copy is None:
            parent = (original.parent_config or {}).get("configurable", {}).get("checkpoint_id")
            new_versions = {ch: v for ch, v in versions.items() if (ch, repr(v)) not in stored[ns]}
            target.put(_config(thread_id, ns, parent), original.checkpoint, original.metadata, new_versions)
            report.copied_checkpoints += 1
            have: set[str] = set()
        else:
            report.skipped_checkpoints += 1
            have = {task_id for task_id, _, _ in copy.pending_writes or ()}
        stored[ns].update((ch, repr(v)) for ch, v in versions.items())
        for task_id, writes in _writes_by_task(original.pending_writes).items():
            if task_id not in have:
                target.put_writes(config, writes, task_id)
                report.copied_writes += len(writes)
        parts = differences(original, target.get_tuple(config))
        if parts:
            report.mismatches.append(Mismatch(thread_id, ns, checkpoint_id, parts))


def migrate_threads(
    source: Source,
    target: StreamSaver,
    thread_ids: Sequence[str] | None = None,
    on_thread: Callable[[str], None] | None = None,
) -> MigrationReport:
    """Copy `thread_ids` (default: every thread of the source) into `target` and check them.

    Args:
        on_thread: called after each thread (for progress).

    Returns:
        What was copied and checked; ``report.ok`` when every copy equals its source.

    Raises:
        InvalidInputError: a source thread too long for the source's ``list``, or a checkpoint
            the target refuses (e.g. metadata that is not JSON); the threads before it stay copied.
    """
    target.setup()
    report = MigrationReport()
    for thread_id in source.thread_ids() if thread_ids is None else thread_ids:
        migrate_thread(source, target, thread_id, report)
        report.threads += 1
        if on_thread is not None:
            on_thread(thread_id)
    return report
