"""``streamsaver doctor``: check the server and the deployment, exit by the worst finding."""

from __future__ import annotations

import argparse
import dataclasses

from streamsaver.cli.commands._shared import emit_json, open_client
from streamsaver.cli.commands._table import table

__all__ = ["register"]

EXIT_CODES = {"ok": 0, "error": 1, "warning": 3}


def _run(args: argparse.Namespace) -> int:
    from streamsaver.ops.doctor import diagnose, worst

    with open_client(args) as client:
        findings = diagnose(client, args.prefix)
    verdict = worst(findings)
    if args.json:
        emit_json({"severity": verdict, "findings": [dataclasses.asdict(f) for f in findings]})
    else:
        rows = [[f.check, f.severity, f.detail] for f in findings]
        print(table(["check", "severity", "finding"], rows, max_width=160))
        print(f"worst: {verdict}")
    return EXIT_CODES[verdict]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``doctor``."""
    parser = commands.add_parser(
        "doctor",
        parents=[common],
        help="check the server and the deployment (modules, eviction, AOF, indexes, feeds, ACL)",
        description="Read-only checks, each finding ok, warning or error: server version and "
        "modules; eviction policy (anything but noeviction is an error: it silently loses "
        "checkpoints); AOF and appendfsync; replicas; each index's schema version and indexing "
        "state; partitions; deployments under other prefixes; feeds no consumer group reads; dead "
        "letters; what the connected user's ACL allows. Exit code by the worst finding: 0 all ok, "
        "1 an error (or the server could not be reached), 3 warnings only.",
    )
    parser.set_defaults(handler=_run)
