"""What several subcommands share: the common options and opening the deployment they name."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, cast

import redis

from streamsaver.drivers.cluster import connect
from streamsaver.drivers.wire import client_options
from streamsaver.log.keys import DEFAULT_PREFIX, ViewName

__all__ = [
    "LOG_LEVELS", "UsageError", "chosen_views", "common_options", "emit_json", "open_client", "positive_int",
    "server_options",
]

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def server_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """Add --url and --prefix to `parser`: with their defaults (REDIS_URL, STREAMSAVER_PREFIX)
    on the top-level parser, without on each subcommand's, so that either place may name them
    (``streamsaver --url U stats`` and ``streamsaver stats --url U``; the later one wins)."""
    parser.add_argument(
        "--url",
        default=os.environ.get("REDIS_URL") if defaults else argparse.SUPPRESS,
        metavar="URL",
        help="the Redis server: redis://[:password@]host:port/db, rediss://... (TLS) or "
        "unix:///path.sock; it needs the search and JSON modules (Redis 8 or Redis Stack). "
        "Default: the REDIS_URL environment variable",
    )
    parser.add_argument(
        "--prefix",
        default=os.environ.get("STREAMSAVER_PREFIX", DEFAULT_PREFIX) if defaults else argparse.SUPPRESS,
        help=f"the deployment's key prefix (default: STREAMSAVER_PREFIX or {DEFAULT_PREFIX!r})",
    )
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=LOG_LEVELS,
        default=os.environ.get("STREAMSAVER_LOG_LEVEL") if defaults else argparse.SUPPRESS,
        help="print the library's log records (loggers streamsaver.*) at this level and above on "
        "stderr: DEBUG, INFO, WARNING or ERROR (default: STREAMSAVER_LOG_LEVEL; unset, only the "
        "long-running commands log, at INFO)",
    )
    parser.add_argument(
        "--progress",
        choices=("auto", "always", "never"),
        default=os.environ.get("STREAMSAVER_PROGRESS", "auto") if defaults else argparse.SUPPRESS,
        help="progress of long commands, on stderr: auto (a redrawn line on a terminal, a status "
        "line every 10 s otherwise), always (status lines, and a final one), never "
        "(default: STREAMSAVER_PROGRESS or auto)",
    )


def common_options() -> argparse.ArgumentParser:
    """The options every subcommand takes: --url, --prefix (see `server_options`), --json."""
    common = argparse.ArgumentParser(add_help=False)
    server_options(common, defaults=False)
    common.add_argument(
        "--json", action="store_true", help="print one JSON document for scripts instead of text"
    )
    return common


class UsageError(Exception):
    """The command line lacks something no default supplies (exit code 2, as argparse's)."""


def open_client(args: argparse.Namespace) -> redis.Redis:
    """A client for ``--url``: a ``RedisCluster`` when the server runs in cluster mode.

    The tools take either: a cluster client offers every command they send, and they scan and
    send node by node (tests/integration/test_savers_on_a_cluster.py runs them on a cluster).

    Raises:
        UsageError: neither --url nor REDIS_URL was given.
    """
    if not args.url:
        raise UsageError("no server given: pass --url URL or set REDIS_URL")
    # Operator tools run long scripts (a prune, a replay of a long log): a minute, not 10 s.
    return connect(args.url, **client_options({"socket_timeout": 60.0}))


def chosen_views(args: argparse.Namespace) -> list[ViewName]:
    """The views ``--view`` names, by default those the deployment keeps
    (`streamsaver.ops.inspection.deployment_views`)."""
    if args.view:
        return cast(list[ViewName], list(dict.fromkeys(args.view)))
    from streamsaver.ops.inspection import deployment_views

    with open_client(args) as client:
        return list(deployment_views(client, args.prefix))


def positive_int(text: str) -> int:
    """An argparse type: a whole number of 1 or more (a count, a limit, dimensions)."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def emit_json(document: Any) -> None:
    """Print `document` as JSON on stdout (the ``--json`` output)."""
    json.dump(document, sys.stdout, indent=2, sort_keys=True, default=str)
    sys.stdout.write("\n")
