"""``streamsaver drop``: remove a whole deployment (`streamsaver.ops.teardown`), after a
confirmation."""

from __future__ import annotations

import argparse
import sys

from streamsaver.cli.commands._shared import UsageError, emit_json, open_client

__all__ = ["register"]

DESCRIPTION = """\
Remove the deployment under --prefix from the server: every thread log (the truth: this
cannot be undone; 'streamsaver export FILE' first keeps a copy), the partition feeds and their
consumer groups, the views and their RediSearch indexes, positions, projector and subscriber
state (leases, members, dead letters), the memory store (its partition logs, feeds, items and
index), and the scratch keys of an interrupted shadow rebuild or verify. Another deployment
whose prefix starts with this one's (PREFIX:tenant2) is left alone. Lua scripts are shared by
every deployment on the server and stay loaded.

It first prints what it would remove, then asks you to type the prefix; --yes skips the
question (for scripts). Without a terminal to ask on, --yes is required (exit 2). Stop the
application first: a writer still running would recreate keys. Nothing under the prefix:
prints so and exits 0.
"""


def _confirmed(prefix: str) -> bool:
    """Whether the operator typed the prefix back (on the terminal)."""
    if not sys.stdin.isatty():
        raise UsageError("refusing to drop without confirmation: pass --yes (stdin is not a terminal)")
    print(f"type the prefix ({prefix}) to remove it for good: ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip() == prefix


def _run(args: argparse.Namespace) -> int:
    from streamsaver.ops.teardown import drop, plan_drop

    with open_client(args) as client:
        plan = plan_drop(client, args.prefix)
        summary = (f"{plan.prefix}: {len(plan.keys):,} key(s) ({plan.threads:,} thread log(s)), "
                   f"{len(plan.indexes)} index(es)")
        if plan.kept:
            summary += f"; kept: the deployment(s) {', '.join(plan.kept)}"
        if plan.empty:
            removed = 0
        else:
            print(f"would remove {summary}", file=sys.stderr)
            if not args.yes and not _confirmed(args.prefix):
                print("not confirmed: nothing removed", file=sys.stderr)
                return 1
            removed = drop(client, plan)
    if args.json:
        emit_json({**plan.as_dict(), "removed_keys": removed})
    elif plan.empty:
        print(f"nothing under the prefix {args.prefix!r}: nothing removed")
    else:
        print(f"removed {removed:,} key(s) and {len(plan.indexes)} index(es) of {args.prefix!r}")
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``drop``."""
    parser = commands.add_parser(
        "drop",
        parents=[common],
        help="remove a whole deployment: logs, feeds, views, indexes, store, worker state (asks first)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--yes", action="store_true", help="do not ask for confirmation (for scripts)")
    parser.set_defaults(handler=_run)
