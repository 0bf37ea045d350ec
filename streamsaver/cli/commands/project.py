"""``streamsaver project``: keep views current from the partition feeds (the projector worker)."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import signal
import sys
from types import FrameType
from typing import TYPE_CHECKING

from streamsaver.cli.commands._running import status_lines
from streamsaver.cli.commands._shared import UsageError, emit_json, open_client
from streamsaver.cli.commands._store import store_option

if TYPE_CHECKING:
    from streamsaver.feeds.worker import ProjectorWorker, WorkerStats

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from projectors.domain import CHECKPOINTS
    from projectors.store_domain import STORE
    from streamsaver.feeds.worker import ProjectorWorker

    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if bool(args.view) == args.store:
        raise UsageError("name the views to keep (--view full/shallow) or --store, one of them")
    views = ["items"] if args.store else args.view
    args.view = views
    with open_client(args) as client:
        worker = ProjectorWorker(
            client, args.prefix, views, name=args.name, lease_ms=args.lease_ms, batch=args.batch,
            start="$" if args.from_end else "0", domain=STORE if args.store else CHECKPOINTS,
        )
        if args.prepare_only:
            worker.prepare()
            result: dict[str, object] = {"worker": worker.name, "views": args.view, "prepared": True}
        else:
            worker.prepare()  # idempotent: a server that cannot serve fails here, before the start line
            print(f"projector worker {worker.name}: keeping {', '.join(args.view)} of {args.prefix!r} "
                  f"{'until the feeds are drained' if args.burst else 'current (Ctrl-C stops)'}",
                  file=sys.stderr, flush=True)
            with status_lines(f"projector worker {worker.name}", lambda: worker.core.running):
                stats = worker.run_burst() if args.burst else _until_signal(worker)
            result = {"worker": worker.name, "views": args.view, **dataclasses.asdict(stats)}
    if args.json:
        emit_json(result)
    elif args.prepare_only:
        print(f"consumer groups and indexes ready for {', '.join(args.view)}")
    else:
        print(f"{result['read']:,} pointers: {result['applied']:,} applied, {result['skipped']:,} already "
              f"applied, {result['gone']:,} gone, {result['dead']:,} dead-lettered")
    return 0


def _until_signal(worker: ProjectorWorker) -> WorkerStats:
    """Run until SIGINT or SIGTERM, which stop the worker cleanly (its leases are released)."""

    def stop(signum: int, frame: FrameType | None) -> None:
        worker.stop()

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        return worker.run()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def register(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Add ``project``."""
    parser = commands.add_parser(
        "project",
        parents=[common],
        help="keep views current from the partition feeds (projector worker)",
        description="Run a projector worker: for each view, a consumer group on every partition "
        "feed; each pointer's log entry is applied to the view through the same projectors as the "
        "append and replay (a second delivery is a no-op). Start several workers to share the "
        "partitions: a partition has one owner at a time (a lease), and a dead worker's "
        "partitions move to the others once its lease expires. Stops cleanly on SIGINT/SIGTERM. "
        "To add a view to a live deployment: 'project --view V --from-end --prepare-only', then "
        "'replay --view V', then 'project --view V' (see docs/worker.md). --store keeps the memory "
        "store's items view from the store's own feeds (the store projects inline, so the worker "
        "applies only what the view lacks, e.g. after its keys were lost).",
    )
    parser.add_argument(
        "--view", action="append", choices=["full", "shallow"], help="a view to keep (repeatable; or --store)"
    )
    store_option(parser, "its items view, from the store partition feeds")
    parser.add_argument("--burst", action="store_true", help="drain what is pending and new, then exit")
    parser.add_argument(
        "--prepare-only", action="store_true", help="create the consumer groups and the view indexes, then exit"
    )
    parser.add_argument(
        "--from-end",
        action="store_true",
        help="create missing consumer groups at the end of each feed ('$') instead of its start ('0'); "
        "for a view backfilled with 'replay' after the groups were made",
    )
    parser.add_argument("--name", help="this worker's name, unique among live workers (default: host-pid-random)")
    parser.add_argument("--lease-ms", type=int, default=10_000, help="lease time-to-live (default: %(default)s)")
    parser.add_argument(
        "--batch", type=int, default=100, help="pointers per partition per cycle (default: %(default)s)"
    )
    parser.set_defaults(handler=_run)
