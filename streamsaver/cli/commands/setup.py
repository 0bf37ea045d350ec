"""``streamsaver setup``: set a deployment up as its admin user (indexes, scripts, settings)."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING

from streamsaver.cli.commands._shared import emit_json, open_client

if TYPE_CHECKING:
    from redis import Redis

    from streamsaver.ops.index_wait import IndexState

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from streamsaver.memory.sync import StreamStore
    from streamsaver.saver.sync import StreamSaver

    asked = list(dict.fromkeys(args.view or []))
    with open_client(args) as client:
        # Without --view, the views the deployment records (a new one: the full view), as a saver's setup.
        for view in asked or ["full"]:
            saver = StreamSaver(client, prefix=args.prefix, view=view, projections=asked or None,
                                partitions=args.partitions)
            saver.setup()
        views = list(saver.core.projections)
        if not args.no_store:
            StreamStore(client, prefix=args.prefix, partitions=args.partitions).setup()
        indexes = _wait(client, args) if args.wait is not None else None
    done: dict[str, object] = {"prefix": args.prefix, "views": views, "store": not args.no_store}
    if indexes is not None:
        done["indexes"] = [{"name": s.name, "node": s.node, "documents": s.documents} for s in indexes]
    if args.json:
        emit_json(done)
    else:
        print(f"set up {args.prefix!r}: views {', '.join(views)}" + ("" if args.no_store else " and the store"))
        if indexes is not None:
            print(f"indexed: {len(indexes)} index(es), {sum(s.documents for s in indexes):,} documents")
    return 0


def _wait(client: Redis, args: argparse.Namespace) -> list[IndexState]:
    """Wait for every index of the deployment to finish its scan, the slowest one's share shown
    as progress (per mille, so the rate and ETA mean something)."""
    from streamsaver.log.keys import Keyspace
    from streamsaver.ops.index_wait import wait_indexed
    from streamsaver.ops.progress import Progress

    with Progress("slowest index scanned (per mille)", total=1000, enabled=False if args.json else None) as bar:
        def report(states: list[IndexState]) -> None:
            slowest = min((s.done if s.indexing else 1.0 for s in states), default=1.0)
            bar.advance(max(0, round(slowest * 1000) - bar.done))

        timeout = None if math.isinf(args.wait) else args.wait
        return wait_indexed(client, Keyspace(args.prefix), timeout, report)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"the wait must be above 0 seconds, not {text}")
    return value


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``setup``."""
    parser = commands.add_parser(
        "setup",
        parents=[common],
        help="create the deployment's indexes, load its scripts and fix its settings (as the admin user)",
        description="What setup() does, for the checkpoint views and the store: check the search and JSON "
        "modules, fix the partition count in the deployment's settings, create the missing indexes "
        "and load the scripts. Idempotent. Run it as the deployment's admin user (`streamsaver acl` "
        "prints its ACL line) before the application starts: the runtime user may create no index, "
        "and its setup() only checks that they are there (IndexMissingError otherwise).",
    )
    parser.add_argument("--view", action="append", choices=["full", "shallow"],
                        help="a checkpoint view the deployment keeps inline (repeatable; recorded by the "
                        "first setup; default: the views the deployment records, on a new one the full view; "
                        "give both when its savers read both)")
    parser.add_argument("--partitions", type=int, default=None,
                        help="the partition count of a new deployment (an existing one keeps its own)")
    parser.add_argument("--no-store", action="store_true", help="leave the store's index alone")
    parser.add_argument("--wait", nargs="?", type=_seconds, const=math.inf, default=None, metavar="SECONDS",
                        help="then wait until every index of the deployment has scanned the keyspace (a new or "
                        "re-created index indexes the documents already there in the background, walking the "
                        "whole server's keyspace: until it ends, listings and searches miss documents), "
                        "showing progress; as long as it takes, or at most SECONDS (exit 1 with "
                        "IndexNotReadyError if still indexing then: the scan goes on, wait again)")
    parser.set_defaults(handler=_run)
