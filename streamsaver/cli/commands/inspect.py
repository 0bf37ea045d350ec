"""``streamsaver inspect THREAD``: a thread's history as its log tells it."""

from __future__ import annotations

import argparse
import dataclasses

from streamsaver.cli.commands._shared import UsageError, emit_json, open_client, positive_int
from streamsaver.cli.commands._store import namespace_option, store_option, wants_store
from streamsaver.cli.commands._store_inspect import run_store_inspect
from streamsaver.cli.commands._table import table, terminal_width

__all__ = ["register"]


_FLEXIBLE = (7, 10, 6, 8)
"""The columns a narrow terminal cuts, in this order: writes, log entry, new values, last message."""


def _short(value: str | None) -> str:
    return ".." + value[-8:] if value else "-"


def _run(args: argparse.Namespace) -> int:
    if wants_store(args):
        if args.thread:
            raise UsageError("name a thread or --store/--namespace, not both")
        return run_store_inspect(args)
    if not args.thread:
        raise UsageError("name a thread (or --store / --namespace A.B for the memory store)")
    if args.key or args.partition is not None:
        raise UsageError("--key and --partition name store events: use them with --store or --namespace")
    from streamsaver.ops.audit_trail import thread_audit
    from streamsaver.ops.inspection import thread_history

    with open_client(args) as client:
        rows = thread_history(client, args.prefix, args.thread)
        audit = thread_audit(client, args.prefix, args.thread)
    shown = rows[-args.limit:] if args.limit else rows
    if args.json:
        emit_json([dataclasses.asdict(r) for r in shown])
        return 0
    days = {r.time[:10] for r in shown}
    one_day = len(days) == 1
    print(table(
        ["step", "source", "ns", "checkpoint", "parent", "time", "new values", "writes", "last message",
         "bytes", "log entry"],
        [[r.step, r.source, repr(r.checkpoint_ns) if r.checkpoint_ns else "''", _short(r.checkpoint_id),
          _short(r.parent_checkpoint_id), r.time[11:] if one_day else r.time,
          ", ".join(r.new_channels) or "-", ", ".join(r.writes) or "-",
          r.preview or "-", r.bytes, r.entry_id] for r in shown],
        max_width=60, width=terminal_width(), flexible=_FLEXIBLE,
    ))
    notes = [f"times are UTC{f', on {days.pop()}' if one_day else ''}"]
    if len(shown) < len(rows):
        notes.append(f"the last {len(shown)} of {len(rows)} checkpoints (--limit)")
    print("; ".join(notes))
    if audit:
        print(f"\nagent calls audited beside the log ({len(audit)}):")
        print(table(["type", "name", "cache", "route", "error", "in", "in bytes", "out bytes", "ms", "audit entry"],
                    [[e.get(k) or "-" for k in ("type", "name", "cache", "route", "error")] + [
                        e.get("in", "")[:12], e.get("in_bytes"), e.get("out_bytes"), e.get("ms"), e["id"]]
                     for e in audit], width=terminal_width(), flexible=(5, 9)))
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``inspect``."""
    parser = commands.add_parser(
        "inspect",
        parents=[common],
        help="show a thread's (or the memory store's) history from its log: steps, writes, ids, sizes",
        description="Read one thread's log (not the views) and print every checkpoint in log "
        "order: step, source, namespace, checkpoint and parent ids, the channels whose value it "
        "stored, the writes tasks saved against it (task:channel), the time it was appended (UTC), "
        "the last message of its messages channel, its size in the log and its log entry id (usable "
        "with 'restore --at'); then the agent calls the audit middleware recorded beside the log "
        "(docs/middleware.md), if any. On a terminal the tables fit its width (the widest columns "
        "are cut); piped, nothing is cut. With --store (or --namespace A.B), the memory store's "
        "partition logs instead: every put, delete and erasure under the namespace prefix, in log "
        "order: when (UTC), partition, op, namespace, key, who wrote it (the store's writer name "
        "and the LangGraph thread whose run wrote it; --json adds the run's checkpoint_ns and "
        "run_id), embedding model and vectors (count x dims), time to live, size, log entry id and "
        "the value put.",
    )
    parser.add_argument("thread", nargs="?", help="the thread id (not with --store)")
    store_option(parser, "every put, delete and erasure in its partition logs")
    namespace_option(parser)
    parser.add_argument("--key", help="with --namespace: only the events of this item key")
    parser.add_argument("--partition", type=int, metavar="N",
                        help="with --store: only store partition N's log (the number stats, tail and doctor show)")
    parser.add_argument("--limit", type=positive_int, metavar="N",
                        help="show only the last N checkpoints (store events: read from the logs' ends, "
                        "so a long store history is not read whole)")
    parser.set_defaults(handler=_run)
