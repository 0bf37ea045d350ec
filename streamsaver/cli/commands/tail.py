"""``streamsaver tail``: events as they are appended, from the partition feeds."""

from __future__ import annotations

import argparse
import itertools
import json

from streamsaver.cli.commands._shared import UsageError, open_client
from streamsaver.cli.commands._store import namespace_option, store_option, wants_store

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from projectors.domain import CHECKPOINTS
    from projectors.store_domain import STORE
    from streamsaver.ops.inspection import feed_events
    from streamsaver.ops.preview import entry_time

    store = wants_store(args)
    if store and args.thread:
        raise UsageError("--thread names a checkpoint thread: not with --store/--namespace")
    with open_client(args) as client:
        events = feed_events(client, args.prefix, start="0-0" if args.from_start else "$",
                             domain=STORE if store else CHECKPOINTS)
        chosen = (p for p in events if _wanted(p, args) and (not store or _under(p, args.namespace)))
        for pointer in itertools.islice(chosen, args.count):
            if args.json:
                print(json.dumps(pointer, sort_keys=True), flush=True)
            elif store:
                print(f"{entry_time(pointer['feed_id'])[11:]}  {pointer['feed_id']:>18}  p{pointer['partition']:<3} "
                      f"{pointer.get('type', '?'):<20} ns={'.'.join(json.loads(pointer.get('labels', '[]')))!r} "
                      f"key={pointer.get('key', '-')!r} entry={pointer.get('id')}", flush=True)
            else:
                print(f"{entry_time(pointer['feed_id'])[11:]}  {pointer['feed_id']:>18}  p{pointer['partition']:<3} "
                      f"{pointer.get('type', '?'):<16} "
                      f"thread={pointer.get('thread')!r} ns={pointer.get('ns', '')!r} "
                      f"checkpoint={pointer.get('cid', '-')} entry={pointer.get('id')}", flush=True)
    return 0


def _wanted(pointer: dict[str, str], args: argparse.Namespace) -> bool:
    """Whether `pointer` passes --thread and --type (each repeatable: any of them)."""
    return (not args.thread or pointer.get("thread") in args.thread) and (
        not args.type or pointer.get("type") in args.type)


def _under(pointer: dict[str, str], namespace: tuple[str, ...]) -> bool:
    """Whether a store pointer's item is under `namespace` (a partition's erasure always is)."""
    if "labels" not in pointer:
        return True
    return tuple(json.loads(pointer["labels"])[: len(namespace)]) == namespace


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, not {value}")
    return value


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``tail``."""
    parser = commands.add_parser(
        "tail",
        parents=[common],
        help="print events as they are appended (all threads), until interrupted",
        description="Follow every partition feed and print one line per event appended from now "
        "on: its time (UTC), feed entry id, type, thread, namespace, checkpoint id and log entry id "
        "(--json: one JSON object per line). Reads only; adds no consumer group. With --store "
        "(or --namespace A.B) the memory store's feeds instead: each put, delete and erasure with "
        "its partition, namespace and key (a memory audit feed).",
    )
    store_option(parser, "its partition feeds")
    namespace_option(parser)
    parser.add_argument("--count", type=_count, default=None, help="stop after this many (shown) events")
    parser.add_argument("--thread", action="append", metavar="THREAD_ID",
                        help="only the events of this thread (repeatable)")
    parser.add_argument("--type", action="append", metavar="EVENT_TYPE",
                        help="only events of this type, e.g. CheckpointSaved, WritesSaved, ThreadDeleted; "
                        "ItemPut, ItemDeleted, StorePartitionErased with --store (repeatable)")
    parser.add_argument("--from-start", action="store_true", help="print what the feeds hold first")
    parser.set_defaults(handler=_run)
