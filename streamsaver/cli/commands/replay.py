"""``streamsaver replay``: rebuild views from the thread logs."""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from redis import Redis

from streamsaver.cli.commands._shared import chosen_views, emit_json, open_client
from streamsaver.errors import InvalidInputError
from streamsaver.log.keys import ViewName
from streamsaver.ops.progress import Progress

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from streamsaver.ops.replay import Replayer

    views = chosen_views(args)
    if args.jobs < 1 or (args.shadow and args.jobs > 1):
        raise InvalidInputError("--jobs must be at least 1, and --shadow folds with one process")
    if args.shadow:
        return _run_shadow(args, views)
    with open_client(args) as client:
        replayer = Replayer.open(client, args.prefix)
        total = count_events(client, replayer.thread_logs())
        with Progress("events", total, enabled=None if not args.json else False) as bar:
            if args.jobs > 1:
                from streamsaver.ops.replay_jobs import replay_in_jobs

                stats = replay_in_jobs(
                    args.url, args.prefix, views, jobs=args.jobs, keep=args.keep, progress=bar.advance
                )
            elif args.keep:
                stats = replayer.replay(views, progress=bar.advance)
            else:
                stats = replayer.rebuild(views, progress=bar.advance)
    result = {"threads": stats.threads, "events": stats.events, "views": views, "dropped_first": not args.keep}
    if args.json:
        emit_json(result)
    else:
        print(f"replayed {stats.events:,} events of {stats.threads:,} threads into {', '.join(views)}")
    return 0


def _run_shadow(args: argparse.Namespace, views: list[ViewName]) -> int:
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
    return 0


def count_events(client: Redis, logs: Iterable[bytes]) -> int:
    """The entries of `logs`, counted 1,000 logs per round trip."""
    total, batch = 0, []
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
        "harmless and an interrupted replay resumes).",
    )
    parser.add_argument(
        "--view", action="append", choices=["full", "shallow"],
        help="a view to rebuild (repeatable; default: the views the deployment keeps)",
    )
    parser.add_argument("--keep", action="store_true", help="do not drop the views first; apply what is missing")
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
