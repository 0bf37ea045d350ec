"""``streamsaver export FILE``: the deployment's thread logs to a portable file."""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
import tempfile

from streamsaver.cli.commands._shared import emit_json, open_client
from streamsaver.ops.progress import Progress

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from streamsaver.ops.transfer import export_logs

    def bars(label: str, total: int | None) -> Progress:
        return Progress(label, total, enabled=False if args.json else None)

    to_stdout = args.file == "-"
    with open_client(args) as client, tempfile.TemporaryDirectory(prefix="streamsaver-export-") as spool:
        path = os.path.join(spool, "export.jsonl.gz") if to_stdout else args.file
        stats = export_logs(client, args.prefix, path, page=args.page, progress=bars, until=args.until)
        if to_stdout:
            # The file is complete before a byte of it is written out: a failed export writes none.
            with open(path, "rb") as written:
                shutil.copyfileobj(written, sys.stdout.buffer)
            sys.stdout.buffer.flush()
    if args.json and not to_stdout:
        emit_json(dataclasses.asdict(stats) | {"file": args.file})
    else:
        print(
            f"exported {stats.entries:,} log entries of {stats.threads:,} threads from {stats.prefix!r} to "
            + ("standard output" if to_stdout else args.file),
            file=sys.stderr if to_stdout else sys.stdout,
        )
    return 0


def register(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Add ``export``."""
    parser = commands.add_parser(
        "export",
        parents=[common],
        help="write the thread logs (the source of truth) to a portable file",
        description="Write every thread log of the deployment under --prefix to FILE: gzip-compressed "
        "JSON Lines, a header (format, version, prefix, partition count, time, streamsaver version), "
        "one line per log entry with its thread, its original stream id and its fields (base64), "
        "after each thread's entries its expiry (deadline in epoch ms or none, pinned or not: the "
        "current one, also with --until), and a trailer with the counts. The views are not exported: "
        "'streamsaver import' rebuilds "
        "them from the logs. FILE is written as FILE.part and renamed when complete. With --until, "
        "the deployment as it was at that moment: import the file under a new prefix for a "
        "point-in-time copy of every thread.",
    )
    parser.add_argument(
        "file",
        metavar="FILE",
        help="the file to write (replaced if it exists); - writes to standard output (the summary to standard error)",
    )
    parser.add_argument(
        "--until",
        metavar="TIME",
        help="export each log only up to this moment: a log entry id (1718000000000-0), epoch "
        "milliseconds, or an ISO 8601 time with a timezone (2024-06-10T09:30:00Z)",
    )
    parser.add_argument(
        "--page",
        type=int,
        default=500,
        help="log entries read per round trip (default: %(default)s)",
    )
    parser.set_defaults(handler=_run)
