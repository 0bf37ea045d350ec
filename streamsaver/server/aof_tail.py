"""Cut a torn append-only file back to its last whole transaction, before Redis loads it.

A server killed while it writes to its AOF (SIGKILL, a power cut) can leave the last file
ending in the middle of a command. Each streamsaver append is one script, and Redis writes a
script's effects to the AOF as one ``MULTI`` ... ``EXEC``. Redis's own repair on load
(``aof-load-truncated yes``, its default) truncates the file at the last whole *command*: when
that lies inside a transaction (the tear fell in the middle of a command of a script's
effects), the file is left ending in an open ``MULTI``. The restarted server loads correctly
(it drops the open transaction), but it appends its new writes after that ``MULTI``: at the
next restart they load as part of the torn transaction, which then runs, half a script
included (its log entry without its views, or some views without the others), and
acknowledged plain commands written after it are lost if no ``EXEC`` follows. Seen with
Redis 8.2; ``redis-check-aof --fix`` cuts before the ``MULTI`` and is right.

`EmbeddedRedis` therefore starts Redis with ``aof-load-truncated no`` (a torn file stops the
start, naming it) and then calls `cut_torn_tail`, which cuts the file where
``redis-check-aof --fix`` would: after the last whole command outside a transaction, or the
last ``EXEC``. What is cut was never acknowledged: Redis replies after writing (and with
``appendfsync always`` after syncing) the whole transaction, and ``durability="aof"``
acknowledges only after ``WAITAOF``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from streamsaver.errors import EmbeddedServerError

__all__ = ["cut_torn_tail", "whole_prefix"]


class _Torn(Exception):
    """The file ends inside a command."""


def _line(file: BinaryIO, size: int, leads: bytes, path: Path) -> bytes:
    """One ``\r\n``-terminated line that starts with one of the bytes `leads`, without its
    terminator; `_Torn` when the file ends in it."""
    line = file.readline()
    if line[:1] not in leads:  # (b"" is in any: the end of the file)
        raise EmbeddedServerError(f"{path} is not an append-only file Redis wrote (at byte {file.tell() - len(line)})")
    if not line.endswith(b"\r\n") or file.tell() > size:
        raise _Torn
    return line[:-2]


def _command_name(file: BinaryIO, size: int, path: Path) -> bytes:
    """Read one command (its header at the file's position) whole; returns its name, upper case."""
    header = _line(file, size, b"*#", path)
    if header.startswith(b"#"):  # an annotation (aof-timestamp-enabled): no command
        return b""
    name = b""
    for index in range(_count(header, path)):
        length = _count(_line(file, size, b"$", path), path)
        if index == 0:
            name = file.read(min(length, 16)).upper()
            file.seek(length - len(name), os.SEEK_CUR)
        else:
            file.seek(length, os.SEEK_CUR)
        if file.tell() + 2 > size or file.read(2) != b"\r\n":
            raise _Torn
    return name


def _count(line: bytes, path: Path) -> int:
    """The number after the lead byte of a ``*<argc>`` or ``$<length>`` line."""
    if not line[1:].isdigit():
        raise EmbeddedServerError(f"{path} is not an append-only file Redis wrote: {line[:40]!r}")
    return int(line[1:])


def whole_prefix(path: Path) -> int:
    """How many leading bytes of the AOF at `path` are whole: the end of its last command
    outside a transaction, or of its last ``EXEC`` (the file's size when nothing is torn).

    Raises:
        EmbeddedServerError: the file is not a RESP append-only file, or it holds a ``MULTI``
            inside an open transaction (an earlier torn tail that a lenient load left open and
            later writes joined: where the torn transaction ends cannot be told).
    """
    size = path.stat().st_size
    whole, open_at = 0, -1
    with path.open("rb") as file:
        try:
            while file.tell() < size:
                start = file.tell()
                name = _command_name(file, size, path)
                if name == b"MULTI" and open_at >= 0:
                    raise EmbeddedServerError(
                        f"{path} holds a transaction opened at byte {open_at} and not closed before another at "
                        f"byte {start}: an earlier crash left it torn and a later load joined them; restore it "
                        "from a backup or repair it by hand")
                open_at = start if name == b"MULTI" else -1 if name == b"EXEC" else open_at
                whole = file.tell() if open_at < 0 else whole
        except _Torn:
            pass
    return whole


def cut_torn_tail(path: Path) -> int:
    """Cut the AOF at `path` after its last whole command outside a transaction (`whole_prefix`);
    returns how many bytes were cut (0: nothing was torn)."""
    whole = whole_prefix(path)
    cut = path.stat().st_size - whole
    if cut:
        with path.open("r+b") as file:
            file.truncate(whole)
            os.fsync(file.fileno())
    return cut
