"""``streamsaver restore``: a new thread holding another thread's history up to a moment."""

from __future__ import annotations

import argparse

from streamsaver.cli.commands._shared import emit_json, open_client

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from streamsaver.ops.restore import restore_thread

    with open_client(args) as client:
        report = restore_thread(
            client, args.thread, at=args.at, into=args.into, prefix=args.prefix, projections=args.view
        )
    if args.json:
        emit_json(report.to_dict())
    else:
        print(
            f"restored {report.events:,} events ({report.checkpoints:,} checkpoints) of thread "
            f"{report.thread_id!r} up to log entry {report.last_source_entry} into thread {report.into!r}"
        )
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``restore``."""
    parser = commands.add_parser(
        "restore",
        parents=[common],
        help="copy a thread's history up to a checkpoint or a point in time into a new thread",
        description="Point-in-time restore: read THREAD's log up to and including TIME, and append "
        "those events under the thread id NEW_THREAD through the normal append path, so the new "
        "thread has its own log and views: the same checkpoints (ids, metadata, values) and "
        "pending writes as THREAD had at TIME, and none of its later history. THREAD is not "
        "changed. Refused when NEW_THREAD already exists or THREAD has no event up to TIME; "
        "either the whole history is copied or nothing.",
    )
    parser.add_argument("thread", metavar="THREAD", help="the thread to restore")
    parser.add_argument(
        "--at",
        required=True,
        metavar="CHECKPOINT_ID|TIME",
        help="a checkpoint id of THREAD (as get_state_history lists them: the thread as it was when "
        "that checkpoint was saved), a log entry id (1718000000000-0: that entry and all before it), "
        "an epoch time in milliseconds, or an ISO 8601 time with a timezone (2024-06-10T09:30:00Z)",
    )
    parser.add_argument("--into", required=True, metavar="NEW_THREAD", help="the id of the new thread")
    parser.add_argument(
        "--view",
        action="append",
        choices=["full", "shallow"],
        help="a view to project the new thread into (repeatable; default: the views the source "
        "thread is projected into)",
    )
    parser.set_defaults(handler=_run)
