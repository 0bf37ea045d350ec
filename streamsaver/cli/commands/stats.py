"""``streamsaver stats``: threads, events, bytes, and consumer-group lag."""

from __future__ import annotations

import argparse
import dataclasses

from streamsaver.cli.commands._shared import emit_json, open_client
from streamsaver.cli.commands._store import store_option
from streamsaver.cli.commands._table import table
from streamsaver.ops.progress import Progress

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from projectors.domain import CHECKPOINTS
    from projectors.store_domain import STORE
    from streamsaver.ops.inspection import deployment_stats

    domain = STORE if args.store else CHECKPOINTS
    with open_client(args) as client, Progress("logs", enabled=None if not args.json else False) as bar:
        stats = deployment_stats(client, args.prefix, progress=bar.advance, domain=domain)
    if args.json:
        document = dataclasses.asdict(stats)
        if not args.partitions:
            document.pop("partitions")
        emit_json(document)
        return 0
    logs = "store partitions" if args.store else "threads"
    print(f"{logs} {stats.threads:,}  events {stats.events:,}  log bytes {stats.log_bytes:,}  "
          f"feed pointers {stats.feed_entries:,}")
    if stats.groups:
        print(table(["consumer group", "pending", "lag", "dead letters"],
                    [[name, g["pending"], g["lag"], g.get("dead_letters", "-")]
                     for name, g in sorted(stats.groups.items())]))
    if args.partitions and stats.partitions:
        print(table(["consumer group", "partition", "pending", "lag", "last delivered", "owner"],
                    [[h.group, h.partition, h.pending, "?" if h.lag is None else h.lag, h.last_delivered,
                      h.owner or "-"]
                     for h in stats.partitions]))
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``stats``."""
    parser = commands.add_parser(
        "stats",
        parents=[common],
        help="count threads, events and log bytes; show each consumer group's pending, lag and dead letters",
        description="Scan the deployment's thread logs (threads, events, bytes by MEMORY USAGE) "
        "and its partition feeds (pointers, and for each consumer group, e.g. a projector "
        "worker's or a subscriber group's, its pending entries and lag summed over partitions, and a "
        "subscriber group's dead letters). --partitions adds one row per group and partition: "
        "pending (delivered, not acknowledged), lag (not delivered yet), last delivered id, and the "
        "subscriber holding the partition's lease. --store counts the memory store's partition logs "
        "and feeds instead (a store subscriber's or projector's groups).",
    )
    parser.add_argument("--partitions", action="store_true", help="show every group on every partition")
    store_option(parser, "its partition logs (their count is 'threads' in --json), its feeds and their groups")
    parser.set_defaults(handler=_run)
