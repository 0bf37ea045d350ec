"""``streamsaver verify``: do the views say exactly what the thread logs say?"""

from __future__ import annotations

import argparse

from streamsaver.cli.commands._shared import chosen_views, emit_json, open_client
from streamsaver.ops.progress import Progress

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from streamsaver.ops.replay import Replayer
    from streamsaver.ops.verify import verify

    views = chosen_views(args)
    with open_client(args) as client:
        total = sum(int(client.xlen(log)) for log in Replayer.open(client, args.prefix).thread_logs())
        with Progress("events", total, enabled=None if not args.json else False) as bar:
            report = verify(client, args.prefix, views, max_differences=args.max_differences, progress=bar.advance)
    if args.json:
        emit_json(report.to_dict())
    else:
        print(
            f"folded {report.events:,} events of {report.threads:,} threads into scratch "
            f"{', '.join(report.views)} views and compared {report.keys_compared:,} keys: "
            f"{report.equal:,} equal, {report.missing:,} missing, {report.extra:,} extra, "
            f"{report.different:,} different"
        )
        for difference in report.differences:
            print(f"  {difference.kind:<9} {difference.key}\n            {difference.detail}")
        shown = len(report.differences)
        if shown < report.missing + report.extra + report.different:
            print(f"  ... and {report.missing + report.extra + report.different - shown:,} more")
        print("the views match the logs" if report.matches else "the views DIFFER from the logs")
    return 0 if report.matches else 1


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``verify``."""
    parser = commands.add_parser(
        "verify",
        parents=[common],
        help="check that the views equal what the thread logs say (exit 0 only when they do)",
        description="Fold every thread log afresh into scratch keys of the same Redis (under "
        "PREFIX:verify.<random>, deleted at the end, also on error), through the same projectors "
        "as the live appends, and compare every view key and position with its scratch twin: "
        "JSON documents, pointer hashes, id sets and sorted sets. Prints the counts of keys equal, "
        "missing (the logs give them, the views lack them), extra (no logged event accounts for "
        "them) and different, and the first differences. Exit code 0 only when the views match "
        "the logs, 1 otherwise. Writes landing while it runs may show as differences: verify a "
        "quiet deployment, or run it again. `streamsaver replay` repairs the views.",
    )
    parser.add_argument(
        "--view", action="append", choices=["full", "shallow"],
        help="a view to verify (repeatable; default: the views the deployment keeps)",
    )
    parser.add_argument(
        "--max-differences",
        type=int,
        default=20,
        metavar="N",
        help="how many differences to detail (all are counted; default: %(default)s)",
    )
    parser.set_defaults(handler=_run)
