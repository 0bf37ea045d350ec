"""``streamsaver inspect --store``: the memory store's history from its partition logs."""

from __future__ import annotations

import argparse
import dataclasses

from streamsaver.cli.commands._shared import emit_json, open_client
from streamsaver.cli.commands._table import table, terminal_width

__all__ = ["run_store_inspect"]

_FLEXIBLE = (12, 3, 6)
"""The columns a narrow terminal cuts, in this order: value, namespace, thread."""


def _ttl(minutes: float | None) -> str:
    return "-" if minutes is None else f"{minutes:g}m"


def run_store_inspect(args: argparse.Namespace) -> int:
    """Print the events of the store partition logs under ``--namespace`` (``--key``; ``--limit``:
    the last N, read from the logs' ends, so the total is known only when fewer were found)."""
    from streamsaver.ops.store_history import store_history

    with open_client(args) as client:
        shown = store_history(client, args.prefix, args.namespace, key=args.key, partition=args.partition,
                              limit=args.limit)
    if args.json:
        emit_json([dataclasses.asdict(r) for r in shown])
        return 0
    days = {r.time[:10] for r in shown}
    one_day = len(days) == 1
    print(table(
        ["time", "partition", "op", "namespace", "key", "writer", "thread", "model", "dims", "ttl", "bytes",
         "log entry", "value"],
        [[r.time[11:] if one_day else r.time, r.partition, r.op,
          ".".join(r.namespace) if r.namespace is not None else "(all)", r.key or "-", r.writer or "-",
          r.thread_id or "-", r.model or "-", f"{r.vectors}x{r.dims}" if r.vectors else "-", _ttl(r.ttl_minutes),
          r.bytes, r.entry_id, r.value or "-"] for r in shown],
        max_width=60, width=terminal_width(), flexible=_FLEXIBLE,
    ))
    where = ".".join(args.namespace) or "the whole store"
    where += f" in partition {args.partition}" if args.partition is not None else ""
    limited = args.limit is not None and len(shown) == args.limit
    counted = f"the last {len(shown):,} store events under {where} (--limit)" if limited else (
        f"{len(shown):,} store events under {where}")
    print("; ".join([counted, f"times are UTC{f', on {days.pop()}' if one_day else ''}"]))
    return 0
