"""``streamsaver restore-settings``: write back a deployment's lost partition count."""

from __future__ import annotations

import argparse

from streamsaver.cli.commands._shared import emit_json, open_client

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from streamsaver.ops.settings import restore_settings

    with open_client(args) as client:
        restored = restore_settings(client, args.prefix, args.partitions)
    if args.json:
        emit_json({"partitions": restored.partitions, "logs_checked": restored.logs_checked,
                   "views": list(restored.views)})
    else:
        views = f", inline views {','.join(restored.views)}" if restored.views else ""
        agree = f"{restored.logs_checked:,} thread logs agree"
        print(f"settings restored: {restored.partitions} partitions ({agree}){views}")
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``restore-settings``."""
    parser = commands.add_parser(
        "restore-settings",
        parents=[common],
        help="write back a deployment's lost settings (its partition count), checked against its logs",
        description="A deployment whose settings hash (<prefix>:meta) is gone while its data stayed "
        "refuses to start (SettingsLostError): a guessed partition count would re-partition it. This "
        "writes the count back after checking that every thread log is in the partition that count "
        "gives its thread; when one is not, it fails and lists the counts the logs allow. "
        "The count is the one the deployment was set up with (16 unless chosen). The inline views "
        "the writers projected (the views every thread's positions name) are recorded too, so the next "
        "saver projects what the deployment's views hold.",
    )
    parser.add_argument("--partitions", type=int, required=True, help="the deployment's partition count")
    parser.set_defaults(handler=_run)
