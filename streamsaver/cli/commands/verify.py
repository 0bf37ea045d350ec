"""``streamsaver verify``: do the views say exactly what the thread logs say?"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from streamsaver.cli.commands._shared import chosen_views, emit_json, open_client
from streamsaver.ops.progress import Phases

if TYPE_CHECKING:
    from streamsaver.ops.verify import VerifyReport

__all__ = ["register"]


def _store_logs(client: Any, prefix: str) -> list[bytes] | None:
    """The deployment's store partition logs; None when it keeps no memory store at all (no
    store log, item or position: a store whose logs were all purged is still verified)."""
    from projectors.store_domain import STORE
    from streamsaver.ops.replay import Replayer

    logs = list(Replayer.open(client, prefix, domain=STORE).thread_logs())
    families = ("items", STORE.positions_family)
    kept = logs or any(next(iter(client.scan_iter(match=f"{prefix}:{f}:*", count=1000)), None) for f in families)
    return logs if kept else None


def _verify_all(client: Any, args: argparse.Namespace) -> list[VerifyReport]:
    """The checkpoint views' report, then the store's when the deployment has store partitions
    and no --view narrowed the check."""
    from projectors.store_domain import STORE
    from streamsaver.ops.replay import Replayer
    from streamsaver.ops.verify import verify

    views = chosen_views(args)
    logs = [*Replayer.open(client, args.prefix).thread_logs()]
    store_logs = None if args.view else _store_logs(client, args.prefix)
    total = sum(int(client.xlen(log)) for log in [*logs, *(store_logs or [])])
    limit = args.max_differences
    with Phases(enabled=None if not args.json else False) as phases:
        folded, compared = phases.counter("events folded", total), phases.counter("keys compared")
        reports = [verify(client, args.prefix, views, max_differences=limit, progress=folded, compared=compared)]
        if store_logs is not None:
            reports.append(verify(client, args.prefix, max_differences=limit, progress=folded, compared=compared,
                                  domain=STORE))
    return reports


def _print(report: VerifyReport, logs: str) -> None:
    print(
        f"folded {report.events:,} events of {report.threads:,} {logs} into scratch "
        f"{', '.join(report.views)} views and compared {report.keys_compared:,} keys: "
        f"{report.equal:,} equal, {report.missing:,} missing, {report.extra:,} extra, "
        f"{report.different:,} different"
    )
    for difference in report.differences:
        print(f"  {difference.kind:<9} {difference.key}\n            {difference.detail}")
    shown = len(report.differences)
    if shown < report.missing + report.extra + report.different:
        print(f"  ... and {report.missing + report.extra + report.different - shown:,} more")
    if report.payloads_checked:
        print(f"loaded {report.payloads_checked:,} payloads of the logs: {report.corrupt:,} corrupt")
    for corrupt in report.corrupt_payloads:
        print(f"  corrupt   {corrupt.log} entry {corrupt.entry}, {corrupt.payload}\n            {corrupt.error}")
    for problem in report.index_problems:
        print(f"  index     {problem}")


def _run(args: argparse.Namespace) -> int:
    with open_client(args) as client:
        reports = _verify_all(client, args)
    matches = all(report.matches for report in reports)
    if args.json:
        document = reports[0].to_dict()
        if len(reports) > 1:
            document |= {"store": reports[1].to_dict(), "matches": matches}
        emit_json(document)
    else:
        for report, logs in zip(reports, ("threads", "store partitions"), strict=False):
            _print(report, logs)
        print("the views match the logs" if matches else "the views DIFFER from the logs (or a payload is corrupt)")
    return 0 if matches else 1


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``verify``."""
    parser = commands.add_parser(
        "verify",
        parents=[common],
        help="check that the views equal what the thread logs say (exit 0 only when they do)",
        description="Fold every thread log afresh into scratch keys of the same Redis (under "
        "PREFIX:verify.<random>, deleted at the end, also on error), through the same projectors "
        "as the live appends, and compare every view key and position with its scratch twin: "
        "JSON documents, pointer hashes, id sets and sorted sets. Prints the counts of keys equal, "
        "missing (the logs give them, the views lack them), extra (no logged event accounts for "
        "them) and different, and the first differences. Exit code 0 only when the views match "
        "the logs, 1 otherwise. A deployment with a memory store (store partition logs) has the "
        "store's items view verified too, unless --view names checkpoint views. Writes landing "
        "while it runs may show as differences: verify a "
        "quiet deployment, or run it again. `streamsaver replay` repairs the views.",
    )
    parser.add_argument(
        "--view", action="append", choices=["full", "shallow"],
        help="a view to verify (repeatable; default: the views the deployment keeps)",
    )
    parser.add_argument(
        "--max-differences",
        type=int,
        default=20,
        metavar="N",
        help="how many differences to detail (all are counted; default: %(default)s)",
    )
    parser.set_defaults(handler=_run)
