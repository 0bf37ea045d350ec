"""``streamsaver trim-feeds``: drop partition-feed entries every consumer group acknowledged."""

from __future__ import annotations

import argparse

from streamsaver.cli.commands._shared import emit_json, open_client

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from streamsaver.feeds.admin import trim_feeds

    with open_client(args) as client:
        removed = trim_feeds(client, args.prefix)
    if args.json:
        emit_json({"removed": sum(removed.values()), "partitions": removed})
    else:
        print(f"removed {sum(removed.values()):,} feed entries from {len(removed)} partition feed(s)")
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``trim-feeds``."""
    parser = commands.add_parser(
        "trim-feeds",
        parents=[common],
        help="drop partition-feed entries that every consumer group has acknowledged",
        description="Trim each partition feed below the oldest entry some consumer group (subscribers "
        "and projector workers alike) still needs: its oldest pending entry, or the first entry after "
        "its last delivered one. A feed with no consumer group is left alone. Thread logs, the "
        "truth, are never trimmed by this. Safe to run any time, e.g. from cron.",
    )
    parser.set_defaults(handler=_run)
