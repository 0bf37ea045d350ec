"""The export file format ``streamsaver-logs``: its header, its entries, and reading it back.

`streamsaver.transfer` writes and imports these files; this module reads and checks them
(format, base64, stream ids rising within each thread, every event readable by this version,
trailer counts) so that a truncated or corrupt file is refused before anything is written.
The format itself is described in `streamsaver.transfer`.
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

from streamsaver.errors import EventDecodeError, ExportFileError
from streamsaver.events import from_fields
from streamsaver.progress import Progress

__all__ = ["FORMAT", "VERSION", "Entry", "Header", "ProgressFactory", "check_export", "phase_bar", "records"]

FORMAT = "streamsaver-logs"
VERSION = 1
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


@dataclass(frozen=True)
class Entry:
    """One log entry of an export file (its line number, thread, stream id and fields)."""

    line: int
    thread: str
    id: str
    fields: list[tuple[bytes, bytes]]



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
        return Header(prefix, int(partitions), created, writer, version)
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
    return Entry(number, thread, entry_id, fields)


def records(path: str | os.PathLike[str]) -> Iterator[Header | Entry | tuple[int, int]]:
    """The header, the entries and the trailer's counts (threads, entries); ExportFileError
    for a file that is not an export, is truncated or corrupt."""
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
        yield _entry(document, number)
    raise ExportFileError(f"{os.fspath(path)} ends without its trailer line: the file is truncated")


def check_export(path: str | os.PathLike[str], *, progress: ProgressFactory | None = None) -> tuple[Header, int, int]:
    """Read a whole export file without writing anything: is it complete and importable?

    Args:
        path: the export file.
        progress: makes the progress display (phase ``check``); none if None.

    Returns:
        The header, the number of threads and the number of entries.

    Raises:
        ExportFileError: the file is not an export, is of a newer format, is truncated or
            corrupt, or holds an event this version cannot read.
    """
    reading = records(path)
    header = next(reading)
    assert isinstance(header, Header)
    last: dict[str, tuple[int, ...]] = {}
    entries = 0
    with phase_bar(progress, "check", None) as bar:
        for record in reading:
            if isinstance(record, tuple):
                if record != (len(last), entries):
                    raise ExportFileError(
                        f"the export's trailer counts {record[0]} threads and {record[1]} entries, "
                        f"the file holds {len(last)} and {entries}"
                    )
                return header, len(last), entries
            assert isinstance(record, Entry)
            _check_entry(record, last)
            entries += 1
            bar.advance()
    raise AssertionError("unreachable: records ends with a trailer or raises")


def _check_entry(entry: Entry, last: dict[str, tuple[int, ...]]) -> None:
    key = tuple(int(part) for part in entry.id.split("-"))
    if key <= last.get(entry.thread, (0, 0)):
        raise ExportFileError(f"line {entry.line}: stream id {entry.id} does not follow the thread's previous one")
    last[entry.thread] = key
    try:
        event = from_fields(dict(entry.fields), entry.id)
    except EventDecodeError as exc:
        raise ExportFileError(f"line {entry.line}: {exc}") from exc
    if event.thread_id != entry.thread:
        raise ExportFileError(f"line {entry.line}: an event of thread {event.thread_id!r} in {entry.thread!r}")
