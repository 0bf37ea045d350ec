"""Export and import: a deployment's logs (thread logs, and the memory store's partition logs)
as one portable file, and back again.

The logs are the truth, so they are all a deployment needs to move. `export_logs` writes them to
a file; `import_logs` restores them into an empty deployment (on the same or another server,
under the same or another prefix) and folds the views from them with `Replayer`, through the
same apply path as any replay. Views point at log entries by stream id, so the logs keep their
original ids, and the rebuilt views are byte-identical to the source's. Each thread's expiry
travels with it (version 2), so a retention policy is not lost on the way.

File format ``streamsaver-logs`` version 3: gzip-compressed JSON Lines (UTF-8), one object a line:

* a header: ``{"format": "streamsaver-logs", "version": 3, "prefix": "streamsaver",
  "partitions": 16, "created": "2025-01-31T12:00:00+00:00", "streamsaver": "0.1.0"}``, and
  ``"views": ["full"]``, the source's inline views, when it records them (an import keeps them);
* per thread, one line per log entry, oldest first:
  ``{"thread": "<thread id>", "id": "<original stream id>", "fields": [["<name>", "<value>"], ...]}``
  with every field name and value base64-encoded (binary-safe), in the entry's order;
  then one expiry line: ``{"thread": "<thread id>", "expires_at_ms": 1767225600000, "pinned": false}``,
  the deadline every key of the thread shares (the log's ``PEXPIRETIME``, ms since the epoch;
  ``null``: none) and whether it is pinned (``@pinned``: it never expires), both as they are
  when the export reads them, after the thread's entries (with ``--until`` too: the expiry is
  the current one, not the one of that moment, which Redis does not keep). A log gone by then
  (deleted, or expired during the export) gets the export's clock as its deadline;
* then the store partition logs (`StreamStore`), the same way, every line of theirs (entries
  and expiry line) with ``"domain": "store"`` and the partition's number as its ``thread``;
* a trailer: ``{"end": true, "threads": 2, "entries": 40}`` (threads: every log, store
  partitions included); a file without one is incomplete.

Version 2 is the same without store logs (and reads as before); version 1 is version 2 without
expiry lines; its threads import without expiry (never expire). Import sets up the store (its
items index, without a vector field: see docs/store.md) when the file holds store logs.

**Export** reads each log in XRANGE pages and writes as it goes (memory: one page and the log
keys) into ``FILE.part``, renamed to ``FILE`` when complete. Under concurrent writes it is
consistent per thread, not across threads; export a quiet deployment for an exact copy.

**Import** refuses a target prefix holding any key, then reads the file twice. The first pass
checks all of it (format, base64, ids rising within each thread, every event readable by this
version, one well-typed expiry line per thread after its entries, trailer counts), so a
truncated or corrupt file writes nothing. The second sets the deployment up with the file's
partition count (each thread keeps its partition) and XADDs each entry under its original id.
After the replay, every key of a thread (log, positions, every view key) gets the thread's
absolute deadline (``PEXPIREAT``, through ``ttl.lua``), and a pinned thread is pinned again
(its deadline, if any, is moot: a pin persists every key).

**A deadline already past** when the restore starts (by the importing machine's clock) means
the thread had expired in the source: it is not imported at all (no log, feed pointers or
views; counted in `TransferStats.expired`), as if the export had been taken a moment later.
Importing it without its expiry would resurrect data a retention or erasure policy removed. A
deadline that passes during the import is Redis's to enforce: ``PEXPIREAT`` of a past moment
deletes the keys (the thread's feed pointers stay, as they do when a thread expires).

**Partition feeds are regenerated**, one pointer per restored entry, exactly as the append
writes it, in log order within each thread (the only order the feeds promise). The pointers get
new feed ids, and the pointers of threads deleted before the export are gone with their logs,
so consumer groups start afresh on the restored deployment: a subscriber reading its feed from
the start sees every surviving event once. Pass ``feeds=False`` for empty feeds instead.
"""

from __future__ import annotations

import base64
import gzip
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
from redis import Redis

from projectors.domain import CHECKPOINTS
from projectors.store_domain import STORE
from streamsaver._version import __version__
from streamsaver.drivers.sync import round_trip
from streamsaver.errors import EventDecodeError, TargetNotEmptyError
from streamsaver.log.bounds import log_bound
from streamsaver.log.domain import Domain, LogKeys
from streamsaver.log.fields import ENTRY_ID, PINNED, THREAD
from streamsaver.log.keys import Keyspace
from streamsaver.log.ttl import ttl_call
from streamsaver.memory.sync import StreamStore
from streamsaver.ops.export_file import (
    DOMAINS,
    FORMAT,
    VERSION,
    Entry,
    Expiry,
    Header,
    LogName,
    ProgressFactory,
    check_export,
    check_file,
    phase_bar,
    records,
    views_field,
)
from streamsaver.ops.progress import Progress
from streamsaver.ops.replay import Replayer
from streamsaver.saver.sync import StreamSaver

__all__ = ["FORMAT", "VERSION", "Header", "ProgressFactory", "TransferStats", "check_export", "export_logs",
           "import_logs"]  # the file format's names stay importable from here

_BATCH = 500


@dataclass
class TransferStats:
    """What an export or an import did.

    Attributes:
        prefix: the deployment read (export) or written (import).
        source: the prefix the logs were exported from (equal to `prefix` for an export).
        partitions: the partition count of both deployments.
        threads, entries: thread logs and log entries exported or restored.
        replayed: events folded into the views (import only).
        expired: threads of the file not restored, their deadline past (import only).
    """

    prefix: str
    source: str
    partitions: int
    threads: int = 0
    entries: int = 0
    replayed: int = 0
    expired: int = 0


def _line(document: Any) -> bytes:
    return orjson.dumps(document) + b"\n"


# export --------------------------------------------------------------------------------------
def export_logs(
    client: Redis, prefix: str, path: str | os.PathLike[str], *, page: int = 500,
    progress: ProgressFactory | None = None, until: str | int | datetime | None = None,
    domains: Sequence[Domain] = (CHECKPOINTS, STORE),
) -> TransferStats:
    """Write every log of `domains` (thread logs, then store partition logs) of the deployment
    under `prefix` to the file `path`.

    With `until`, each log only up to that moment (see `streamsaver.log.bounds.log_bound`): the
    deployment as it was then, which `import_logs` restores under a new prefix. Each thread's
    expiry (deadline, pin) is the one it has when the export reads it, `until` or not.

    Args:
        client: a ``redis.Redis`` with ``decode_responses=False``.
        prefix: the deployment's key prefix.
        path: the file to write (replaced if it exists; written as ``path.part`` first).
        page: log entries read per XRANGE.
        progress: makes the progress display (phase ``export``, total: entries); none if None.
        until: a log entry id, epoch milliseconds, or a timezone-aware time (or ISO 8601
            string): the last moment exported; every entry if None.
        domains: whose logs (default: checkpoints and the memory store).

    Returns:
        The prefix, partition count, and the numbers of logs (threads and store partitions)
        and entries written.

    Raises:
        ConfigurationError: nothing was ever set up under `prefix`.
        EventDecodeError: a log holds an entry without a thread id, or another thread's.
        InvalidInputError: `until` is not a time or a log entry id.
        OSError: the file cannot be written.
        redis.exceptions.RedisError: the server refused a command or cannot be reached.
    """
    bound = "+" if until is None else log_bound(until)
    replayers = [Replayer.open(client, prefix, domain=domain) for domain in domains]
    keyspace = replayers[0].keyspace
    logs = [(r.domain, log) for r in replayers for log in sorted(set(r.thread_logs()))]
    stats = TransferStats(prefix, prefix, keyspace.partitions)
    part = Path(f"{os.fspath(path)}.part")
    try:
        total = _entry_count(client, [log for _, log in logs]) if progress is not None else None
        with gzip.open(part, "wb", compresslevel=6) as out, phase_bar(progress, "export", total) as bar:
            _write_export(client, keyspace, logs, out, (bound, page), bar, stats)
        os.replace(part, path)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return stats


def _write_export(
    client: Redis, keyspace: Keyspace, logs: list[tuple[Domain, bytes]], out: gzip.GzipFile,
    reading: tuple[str, int], bar: Progress, stats: TransferStats,
) -> None:
    """Write the header, each log's entries and expiry line, and the end line to `out`;
    `reading` is (the inclusive bound, entries per XRANGE)."""
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    header = {"format": FORMAT, "version": VERSION, "prefix": keyspace.prefix, "partitions": keyspace.partitions,
              "until": reading[0]} | views_field(client.hget(keyspace.meta, "views"))
    out.write(_line(header | {"created": created, "streamsaver": __version__}))
    for domain, log in logs:
        count, thread = _export_log(client, (domain, keyspace), log, out, reading, bar)
        if thread is not None:
            out.write(_line(_expiry_line(client, keyspace, thread, domain)))
        stats.threads += count > 0
        stats.entries += count
    out.write(_line({"end": True, "threads": stats.threads, "entries": stats.entries}))


def _entry_count(client: Redis, logs: list[bytes]) -> int:
    total = 0
    for start in range(0, len(logs), _BATCH):
        pipe = client.pipeline(transaction=False)
        for log in logs[start : start + _BATCH]:
            pipe.xlen(log)
        total += sum(int(n) for n in pipe.execute())
    return total


def _export_log(
    client: Redis, where: tuple[Domain, Keyspace], log: bytes, out: gzip.GzipFile, reading: tuple[str, int],
    bar: Progress,
) -> tuple[int, str | None]:
    """Write the entries of `log` (of the domain `where` names); returns their number and the
    thread (None: no entry)."""
    domain, keyspace = where
    marker = _marker(domain)
    xrange: Callable[..., Any] = client.xrange
    (bound, page), start, count, thread = reading, "-", 0, None
    entries: list[tuple[bytes, dict[bytes, bytes]]]
    while entries := xrange(log, start, bound, count=page):
        for raw_id, fields in entries:
            if thread is None:
                thread = _thread_of(log, fields, raw_id.decode())
                if domain.log_keys(keyspace, thread).log.encode() != log:
                    raise EventDecodeError(f"log {log!r} holds an event of thread {thread!r}", event_id=raw_id.decode())
            pairs = [[base64.b64encode(k).decode(), base64.b64encode(v).decode()] for k, v in fields.items()]
            out.write(_line({"thread": thread, "id": raw_id.decode(), "fields": pairs} | marker))
        count += len(entries)
        bar.advance(len(entries))
        start = "(" + entries[-1][0].decode()
    return count, thread


def _marker(domain: Domain) -> dict[str, str]:
    """What the lines of a log of `domain` carry: nothing for checkpoints (as version 2 wrote)."""
    return {} if domain.name == CHECKPOINTS.name else {"domain": domain.name}


def _expiry_line(client: Redis, keyspace: Keyspace, thread: str, domain: Domain) -> dict[str, Any]:
    """The thread's expiry line: its log's deadline as it is now, and its pin."""
    keys = domain.log_keys(keyspace, thread)
    pipe: Any = client.pipeline(transaction=False)
    pipe.execute_command("PEXPIRETIME", keys.log)
    pipe.hexists(keys.positions, PINNED)
    deadline, pinned = pipe.execute()
    if deadline == -2:  # gone since its entries were read: deleted, or expired meanwhile
        deadline = _now_ms()
    line = {"thread": thread, "expires_at_ms": deadline if deadline >= 0 else None, "pinned": bool(pinned)}
    return line | _marker(domain)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _thread_of(log: bytes, fields: dict[bytes, bytes], entry_id: str) -> str:
    try:
        return fields[THREAD].decode("utf-8")
    except (KeyError, UnicodeDecodeError) as exc:
        raise EventDecodeError(f"log {log!r} holds an entry without a thread id", event_id=entry_id) from exc


# import --------------------------------------------------------------------------------------
def import_logs(
    client: Redis,
    path: str | os.PathLike[str],
    *,
    prefix: str | None = None,
    feeds: bool = True,
    page: int = 500,
    progress: ProgressFactory | None = None,
) -> TransferStats:
    """Restore the logs of an export file (thread logs, and store partition logs when it holds
    any) into an empty deployment and rebuild their views.

    Args:
        client: a ``redis.Redis`` with ``decode_responses=False`` (any server with RediSearch
            and RedisJSON; the one exported from, or another).
        path: the export file.
        prefix: the target key prefix; the prefix the file was exported from if None.
        feeds: regenerate the partition feeds (one pointer per entry); empty feeds if False.
        page: events replayed per round trip.
        progress: makes the progress displays (phases ``check``, ``restore``, ``replay``).

    Returns:
        The target prefix, the source prefix, the partition count, the numbers of threads and
        entries restored and of events replayed.

    Raises:
        ExportFileError: the file is not an importable export (nothing was written).
        TargetNotEmptyError: the target prefix holds a key (nothing was written).
        ConfigurationError: a bad prefix, or the server lacks a module.
        redis.exceptions.RedisError: the server refused a command or cannot be reached.
    """
    header = next(records(path))  # the first line only: the target is known before the long check
    assert isinstance(header, Header)
    keyspace = Keyspace(prefix or header.prefix, header.partitions)
    _refuse_unless_empty(client, keyspace.prefix)
    checked = check_file(path, progress=progress)
    now = _now_ms()
    expired = {log for log, e in checked.expiries.items() if _expired(e, now)}
    stats = TransferStats(keyspace.prefix, header.prefix, keyspace.partitions, checked.threads, checked.entries)
    domains = _set_up(client, keyspace, {name for name, _ in checked.expiries}, header.views)
    with phase_bar(progress, "restore", checked.entries) as bar:
        skipped = _restore(client, keyspace, path, (feeds, expired), bar)
    stats.threads, stats.entries = checked.threads - len(expired), checked.entries - skipped
    stats.expired = len(expired)
    with phase_bar(progress, "replay", stats.entries) as bar:
        for domain, views in domains:
            replayer = Replayer(client, keyspace, page=page, domain=domain)
            stats.replayed += replayer.replay(views, progress=bar.advance).events
    _restore_expiries(client, keyspace, [e for log, e in checked.expiries.items() if log not in expired])
    return stats


def _set_up(client: Redis, keyspace: Keyspace, names: set[str], views: Any) -> list[tuple[Domain, Sequence[str]]]:
    """Set the target deployment up for the file's domains (checkpoints always, keeping the source's inline
    `views`, both when the file names none; the store when the file holds its logs); each with its views."""
    saver = StreamSaver(client, prefix=keyspace.prefix, partitions=keyspace.partitions,
                        projections=views or CHECKPOINTS.view_names)
    saver.setup()
    if STORE.name not in names:
        return [(CHECKPOINTS, saver.core.projections)]
    StreamStore(client, prefix=keyspace.prefix, partitions=keyspace.partitions).setup()
    return [(CHECKPOINTS, saver.core.projections), (STORE, STORE.view_names)]


def _expired(expiry: Expiry, now: int) -> bool:
    """Had the thread expired in the source by `now`? A pinned thread never does."""
    return not expiry.pinned and expiry.expires_at_ms is not None and expiry.expires_at_ms <= now


def _restore_expiries(client: Redis, keyspace: Keyspace, expiries: Sequence[Expiry]) -> None:
    """Give each thread's keys its deadline, or pin it again (``ttl.lua``, batched)."""
    calls = []
    for expiry in expiries:
        domain = DOMAINS[expiry.domain]
        if expiry.pinned:
            calls.append(ttl_call(domain, keyspace, expiry.thread, 0, "pin"))
        elif expiry.expires_at_ms is not None:
            calls.append(ttl_call(domain, keyspace, expiry.thread, expiry.expires_at_ms, "at"))
    for start in range(0, len(calls), _BATCH):
        round_trip(client, calls[start : start + _BATCH])


def _refuse_unless_empty(client: Redis, prefix: str) -> None:
    for key in client.scan_iter(match=Keyspace(prefix).pattern, count=1000):
        shown = key.decode(errors="replace")
        raise TargetNotEmptyError(
            f"the prefix {prefix!r} already holds keys (such as {shown!r}); import into an empty prefix"
        )


def _restore(
    client: Redis, keyspace: Keyspace, path: str | os.PathLike[str], writing: tuple[bool, set[LogName]],
    bar: Progress,
) -> int:
    """XADD the entries of the file (but those of the `expired` logs) into their domain's logs,
    and their feed pointers when `feeds`; returns the number of entries skipped."""
    (feeds, expired), skipped = writing, 0
    pipe: Any = client.pipeline(transaction=False)
    keys: LogKeys | None = None
    thread: LogName | None = None
    domain = CHECKPOINTS
    for record in records(path):
        if not isinstance(record, Entry):
            continue
        if record.log in expired:
            skipped += 1
            bar.advance()
            continue
        if record.log != thread:
            domain = DOMAINS[record.domain]
            thread, keys = record.log, domain.log_keys(keyspace, record.thread)
        assert keys is not None
        pipe.execute_command("XADD", keys.log, record.id, *(x for pair in record.fields for x in pair))
        if feeds:
            pointer = domain.pointer(domain.decode(dict(record.fields), record.id))
            pipe.execute_command("XADD", keys.feed, "*", ENTRY_ID, record.id, *pointer)
        if len(pipe) >= _BATCH:
            bar.advance(_sent(pipe, feeds))
    bar.advance(_sent(pipe, feeds))
    return skipped


def _sent(pipe: Any, feeds: bool) -> int:
    """Send what `pipe` queued; returns the number of entries it restored."""
    queued = len(pipe)
    pipe.execute()
    return queued // 2 if feeds else queued
