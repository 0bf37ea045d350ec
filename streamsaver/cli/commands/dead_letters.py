"""``streamsaver dead-letters``: list and re-queue a subscriber group's dead letters."""

from __future__ import annotations

import argparse
import dataclasses

from streamsaver.cli.commands._shared import emit_json, open_client
from streamsaver.cli.commands._table import table

__all__ = ["register"]


def _list(args: argparse.Namespace) -> int:
    from streamsaver.feeds.admin import dead_letters

    with open_client(args) as client:
        letters = dead_letters(client, args.prefix, args.group, args.count)
    if args.json:
        emit_json([{k: v for k, v in dataclasses.asdict(d).items() if k != "fields"} for d in letters])
        return 0
    if not letters:
        print(f"no dead letters for group {args.group!r}")
        return 0
    print(table(["dead letter", "partition", "type", "thread", "log entry", "attempts", "error"],
                [[d.id, d.partition, d.type, d.thread_id, d.log_id, d.attempts, d.error] for d in letters]))
    return 0


def _requeue(args: argparse.Namespace) -> int:
    from streamsaver.errors import InvalidInputError
    from streamsaver.feeds.admin import requeue_dead_letters

    if not args.all and not args.ids:
        raise InvalidInputError("name the dead letters to re-queue (ids as 'list' shows them), or pass --all")
    with open_client(args) as client:
        count = requeue_dead_letters(client, args.prefix, args.group, None if args.all else set(args.ids))
    if args.json:
        emit_json({"group": args.group, "requeued": count})
    else:
        print(f"re-queued {count} dead letter(s) for group {args.group!r}")
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``dead-letters list`` and ``dead-letters requeue``."""
    parser = commands.add_parser(
        "dead-letters",
        help="list or re-queue the events a subscriber group's handler kept failing on",
        description="A subscriber moves an event its handler failed on --max-deliveries times to the "
        "group's dead-letter stream (P:sub:dead:<group>) and goes on with the partition. 'list' shows "
        "them (event type, thread, log entry, attempts, last error); 'requeue' puts them back on their "
        "partition feed for that group only (other groups skip them) and removes them from the dead "
        "letters: fix the handler first. A re-queued event comes after the events of its thread "
        "handled meanwhile.",
    )
    actions = parser.add_subparsers(title="actions", metavar="<action>", required=True)
    listing = actions.add_parser("list", parents=[common], help="show the dead letters, oldest first",
                                 description="Show a subscriber group's dead letters, oldest first.")
    listing.add_argument("--group", required=True, help="the subscriber group")
    listing.add_argument("--count", type=int, default=None, help="show at most this many")
    listing.set_defaults(handler=_list)
    requeue = actions.add_parser("requeue", parents=[common], help="put dead letters back on their feeds",
                                 description="Re-queue dead letters (the ids 'list' shows, or --all) for "
                                 "their group and delete them from the dead letters.")
    requeue.add_argument("--group", required=True, help="the subscriber group")
    requeue.add_argument("ids", nargs="*", help="dead letter ids (as 'list' shows them)")
    requeue.add_argument("--all", action="store_true", help="re-queue every dead letter of the group")
    requeue.set_defaults(handler=_requeue)
