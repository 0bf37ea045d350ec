"""``streamsaver inspect THREAD``: a thread's history as its log tells it."""

from __future__ import annotations

import argparse
import dataclasses

from streamsaver.cli.commands._shared import emit_json, open_client
from streamsaver.cli.commands._table import table

__all__ = ["register"]


def _short(value: str | None) -> str:
    return ".." + value[-8:] if value else "-"


def _run(args: argparse.Namespace) -> int:
    from streamsaver.ops.audit_trail import thread_audit
    from streamsaver.ops.inspection import thread_history

    with open_client(args) as client:
        rows = thread_history(client, args.prefix, args.thread)
        audit = thread_audit(client, args.prefix, args.thread)
    if args.json:
        emit_json([dataclasses.asdict(r) for r in rows])
        return 0
    print(table(
        ["step", "source", "ns", "checkpoint", "parent", "new values", "writes", "bytes", "log entry"],
        [[r.step, r.source, repr(r.checkpoint_ns) if r.checkpoint_ns else "''", _short(r.checkpoint_id),
          _short(r.parent_checkpoint_id), ", ".join(r.new_channels) or "-", ", ".join(r.writes) or "-",
          r.bytes, r.entry_id] for r in rows],
    ))
    if audit:
        print(f"\nagent calls audited beside the log ({len(audit)}):")
        print(table(["type", "name", "cache", "route", "error", "in", "in bytes", "out bytes", "ms", "audit entry"],
                    [[e.get(k) or "-" for k in ("type", "name", "cache", "route", "error")] + [
                        e.get("in", "")[:12], e.get("in_bytes"), e.get("out_bytes"), e.get("ms"), e["id"]]
                     for e in audit]))
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``inspect``."""
    parser = commands.add_parser(
        "inspect",
        parents=[common],
        help="show a thread's history from its log: steps, sources, writes, ids, sizes",
        description="Read one thread's log (not the views) and print every checkpoint in log "
        "order: step, source, namespace, checkpoint and parent ids, the channels whose value it "
        "stored, the writes tasks saved against it (task:channel), its size in the log and its "
        "log entry id (usable with 'restore --at'); then the agent calls the audit middleware "
        "recorded beside the log (docs/middleware.md), if any.",
    )
    parser.add_argument("thread", help="the thread id")
    parser.set_defaults(handler=_run)
