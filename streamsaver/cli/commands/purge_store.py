"""``streamsaver purge-store LABEL...``: erase a namespace prefix of the memory store, its log
entries included (`streamsaver.store.erasure`)."""

from __future__ import annotations

import argparse

from streamsaver.cli.commands._shared import emit_json, open_client

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from streamsaver.memory.sync import StreamStore
    from streamsaver.ops.inspection import deployment_keyspace

    with open_client(args) as client:
        deployment_keyspace(client, args.prefix)  # a mistyped --prefix erases nothing and creates nothing
        store = StreamStore(client, prefix=args.prefix)
        store.setup()
        erased = store.purge(tuple(args.labels))
    if args.json:
        emit_json({"prefix": args.labels, "erased_entries": erased})
    else:
        print(f"erased {erased:,} store log entries under {tuple(args.labels)!r}")
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``purge-store``."""
    parser = commands.add_parser(
        "purge-store",
        parents=[common],
        help="erase every memory-store item under a namespace prefix, log entries included",
        description="Erase every item of the memory store whose namespace is LABEL... or below it "
        "(labels matched whole: users alice never touches users alicea), with the store log entries "
        "and feed pointers that wrote them, in one atomic call on the prefix's partition. What stays "
        "keeps its log ids, so a replay still gives the same items.",
    )
    parser.add_argument("labels", nargs="+", metavar="LABEL", help="the namespace prefix, one label each")
    parser.set_defaults(handler=_run)
