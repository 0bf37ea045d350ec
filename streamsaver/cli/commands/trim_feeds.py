"""``streamsaver trim-feeds``: drop partition-feed entries every consumer group acknowledged,
and bound the feeds no group reads by the deployment's retention policy
(`streamsaver.feeds.retention`)."""

from __future__ import annotations

import argparse
import re
import time
from datetime import timedelta
from typing import Any

from streamsaver.cli.commands._shared import UsageError, emit_json, open_client

__all__ = ["parse_duration", "register"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}

DESCRIPTION = """\
Trim each partition feed (the checkpoint feeds and the memory store's) below the oldest entry
some consumer group (subscribers and projector workers alike) still needs: its oldest pending
entry, or the first entry after its last delivered one. Thread logs, the truth, are never
trimmed by this.

A feed that no consumer group reads would grow forever: the deployment's feed retention policy
bounds it, to --max-len entries and/or entries younger than --max-age (e.g. 7d, 12h, 30m, 90s).
Given here, the bounds apply to this run; with --save they become the deployment's policy,
which every later run applies (--clear-policy removes it). A feed with a consumer group is never
cut by the policy. Safe to run any time: from cron, or with --every DURATION to keep running.
"""


def parse_duration(text: str) -> timedelta:
    """``90s``, ``30m``, ``12h``, ``7d`` or a number of seconds.

    Raises:
        argparse.ArgumentTypeError: anything else.
    """
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if match is None:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 7d, 12h, 30m, 90s)")
    return timedelta(seconds=float(match[1]) * _UNITS[match[2] or "s"])


def _policy(args: argparse.Namespace) -> Any:
    from streamsaver.feeds.retention import FeedRetention

    given = FeedRetention(args.max_len, args.max_age)
    if args.save and given.empty:
        raise UsageError("--save needs --max-len or --max-age: the policy to save")
    if args.clear_policy and (args.save or not given.empty):
        raise UsageError("--clear-policy takes no --max-len, --max-age or --save")
    return given


def _trim_once(client: Any, args: argparse.Namespace, given: Any) -> dict[str, Any]:
    from streamsaver.feeds.retention import FeedRetention, apply_feed_retention, feed_retention, set_feed_retention

    if args.save or args.clear_policy:
        set_feed_retention(client, args.prefix, FeedRetention() if args.clear_policy else given)
    policy = feed_retention(client, args.prefix) if given.empty else given
    removed = apply_feed_retention(client, args.prefix, policy)
    partitions = {int(k.rsplit("{p", 1)[1].rstrip("}")): n for k, n in removed.items() if ":feed:" in k}
    return {"removed": sum(removed.values()), "feeds": removed, "partitions": partitions, "policy": policy.as_dict()}


def _report(args: argparse.Namespace, result: dict[str, Any]) -> None:
    if args.json:
        emit_json(result)
        return
    policy = result["policy"]
    bounds = [f"{policy['max_len']:,} entries" if policy["max_len"] is not None else "",
              f"{timedelta(seconds=policy['max_age_seconds'])} old" if policy["max_age_seconds"] else ""]
    said = " and ".join(b for b in bounds if b) or "none"
    print(f"removed {result['removed']:,} feed entries from {len(result['feeds'])} feed(s) "
          f"(retention of feeds no group reads: {said})", flush=True)


def _run(args: argparse.Namespace) -> int:
    given = _policy(args)
    with open_client(args) as client:
        while True:
            _report(args, _trim_once(client, args, given))
            if args.every is None:
                return 0
            args.save = args.clear_policy = False  # saved once is enough
            time.sleep(args.every.total_seconds())  # Ctrl-C ends it (exit 130)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``trim-feeds``."""
    parser = commands.add_parser(
        "trim-feeds",
        parents=[common],
        help="drop feed entries every consumer group acknowledged; bound the feeds no group reads",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--max-len", type=int, metavar="N", help="a feed no group reads keeps at most N entries")
    parser.add_argument("--max-age", type=parse_duration, metavar="DURATION",
                        help="a feed no group reads keeps no entry older than this (7d, 12h, 30m, 90s)")
    parser.add_argument("--save", action="store_true", help="store --max-len/--max-age as the deployment's policy")
    parser.add_argument("--clear-policy", action="store_true", help="remove the deployment's stored policy")
    parser.add_argument("--every", type=parse_duration, metavar="DURATION",
                        help="keep running: trim again every DURATION until Ctrl-C")
    parser.set_defaults(handler=_run)
