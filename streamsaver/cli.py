"""The ``streamsaver`` command: argument parsing only; every subcommand calls the library.

A subcommand is one ``_add_<name>`` function that declares its parser and sets ``handler``, a
function ``(args) -> exit code`` that imports and calls the library lazily (so ``--help`` stays
fast and needs no optional dependency). Options every subcommand shares (the server URL) live in
`_common`; a new subcommand (project, replay, verify, export, import, inspect, tail, stats) is one
more ``_add_<name>`` listed in `_SUBCOMMANDS`.

Exit codes: 0 success, 1 a streamsaver or Redis error (printed on stderr), 2 a usage error.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from redis.exceptions import RedisError

from streamsaver import __version__
from streamsaver.errors import StreamSaverError

__all__ = ["build_parser", "main"]


DESCRIPTION = """\
streamsaver: an event-sourced LangGraph checkpointer on Redis.

Every checkpoint and every pending write LangGraph saves is appended as an event to a Redis
Stream per thread (the log, which is the truth) and, in the same atomic call, projected into
RedisJSON documents indexed by RediSearch (the views the checkpointer reads). This command works
on such a deployment.
"""

EPILOG = "Run 'streamsaver <command> --help' for the options of one command."


def _common() -> argparse.ArgumentParser:
    """The options every subcommand takes."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--url",
        default=os.environ.get("REDIS_URL"),
        metavar="URL",
        help="the Redis server: redis://[:password@]host:port/db, rediss://... (TLS) or "
        "unix:///path.sock; it needs the search and JSON modules (Redis 8 or Redis Stack). "
        "Default: the REDIS_URL environment variable",
    )
    return common


def _demo(args: argparse.Namespace) -> int:
    try:
        from streamsaver.demo import run_demo
    except ModuleNotFoundError as exc:
        if exc.name != "langgraph":
            raise
        print(
            "streamsaver: error: the demo needs langgraph: pip install 'streamsaver[demo]'",
            file=sys.stderr,
        )
        return 1
    run_demo(args.url)
    return 0


def _add_demo(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    parser = commands.add_parser(
        "demo",
        parents=[common],
        help="run LangGraph graphs on streamsaver and show what is stored",
        description="Run deterministic LangGraph graphs (no LLM) on StreamSaver: memory across "
        "invocations, an interrupt and resume, time travel with a fork, a subgraph, parallel "
        "branches; then print the events in the thread logs and the documents in the views. "
        "Writes under a new random key prefix on every run. Without --url and REDIS_URL it "
        "starts an embedded Redis (pip install 'streamsaver[embedded]') and stops it at the end; "
        "needs langgraph (pip install 'streamsaver[demo]').",
    )
    parser.set_defaults(handler=_demo)


_SUBCOMMANDS = [_add_demo]


def build_parser() -> argparse.ArgumentParser:
    """The parser of the ``streamsaver`` command with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="streamsaver",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"streamsaver {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="<command>", required=True)
    common = _common()
    for add in _SUBCOMMANDS:
        add(commands, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse `argv` (default: the process arguments), run the subcommand, return its exit code."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:
        # argparse exits for --help, --version and usage errors; callers get the code instead.
        return exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 2
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except (StreamSaverError, RedisError) as exc:
        print(f"streamsaver: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader left (e.g. `| head`); point stdout at devnull so the exit flush stays quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
