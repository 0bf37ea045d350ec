"""``streamsaver setup``: set a deployment up as its admin user (indexes, scripts, settings)."""

from __future__ import annotations

import argparse

from streamsaver.cli.commands._shared import emit_json, open_client

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
    done = {"prefix": args.prefix, "views": views, "store": not args.no_store}
    if args.json:
        emit_json(done)
    else:
        print(f"set up {args.prefix!r}: views {', '.join(views)}" + ("" if args.no_store else " and the store"))
    return 0


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
    parser.set_defaults(handler=_run)
