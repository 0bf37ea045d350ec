"""``streamsaver import FILE``: restore exported thread logs into an empty deployment."""

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
    from streamsaver.ops.transfer import import_logs

    def bars(label: str, total: int | None) -> Progress:
        return Progress(label, total, enabled=False if args.json else None)

    with open_client(args) as client, tempfile.TemporaryDirectory(prefix="streamsaver-import-") as spool:
        path = args.file
        if path == "-":
            # The file is read twice (checked whole first, then restored): keep standard input.
            path = os.path.join(spool, "import.jsonl.gz")
            with open(path, "wb") as kept:
                shutil.copyfileobj(sys.stdin.buffer, kept)
        stats = import_logs(
            client, path, prefix=args.into_prefix, feeds=not args.no_feeds, page=args.page, progress=bars
        )
    if args.json:
        emit_json(dataclasses.asdict(stats) | {"file": args.file})
    else:
        print(
            f"imported {stats.entries:,} log entries of {stats.threads:,} threads (exported from "
            f"{stats.source!r}) into {stats.prefix!r} and replayed {stats.replayed:,} events into the views"
            + (f"; skipped {stats.expired:,} threads whose deadline had passed" if stats.expired else "")
        )
    return 0


def register(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Add ``import``."""
    parser = commands.add_parser(
        "import",
        parents=[common],
        help="restore exported thread logs into an empty deployment and rebuild its views",
        description="Restore the thread logs of FILE (written by 'streamsaver export') into an empty "
        "deployment: check the whole file first (a truncated or corrupt file writes nothing), refuse a "
        "target prefix that holds any key, set the deployment up with the file's partition count, add "
        "every entry with its original stream id, regenerate the partition feeds (new feed ids; consumer "
        "groups start afresh), rebuild the views from the logs and give every key of each thread its "
        "exported deadline and pin again; a thread whose deadline has passed is not imported (it had "
        "expired in the source). The target is --into-prefix, or the "
        "prefix the file was exported from (--prefix is not used).",
    )
    parser.add_argument("file", metavar="FILE", help="an export file; - reads standard input")
    parser.add_argument(
        "--into-prefix", metavar="P", help="the target key prefix (default: the exported one)"
    )
    parser.add_argument("--no-feeds", action="store_true", help="leave the partition feeds empty")
    parser.add_argument(
        "--page",
        type=int,
        default=500,
        help="events replayed per round trip (default: %(default)s)",
    )
    parser.set_defaults(handler=_run)
