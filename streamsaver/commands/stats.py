"""``streamsaver stats``: threads, events, bytes, and consumer-group lag."""

from __future__ import annotations

import argparse
import dataclasses

from streamsaver.commands._shared import emit_json, open_client
from streamsaver.commands._table import table
from streamsaver.progress import Progress

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from streamsaver.inspection import deployment_stats

    with open_client(args) as client, Progress("logs", enabled=None if not args.json else False) as bar:
        stats = deployment_stats(client, args.prefix, progress=bar.advance)
    if args.json:
        emit_json(dataclasses.asdict(stats))
        return 0
    print(f"threads {stats.threads:,}  events {stats.events:,}  log bytes {stats.log_bytes:,}  "
          f"feed pointers {stats.feed_entries:,}")
    if stats.groups:
        print(table(["consumer group", "pending", "lag"],
                    [[name, g["pending"], g["lag"]] for name, g in sorted(stats.groups.items())]))
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``stats``."""
    parser = commands.add_parser(
        "stats",
        parents=[common],
        help="count threads, events and log bytes; show each consumer group's pending and lag",
        description="Scan the deployment's thread logs (threads, events, bytes by MEMORY USAGE) "
        "and its partition feeds (pointers, and for each consumer group, e.g. a projector "
        "worker's, its pending entries and lag summed over partitions).",
    )
    parser.set_defaults(handler=_run)
