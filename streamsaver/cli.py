"""The ``streamsaver`` command: argument parsing only; every subcommand calls the library.

A subcommand is one module in `streamsaver.commands` whose ``register`` declares its parser and
sets ``handler``, a function ``(args) -> exit code`` that calls the library (importing heavy
modules lazily, so ``--help`` stays fast and needs no optional dependency). Options every
subcommand shares (--url, --prefix, --json) live in `streamsaver.commands._shared`.

Exit codes: 0 success, 1 a streamsaver or Redis error (printed on stderr), 2 a usage error.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from redis.exceptions import RedisError

from streamsaver import __version__
from streamsaver.commands import modules as subcommand_modules
from streamsaver.commands._shared import common_options
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
    common = common_options()
    for module in subcommand_modules():
        module.register(commands, common)
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
