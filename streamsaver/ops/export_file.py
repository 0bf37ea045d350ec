"""The export file format ``streamsaver-logs``: its header, its entries, and reading it back.

`streamsaver.ops.transfer` writes and imports these files; this module reads and checks them
(format, base64, stream ids rising within each thread, every event readable by this version,
trailer counts) so that a truncated or corrupt file is refused before anything is written.
The format itself is described in `streamsaver.ops.transfer`. Version 1 files (no expiry lines)
still read: their threads carry no expiry; version 1 and 2 files hold checkpoint logs only
(version 3 marks the lines of another domain's logs, the store's, with ``"domain"``).
"""

from __future__ import annotations

import base64
import gzip
import os
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from projectors.domain import CHECKPOINTS
from projectors.store_domain import STORE
from streamsaver.errors import EventDecodeError, ExportFileError
from streamsaver.log.domain import Domain
from streamsaver.ops.progress import Progress

__all__ = ["DOMAINS", "FORMAT", "VERSION", "Checked", "Entry", "Expiry", "Header", "LogName", "ProgressFactory",
           "check_export", "check_file", "phase_bar", "records", "views_field"]

FORMAT = "streamsaver-logs"
VERSION = 3
DOMAINS: dict[str, Domain] = {CHECKPOINTS.name: CHECKPOINTS, STORE.name: STORE}
"""The domains whose logs an export carries, by the name their lines give (none: checkpoints)."""
LogName = tuple[str, str]
"""A log of the file: (its domain's name, its thread or partition id)."""
_ID = re.compile(r"^[0-9]+-[0-9]+$")

ProgressFactory = Callable[[str, "int | None"], Progress]
"""Makes the progress display of one phase from its label and expected count (None: unknown),
e.g. ``lambda label, total: Progress(label, total)``. Export has the phase ``export``; import
has ``check``, ``restore`` and ``replay``."""


@dataclass(frozen=True)
class Header:
    """The first line of an export file."""

    prefix: str
    partitions: int
    created: str
    streamsaver: str
    version: int = VERSION
    views: tuple[str, ...] | None = None
    """The source's inline views (None: the file does not name them)."""


@dataclass(frozen=True)
class Entry:
    """One log entry of an export file (its line number, thread, stream id and fields)."""

    line: int
    thread: str
    id: str
    fields: list[tuple[bytes, bytes]]
    domain: str = CHECKPOINTS.name
    """The name of the domain whose log holds it (`DOMAINS`)."""

    @property
    def log(self) -> LogName:
        """Its log: (domain, thread)."""
        return self.domain, self.thread


@dataclass(frozen=True)
class Expiry:
    """A thread's expiry at export (version 2: the line after its last entry).

    Attributes:
        line: its line number.
        thread: the thread id.
        expires_at_ms: the deadline of every key of the thread, ms since the epoch; None: none.
        pinned: the thread was pinned (never expires; a pin persists every key, whatever the deadline).
    """

    line: int
    thread: str
    expires_at_ms: int | None
    pinned: bool
    domain: str = CHECKPOINTS.name

    @property
    def log(self) -> LogName:
        """Its log: (domain, thread)."""
        return self.domain, self.thread


@dataclass(frozen=True)
class Checked:
    """What `check_file` found: the header, the thread and entry counts, and each thread's
    expiry (empty for a version-1 file)."""

    header: Header
    threads: int
    entries: int
    expiries: dict[LogName, Expiry]


def phase_bar(progress: ProgressFactory | None, label: str, total: int | None) -> Progress:
    """The progress display of one phase; a silent one when `progress` is None."""
    return progress(label, total) if progress is not None else Progress(label, total, enabled=False)


def _lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, bytes]]:
    try:
        with gzip.open(path, "rb") as file:
            yield from enumerate(file, 1)
    except EOFError as exc:
        raise ExportFileError(f"{os.fspath(path)} is truncated: {exc}") from exc
    except (OSError, zlib.error) as exc:
        raise ExportFileError(f"{os.fspath(path)} cannot be read as a streamsaver export: {exc}") from exc


def _json(line: bytes, number: int) -> dict[str, Any]:
    try:
        document = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise ExportFileError(f"line {number} of the export is not JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise ExportFileError(f"line {number} of the export is not a JSON object")
    return document


def views_field(recorded: Any) -> dict[str, list[str]]:
    """The header's ``views`` (the source's inline views, from its settings' ``views`` field,
    bytes or None), or nothing when it records none."""
    if recorded is None:
        return {}
    text = recorded.decode() if isinstance(recorded, bytes) else str(recorded)
    return {"views": [view for view in text.split(",") if view]}


def _header(line: bytes) -> Header:
    document = _json(line, 1)
    if document.get("format") != FORMAT:
        raise ExportFileError(f"not a streamsaver export: the first line has no format {FORMAT!r}")
    version = document.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise ExportFileError(f"export format version {version!r}: this streamsaver reads up to {VERSION}")
    try:
        fields = (str(document[k]) for k in ("prefix", "partitions", "created", "streamsaver"))
        prefix, partitions, created, writer = fields
        views = document.get("views")
        named = tuple(str(v) for v in views) if isinstance(views, list) and views else None
        return Header(prefix, int(partitions), created, writer, version, named)
    except (KeyError, TypeError, ValueError) as exc:
        raise ExportFileError(f"the export's header lacks or garbles {exc}") from exc


def _entry(document: dict[str, Any], number: int) -> Entry:
    thread, entry_id, pairs = document.get("thread"), document.get("id"), document.get("fields")
    if not isinstance(thread, str) or not isinstance(entry_id, str) or not _ID.match(entry_id):
        raise ExportFileError(f"line {number} of the export has no valid thread and stream id")
    if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
        raise ExportFileError(f"line {number} of the export has no valid fields")
    try:
        fields = [(base64.b64decode(k, validate=True), base64.b64decode(v, validate=True)) for k, v in pairs]
    except (TypeError, ValueError) as exc:
        raise ExportFileError(f"line {number} of the export has a field that is not base64: {exc}") from exc
    return Entry(number, thread, entry_id, fields, _domain(document, number))


def _domain(document: dict[str, Any], number: int) -> str:
    name = document.get("domain", CHECKPOINTS.name)
    if name not in DOMAINS:
        raise ExportFileError(f"line {number} of the export names an unknown domain {name!r}")
    return str(name)


def _expiry(document: dict[str, Any], number: int) -> Expiry:
    thread, deadline, pinned = document.get("thread"), document.get("expires_at_ms"), document.get("pinned")
    if not isinstance(thread, str):
        raise ExportFileError(f"line {number} of the export is an expiry line without a valid thread")
    if deadline is not None and (isinstance(deadline, bool) or not isinstance(deadline, int) or deadline < 0):
        raise ExportFileError(f"line {number} of the export has an expires_at_ms that is neither null nor epoch ms")
    if not isinstance(pinned, bool):
        raise ExportFileError(f"line {number} of the export has a pinned that is not true or false")
    return Expiry(number, thread, deadline, pinned, _domain(document, number))


def records(path: str | os.PathLike[str]) -> Iterator[Header | Entry | Expiry | tuple[int, int]]:
    """The header, the entries, the expiry lines (version 2) and the trailer's counts (threads,
    entries); ExportFileError for a file that is not an export, is truncated or corrupt."""
    lines = _lines(path)
    number, first = next(lines, (0, b""))
    if number == 0:
        raise ExportFileError(f"{os.fspath(path)} is empty")
    yield _header(first)
    for number, line in lines:
        document = _json(line, number)
        if document.get("end") is True:
            if next(lines, None) is not None:
                raise ExportFileError(f"the export goes on after its trailer (line {number})")
            try:
                yield int(document["threads"]), int(document["entries"])
            except (KeyError, TypeError, ValueError) as exc:
                raise ExportFileError(f"the export's trailer (line {number}) lacks or garbles {exc}") from exc
            return
        yield _expiry(document, number) if "pinned" in document or "expires_at_ms" in document else _entry(
            document, number)
    raise ExportFileError(f"{os.fspath(path)} ends without its trailer line: the file is truncated")


def check_export(path: str | os.PathLike[str], *, progress: ProgressFactory | None = None) -> tuple[Header, int, int]:
    """`check_file`'s header, number of threads and number of entries."""
    checked = check_file(path, progress=progress)
    return checked.header, checked.threads, checked.entries


def check_file(path: str | os.PathLike[str], *, progress: ProgressFactory | None = None) -> Checked:
    """Read a whole export file without writing anything: is it complete and importable?

    Args:
        path: the export file.
        progress: makes the progress display (phase ``check``); none if None.

    Returns:
        The header, the numbers of threads and entries, and each thread's expiry (version 2:
        one per thread, after its last entry; none in a version-1 file).

    Raises:
        ExportFileError: the file is not an export, is of a newer format, is truncated or
            corrupt (an expiry line included), or holds an event this version cannot read.
    """
    reading = records(path)
    header = next(reading)
    assert isinstance(header, Header)
    last: dict[LogName, tuple[int, ...]] = {}
    expiries: dict[LogName, Expiry] = {}
    entries = 0
    with phase_bar(progress, "check", None) as bar:
        for record in reading:
            if isinstance(record, tuple):
                _check_trailer(header, record, (len(last), entries), expiries)
                return Checked(header, len(last), entries, expiries)
            if isinstance(record, Expiry):
                _check_expiry(header, record, last, expiries)
                continue
            assert isinstance(record, Entry)
            if record.log in expiries:
                raise ExportFileError(f"line {record.line}: an entry of thread {record.thread!r} after its expiry line")
            _check_entry(record, last, header.version)
            entries += 1
            bar.advance()
    raise AssertionError("unreachable: records ends with a trailer or raises")


def _check_trailer(
    header: Header, counts: tuple[int, int], held: tuple[int, int], expiries: dict[LogName, Expiry]
) -> None:
    if counts != held:
        raise ExportFileError(
            f"the export's trailer counts {counts[0]} threads and {counts[1]} entries, "
            f"the file holds {held[0]} and {held[1]}"
        )
    if header.version >= 2 and len(expiries) != held[0]:
        raise ExportFileError(f"the export holds {held[0]} threads but {len(expiries)} expiry lines")


def _check_expiry(
    header: Header, expiry: Expiry, last: dict[LogName, tuple[int, ...]], seen: dict[LogName, Expiry]
) -> None:
    if header.version < 2:
        raise ExportFileError(f"line {expiry.line}: an expiry line in a version-{header.version} export")
    if expiry.log not in last or expiry.log in seen:
        raise ExportFileError(f"line {expiry.line}: an expiry line of thread {expiry.thread!r} not after its entries")
    seen[expiry.log] = expiry


def _check_entry(entry: Entry, last: dict[LogName, tuple[int, ...]], version: int) -> None:
    if entry.domain != CHECKPOINTS.name and version < 3:
        raise ExportFileError(f"line {entry.line}: a {entry.domain} log in a version-{version} export")
    key = tuple(int(part) for part in entry.id.split("-"))
    if key <= last.get(entry.log, (0, 0)):
        raise ExportFileError(f"line {entry.line}: stream id {entry.id} does not follow the thread's previous one")
    last[entry.log] = key
    try:
        event = DOMAINS[entry.domain].decode(dict(entry.fields), entry.id)
    except EventDecodeError as exc:
        raise ExportFileError(f"line {entry.line}: {exc}") from exc
    if event.thread_id != entry.thread:
        raise ExportFileError(f"line {entry.line}: an event of thread {event.thread_id!r} in {entry.thread!r}")
