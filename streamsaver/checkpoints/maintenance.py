"""`copy_thread`, `prune` and `delete_for_runs` as programs without I/O.

Each operation is a program (`streamsaver.log.program`): it yields a `Call` (commands sent in
one round trip), receives the replies, and returns when done; an error reply comes back into it
as `Refused`. The sync and the async driver run the same program, so the twins hold no decision.

Costs: each operation reads a thread's whole log once (one round trip) and writes it with one
atomic ``rewrite.lua`` call (one round trip) on the thread's partition; `delete_for_runs` adds
one index query per 1,000 threads found. A log rewrite guards on the last entry it read: an
append racing it makes the call fail without writing, and the thread is read again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from streamsaver.checkpoints.append import thread_id_of
from streamsaver.checkpoints.compaction import (
    CheckpointKey,
    LogIndex,
    compact,
    removed_for_prune,
    removed_for_retention,
    removed_for_runs,
    retarget,
    rewrite_call,
)
from streamsaver.checkpoints.ttl import ttl_block
from streamsaver.errors import (
    ConcurrentChangeError,
    ConfigurationError,
    InvalidInputError,
    ThreadExistsError,
)
from streamsaver.log.bounds import log_bound
from streamsaver.log.codec import tag, unescape
from streamsaver.log.events import Event, RunsDeleted, ThreadCopied, ThreadPruned
from streamsaver.log.keys import Keyspace, ViewName
from streamsaver.log.new_primaries import joined, slot_map_check
from streamsaver.log.program import Call, Program, Refused, Reload
from streamsaver.log.rewrite import decode_log, read_log
from streamsaver.log.routing import IndexTarget, Routed, Step, Topology

__all__ = ["ATTEMPTS", "STRATEGIES", "copy_thread", "delete_for_runs", "prune", "retain"]

STRATEGIES = ("keep_latest", "delete")
ATTEMPTS = 5
"""Reads and rewrites of one thread before a rewrite racing appends gives up."""
THREADS_PER_QUERY = 1000


def _thread(value: Any) -> str:
    return thread_id_of({"configurable": {"thread_id": value}})


def _many(values: Any, what: str) -> list[Any]:
    """`values` as a list of ids.

    Raises:
        InvalidInputError: a string (it would mean one id per character) or not iterable.
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise InvalidInputError(
            f"{what} must be a list of ids, not a {type(values).__name__} (a string would mean one id per character)"
        )
    return list(values)


def _ttl(keyspace: Keyspace, thread_id: str, ttl: int) -> list[str | bytes | int]:
    return ttl_block(keyspace, thread_id, ttl) if ttl else []


def _stale(refused: Refused) -> bool:
    return refused.starts("STALE")


def copy_thread(
    keyspace: Keyspace,
    views: Sequence[ViewName],
    source: Any,
    target: Any,
    until: str | datetime | None = None,
    ttl: int = 0,
    *,
    load: Reload,
) -> Program[None]:
    """Copy `source`'s log, up to `until`, into the new thread `target` (one round trip to
    read, one atomic append of a `ThreadCopied` marker and the copied events).

    Args:
        until: None (everything), a checkpoint id (the thread as it was when that checkpoint
            was the newest of its namespace, with its writes), or a timezone-aware datetime
            (every event logged up to that millisecond).

    Raises:
        InvalidInputError: bad ids, the same thread twice, or a checkpoint not in the source.
        ThreadExistsError: `target` already has a log.
    """
    source_id, target_id = _thread(source), _thread(target)
    if source_id == target_id:
        raise InvalidInputError(f"copy_thread needs two different threads, got {source_id!r} twice")
    if until is not None and not isinstance(until, (str, datetime)):
        raise InvalidInputError(f"until must be a checkpoint id or a datetime, not {type(until).__name__}")
    checkpoint = until if isinstance(until, str) else None
    bound = log_bound(until) if isinstance(until, datetime) else "+"
    [reply] = yield Call([read_log(keyspace.thread(source_id).log, bound)], load)
    events = retarget(decode_log(reply), target_id, checkpoint)
    if events is None:
        raise InvalidInputError(f"checkpoint {checkpoint!r} is not in thread {source_id!r}")
    if not events:
        return
    marker = ThreadCopied(target_id, source_id, checkpoint or ("" if bound == "+" else bound))
    entries: list[tuple[str, Event]] = [("*", marker), *(("*", e) for e in events)]
    call = rewrite_call(
        keyspace, views, target_id, guard="", replace_log=False, entries=entries, pointers=True,
        ttl=_ttl(keyspace, target_id, ttl),
    )
    try:
        yield Call([call], load)
    except Refused as exc:
        if _stale(exc):
            raise ThreadExistsError(f"thread {target_id!r} already exists; copy into a new thread id") from exc.error
        raise


def _rewrite(
    keyspace: Keyspace,
    views: Sequence[ViewName],
    thread_id: str,
    choose: Callable[[LogIndex, int], set[CheckpointKey]],
    marker: Callable[[int], Event],
    ttl: int,
    load: Reload,
) -> Program[None]:
    """Remove the checkpoints `choose(index, server time in ms)` picks from one thread's log and
    views, recording `marker(checkpoints kept)`; nothing is written when it picks none."""
    for _ in range(ATTEMPTS):
        log = keyspace.thread(thread_id).log
        reply, (seconds, micros) = yield Call([read_log(log), Routed(log, ["TIME"])], load)
        entries = decode_log(reply)
        index = LogIndex.of(entries)
        removed = choose(index, int(seconds) * 1000 + int(micros) // 1000)
        if not removed:
            return
        kept = [*compact(entries, removed), ("*", marker(len(index.checkpoints) - len(removed)))]
        call = rewrite_call(
            keyspace, views, thread_id, guard=entries[-1][0], replace_log=True, entries=kept, pointers=False,
            ttl=_ttl(keyspace, thread_id, ttl),
        )
        try:
            yield Call([call], load)
            return
        except Refused as exc:
            if not _stale(exc):
                raise
    raise ConcurrentChangeError(f"thread {thread_id!r} kept changing during {ATTEMPTS} attempts to rewrite it")


def prune(
    keyspace: Keyspace,
    views: Sequence[ViewName],
    thread_ids: Iterable[Any],
    strategy: str,
    ttl: int = 0,
    *,
    load: Reload,
) -> Program[None]:
    """Prune each thread: ``"keep_latest"`` keeps the newest checkpoint of each namespace (and
    the ancestors its delta channels need), ``"delete"`` removes every checkpoint.

    Raises:
        InvalidInputError: an unknown strategy or a bad thread id (before any write).
    """
    if strategy not in STRATEGIES:
        raise InvalidInputError(f"strategy must be one of {STRATEGIES}, not {strategy!r}")
    for thread_id in dict.fromkeys(_thread(t) for t in _many(thread_ids, "thread_ids")):
        yield from _rewrite(
            keyspace, views, thread_id, partial(_pruned, strategy=strategy), partial(ThreadPruned, thread_id, strategy),
            ttl, load,
        )


def _pruned(index: LogIndex, now_ms: int, *, strategy: str) -> set[CheckpointKey]:
    return removed_for_prune(index, strategy)


def _runs(index: LogIndex, now_ms: int, *, run_ids: Sequence[str]) -> set[CheckpointKey]:
    return removed_for_runs(index, run_ids)


def _retained(index: LogIndex, now_ms: int, *, keep_last: int | None, max_age_ms: int | None) -> set[CheckpointKey]:
    return removed_for_retention(index, keep_last=keep_last, max_age_ms=max_age_ms, now_ms=now_ms)


def retain(
    keyspace: Keyspace,
    views: Sequence[ViewName],
    thread_ids: Iterable[Any],
    *,
    keep_last: int | None = None,
    max_age: timedelta | None = None,
    ttl: int = 0,
    load: Reload,
) -> Program[None]:
    """Retention: in each namespace of each thread keep the newest checkpoint, the `keep_last`
    newest, those logged within `max_age` (server time), and the ancestors their delta channels
    need; compact the rest away like `prune` (marker `ThreadPruned`, strategy ``"retention"``).

    Raises:
        InvalidInputError: neither rule given, a `keep_last` below 1, a negative `max_age`, or a
            bad thread id (before any write).
    """
    if keep_last is None and max_age is None:
        raise InvalidInputError("retention needs keep_last, max_age or both")
    if keep_last is not None and (isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 1):
        raise InvalidInputError(f"keep_last must be an int >= 1, not {keep_last!r}")
    if max_age is not None and (not isinstance(max_age, timedelta) or max_age < timedelta(0)):
        raise InvalidInputError(f"max_age must be a timedelta >= 0, not {max_age!r}")
    age_ms = None if max_age is None else max_age // timedelta(milliseconds=1)
    for thread_id in dict.fromkeys(_thread(t) for t in _many(thread_ids, "thread_ids")):
        yield from _rewrite(
            keyspace, views, thread_id, partial(_retained, keep_last=keep_last, max_age_ms=age_ms),
            partial(ThreadPruned, thread_id, "retention"), ttl, load,
        )


def _runs_deleted(thread_id: str, runs: Sequence[str], kept: int) -> RunsDeleted:
    return RunsDeleted(thread_id, tuple(runs))


def _threads_request(targets: Sequence[IndexTarget], run_ids: Sequence[str]) -> list[Step]:
    query = "@rh:{" + "|".join(tag(r) for r in run_ids) + "}"
    return [
        target.query([
            "FT.AGGREGATE", target.name, query, "GROUPBY", 1, "@tk",
            "LIMIT", 0, THREADS_PER_QUERY, "DIALECT", 2, "TIMEOUT", 0,
        ])
        for target in targets
    ]


def _threads(reply: Any) -> list[str]:
    """Thread ids of an FT.AGGREGATE ... GROUPBY @tk reply (RESP2 or RESP3)."""
    if isinstance(reply, dict):
        results = reply.get(b"results", reply.get("results")) or []
        rows = [r.get(b"extra_attributes", r.get("extra_attributes")) or {} for r in results]
        values = [v for row in rows for k, v in row.items() if k in (b"tk", "tk")]
    else:
        values = [row[i + 1] for row in reply[1:] for i in range(0, len(row), 2) if row[i] in (b"tk", "tk")]
    if any(v is None for v in values):
        raise ConfigurationError(
            "the view holds checkpoint documents written before index schema v2 (no `tk`): "
            "rebuild the views once with `streamsaver replay` (see docs/operations.md)"
        )
    return [unescape(v.decode("ascii") if isinstance(v, bytes) else str(v)) for v in values]


def delete_for_runs(
    keyspace: Keyspace,
    views: Sequence[ViewName],
    run_ids: Iterable[Any],
    ttl: int = 0,
    targets: Sequence[IndexTarget] = (),
    *,
    load: Reload,
    topology: Topology | None = None,
) -> Program[None]:
    """Remove every checkpoint whose metadata ``run_id`` is one of `run_ids`, with its writes,
    from the logs and the views of every thread holding one (found through the index of the
    first projected view, the full view when it is kept; `targets` are that view's indexes,
    one per primary on Redis Cluster, by default the one index of a single server).

    On Redis Cluster (`topology`, the slot map of setup) the first query also asks for the slot
    map (`streamsaver.log.new_primaries`): when a primary joined since, its threads are under
    no index asked, so it deletes nothing and raises `Refused` with ``moved`` (set up again and
    run again, as when an index query finds the slots moved).

    Raises:
        InvalidInputError: a run id that is not a string (before any write).
        Refused: on a cluster, a primary joined since setup (nothing deleted).
    """
    runs = list(dict.fromkeys(_many(run_ids, "run_ids")))
    if not all(isinstance(r, str) for r in runs):
        raise InvalidInputError("run ids must be strings")
    if not runs:
        return
    view: ViewName = "full" if "full" in views else views[0]
    indexes = tuple(targets) or (IndexTarget(keyspace.index(view)),)
    done: set[str] = set()
    check = slot_map_check(topology)
    while True:
        request = _threads_request(indexes, runs)
        replies = yield Call([*request, *check], load)
        if new := joined(topology, replies[len(request) :]):
            raise Refused(ConfigurationError(f"primaries joined the cluster since setup: {', '.join(new)}"), True)
        replies, check = replies[: len(request)], []
        threads = sorted({t for reply in replies for t in _threads(reply)} - done)
        if not threads:
            return
        for thread_id in threads:
            done.add(thread_id)
            yield from _rewrite(
                keyspace, views, thread_id, partial(_runs, run_ids=runs), partial(_runs_deleted, thread_id, runs),
                ttl, load,
            )
