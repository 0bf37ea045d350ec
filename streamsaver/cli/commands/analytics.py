"""``streamsaver analytics``: count per-node steps, write sizes and interrupts; show them."""

from __future__ import annotations

import argparse
import dataclasses

from streamsaver.cli.commands._running import run_subscriber, subscriber_options
from streamsaver.cli.commands._shared import emit_json, open_client
from streamsaver.cli.commands._table import table

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from streamsaver.examples.analytics import analytics_subscriber

    with open_client(args) as client:
        subscriber = analytics_subscriber(client, prefix=args.prefix, group=args.group, counters=args.counters,
                                          name=args.name, lease_ms=args.lease_ms,
                                          max_deliveries=args.max_deliveries)
        stats = run_subscriber(subscriber, args)
    if args.json:
        emit_json({"handled": stats.handled, "dead": stats.dead})
    else:
        print(f"{stats.handled:,} events counted, {stats.dead} dead-lettered")
    return 0


def _show(args: argparse.Namespace) -> int:
    from streamsaver.examples.analytics import report

    with open_client(args) as client:
        result = report(client, args.prefix, args.counters)
    if args.json:
        emit_json(dataclasses.asdict(result))
        return 0
    print(table(["node", "steps", "write bytes", "interrupts"],
                [[n, s.steps, s.bytes, s.interrupts] for n, s in sorted(result.nodes.items())]))
    print("checkpoints by source: " + ", ".join(f"{k} {v}" for k, v in sorted(result.checkpoints.items())))
    print("events: " + ", ".join(f"{k} {v}" for k, v in sorted(result.events.items())))
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``analytics run`` and ``analytics show``."""
    parser = commands.add_parser(
        "analytics",
        help="per-node step counts, write sizes and interrupt counts from the event feed",
        description="'run' subscribes a consumer group (default 'analytics') to the partition feeds and "
        "counts, per graph node, its steps (task runs), the bytes of its writes and its interrupts, and "
        "checkpoints by source; counts are exact under re-delivery. 'show' prints them.",
    )
    actions = parser.add_subparsers(title="actions", metavar="<action>", required=True)
    run = actions.add_parser("run", parents=[common], help="count events",
                             description="Count events until SIGINT/SIGTERM (or --burst).")
    subscriber_options(run, "analytics")
    run.add_argument("--counters", default="default", help="the counters' name (default: %(default)s)")
    run.set_defaults(handler=_run)
    show = actions.add_parser("show", parents=[common], help="print the counters",
                              description="Print the counters, summed over partitions.")
    show.add_argument("--counters", default="default", help="the counters' name (default: %(default)s)")
    show.set_defaults(handler=_show)
