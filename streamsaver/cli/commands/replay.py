"""``streamsaver replay``: rebuild views from the thread logs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

from redis import Redis

from streamsaver.cli.commands._shared import UsageError, chosen_views, emit_json, open_client
from streamsaver.cli.commands._store import store_option
from streamsaver.errors import InvalidInputError
from streamsaver.log.keys import ViewName
from streamsaver.ops.progress import Progress

if TYPE_CHECKING:
    from streamsaver.ops.replay import ReplayStats

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    if args.store:
        return _run_store(args)
    if args.shadow and args.keep:
        raise UsageError("--shadow rebuilds every view beside the live one: it cannot --keep them")
    if args.thread and (args.shadow or args.jobs > 1):
        raise UsageError("--thread replays one thread in place: not with --shadow or --jobs")
    if args.jobs < 1 or (args.shadow and args.jobs > 1):
        raise InvalidInputError("--jobs must be at least 1, and --shadow folds with one process")
    views = chosen_views(args)
    try:
        if args.shadow:
            _run_shadow(args, views)
            return 0
        stats = _fold(args, views)
    except KeyboardInterrupt:
        print(_interrupted(args, views), file=sys.stderr)
        return 130
    result = {"threads": stats.threads, "events": stats.events, "applied": stats.applied, "views": views,
              "dropped_first": not args.keep}
    if args.json:
        emit_json(result | ({"thread": args.thread} if args.thread else {}))
    elif args.keep:
        print(f"read {stats.events:,} events of {stats.threads:,} threads; applied {stats.applied:,} "
              f"(event, view) pairs the views lacked into {', '.join(views)}")
    else:
        print(f"replayed {stats.events:,} events of {stats.threads:,} threads into {', '.join(views)} "
              f"({stats.applied:,} (event, view) pairs applied)")
    return 0


def _run_store(args: argparse.Namespace) -> int:
    """Rebuild the memory store's items (documents, vectors, the index's entries) from its logs."""
    from projectors.store_domain import STORE
    from streamsaver.ops.replay import Replayer

    if args.thread or args.shadow or args.jobs > 1 or args.view:
        raise UsageError("--store replays the store's items view: not with --thread, --shadow, --jobs or --view")
    with open_client(args) as client:
        replayer = Replayer.open(client, args.prefix, domain=STORE)
        total = count_events(client, replayer.thread_logs())
        try:
            with Progress("events", total, enabled=None if not args.json else False) as bar:
                fold = replayer.replay if args.keep else replayer.rebuild
                stats = fold(["items"], progress=bar.advance)
        except KeyboardInterrupt:
            print("streamsaver: interrupted: the store's items are partial; resume with: "
                  "streamsaver replay --store --keep", file=sys.stderr)
            return 130
    if args.json:
        emit_json({"partitions": stats.threads, "events": stats.events, "applied": stats.applied,
                   "views": ["items"], "dropped_first": not args.keep, "store": True})
    else:
        print(f"{'read' if args.keep else 'replayed'} {stats.events:,} events of {stats.threads:,} store partitions "
              f"into items ({stats.applied:,} applied{' that the items lacked' if args.keep else ''})")
    return 0


def _fold(args: argparse.Namespace, views: list[ViewName]) -> ReplayStats:
    from streamsaver.ops.replay import Replayer

    with open_client(args) as client:
        replayer = Replayer.open(client, args.prefix)
        logs = [replayer.keyspace.thread(args.thread).log] if args.thread else replayer.thread_logs()
        total = count_events(client, logs)
        with Progress("events", total, enabled=None if not args.json else False) as bar:
            if args.thread:
                return replayer.replay_thread(args.thread, views, keep=args.keep, progress=bar.advance)
            if args.jobs > 1:
                from streamsaver.ops.replay_jobs import replay_in_jobs

                return replay_in_jobs(args.url, args.prefix, views, jobs=args.jobs, keep=args.keep,
                                      progress=bar.advance)
            if args.keep:
                return replayer.replay(views, progress=bar.advance)
            return replayer.rebuild(views, progress=bar.advance)


def _interrupted(args: argparse.Namespace, views: list[ViewName]) -> str:
    """What an interrupted replay left, and how to go on."""
    if args.shadow:
        return ("streamsaver: interrupted: the live views are whole (threads swapped so far are rebuilt); "
                "shadow keys are left behind, and the next `streamsaver replay --shadow` drops them first")
    resume = ["streamsaver", "replay", "--keep", *(f"--view={v}" for v in views)]
    resume += [f"--thread={args.thread}"] if args.thread else []
    resume += [f"--jobs={args.jobs}"] if args.jobs > 1 else []
    return (f"streamsaver: interrupted: the views {', '.join(views)} are partial (readers see "
            f"{'the thread' if args.thread else 'threads'} partly rebuilt); resume with: {' '.join(resume)}")


def _run_shadow(args: argparse.Namespace, views: list[ViewName]) -> None:
    from streamsaver.ops.shadow import ShadowRebuild

    quiet = False if args.json else None
    with open_client(args) as client:
        rebuild = ShadowRebuild.open(client, args.prefix)
        total = count_events(client, rebuild.replayer.thread_logs())
        threads = sum(1 for _ in rebuild.threads())
        with Progress("events", total, enabled=quiet) as folding, Progress(
            "swapped", threads * len(views), enabled=quiet
        ) as swapping:
            stats = rebuild.run(views, progress=folding.advance, swapping=swapping.advance)
    result = {"events": stats.events, "swapped": stats.swapped, "caught_up": stats.caught_up}
    if args.json:
        emit_json(result | {"views": views, "shadow": True})
    else:
        print(
            f"folded {stats.events:,} events into shadow {', '.join(views)}; swapped {stats.swapped:,} "
            f"thread views in ({stats.caught_up:,} caught up first)"
        )


def count_events(client: Redis, logs: Iterable[bytes | str]) -> int:
    """The entries of `logs`, counted 1,000 logs per round trip."""
    total, batch = 0, list[bytes | str]()
    for log in [*logs, None]:
        if log is not None:
            batch.append(log)
        if batch and (log is None or len(batch) >= 1000):
            pipe = client.pipeline(transaction=False)
            for key in batch:
                pipe.xlen(key)
            total += sum(int(n) for n in pipe.execute())
            batch = []
    return total


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``replay``."""
    parser = commands.add_parser(
        "replay",
        parents=[common],
        help="rebuild views from the thread logs (the source of truth)",
        description="Fold every thread log of the deployment through the projectors into the "
        "views. By default the views are dropped first, so they end up exactly as the logs say; "
        "with --keep the views are kept and only events a view has not applied yet are applied "
        "(each view records the last event it applied per thread, so replaying twice is "
        "harmless and an interrupted replay resumes). Ctrl-C says what it left and how to resume. "
        "--shadow cannot be combined with --keep (a usage error, exit 2). --store rebuilds the "
        "memory store's items from its partition logs instead (the vectors come from the log: "
        "nothing is embedded again).",
    )
    store_option(parser, "its items (documents with their vectors, which the index follows) from its "
                 "partition logs; --keep applies only what they lack")
    parser.add_argument(
        "--view", action="append", choices=["full", "shallow"],
        help="a view to rebuild (repeatable; default: the views the deployment keeps)",
    )
    parser.add_argument(
        "--keep", action="store_true",
        help="do not drop the views first; apply what is missing (reports how many (event, view) pairs it applied)",
    )
    parser.add_argument(
        "--thread", metavar="THREAD",
        help="replay one thread only: its view keys are dropped (unless --keep) and its log folded in again",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="fold with N processes, each owning a share of the partitions (one replayer uses one "
        "core for decoding and projecting; more help until the server is busy). Default 1",
    )
    parser.add_argument(
        "--shadow",
        action="store_true",
        help="build the views in shadow keys and swap them in thread by thread, caught up with "
        "the writes made meanwhile: readers see every thread whole, old or rebuilt, all along",
    )
    parser.set_defaults(handler=_run)
