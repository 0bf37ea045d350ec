"""``streamsaver audit``: write a hash-chained audit trail from the feeds, and verify one."""

from __future__ import annotations

import argparse

from streamsaver.cli.commands._running import run_subscriber, subscriber_options
from streamsaver.cli.commands._shared import emit_json, open_client

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from streamsaver.examples.audit import audit_subscriber

    with open_client(args) as client:
        subscriber = audit_subscriber(client, args.trail, group=args.group, prefix=args.prefix, name=args.name,
                                      lease_ms=args.lease_ms, max_deliveries=args.max_deliveries)
        stats = run_subscriber(subscriber, args)
    if args.json:
        emit_json({"trail": args.trail, "handled": stats.handled, "dead": stats.dead})
    else:
        print(f"{stats.handled:,} events handled into {args.trail}, {stats.dead} dead-lettered")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from streamsaver.examples.audit import verify

    verdict = verify(args.trail)
    if args.json:
        emit_json(verdict.__dict__)
    elif verdict.ok:
        print(f"ok: {verdict.lines:,} lines, head {verdict.head}")
    else:
        print(f"BROKEN at line {verdict.broken_line}: {verdict.reason} ({verdict.lines:,} good lines before it)")
    return 0 if verdict.ok else 3


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``audit run`` and ``audit verify``."""
    parser = commands.add_parser(
        "audit",
        help="an audit trail of every event (hash-chained JSON Lines), and its verification",
        description="'run' subscribes a consumer group (default 'audit') to the partition feeds and "
        "appends one line per event to TRAIL: id, type, thread, namespace, checkpoint id, time, metadata, "
        "and a SHA-256 chained to the line before. 'verify' checks the chain and names the first changed, "
        "removed or moved line (exit code 3 when broken). See docs/subscribers.md.",
    )
    actions = parser.add_subparsers(title="actions", metavar="<action>", required=True)
    run = actions.add_parser("run", parents=[common], help="append events to the trail",
                             description="Append every event to the trail, until SIGINT/SIGTERM (or --burst).")
    run.add_argument("trail", help="the JSON Lines file (created if missing; must verify if it exists)")
    subscriber_options(run, "audit")
    run.set_defaults(handler=_run)
    check = actions.add_parser("verify", help="check a trail's hash chain",
                               description="Check a trail's hash chain from its first line.")
    check.add_argument("trail", help="the JSON Lines file")
    check.add_argument("--json", action="store_true", help="print one JSON document")
    check.set_defaults(handler=_verify)
