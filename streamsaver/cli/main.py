"""The ``streamsaver`` command: argument parsing only; every subcommand calls the library.

A subcommand is one module in `streamsaver.cli.commands` whose ``register`` declares its parser and
sets ``handler``, a function ``(args) -> exit code`` that calls the library (importing heavy
modules lazily, so ``--help`` stays fast and needs no optional dependency). Options every
subcommand shares (--url, --prefix, --json) live in `streamsaver.cli.commands._shared`.

Exit codes (also in ``--help``): 0 success, 1 an error (one line on stderr, no traceback), 2 a
usage error, 130 interrupted. ``verify`` exits 1 when the views differ from the logs.
"""

from __future__ import annotations

import argparse
import difflib
import logging
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from redis.exceptions import RedisError

from streamsaver import __version__
from streamsaver.cli.commands import modules as subcommand_modules
from streamsaver.cli.commands._shared import UsageError, common_options, server_options
from streamsaver.cli.failures import explain
from streamsaver.errors import StreamSaverError
from streamsaver.ops.progress import set_mode as set_progress_mode

__all__ = ["build_parser", "main"]


DESCRIPTION = """\
streamsaver: an event-sourced LangGraph checkpointer on Redis.

Every checkpoint and every pending write LangGraph saves is appended as an event to a Redis
Stream per thread (the log, which is the truth) and, in the same atomic call, projected into
RedisJSON documents indexed by RediSearch (the views the checkpointer reads). The memory store
(StreamStore) is logged the same way, per store partition: --store turns inspect, tail, replay,
project and stats to it. This command works on such a deployment.
"""

EPILOG = """\
Run 'streamsaver <command> --help' for the options of one command.

Exit codes: 0 success; 1 an error (a Redis, file or input error, printed as one line
"streamsaver: error: ..." on stderr; verify also when the views differ from the logs,
doctor when it finds an error); 2 a usage error; 3 doctor found warnings only; 130 interrupted
(Ctrl-C)."""


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that answers a mistyped command with the nearest ones."""

    def error(self, message: str) -> NoReturn:
        typed = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if typed:
            names = re.findall(r"'([^']*)'", typed[2])
            near = difflib.get_close_matches(typed[1], names, n=3, cutoff=0.5)
            hint = f"did you mean {' or '.join(near)}?" if near else f"the commands: {', '.join(names)}"
            message = f"unknown command {typed[1]!r}: {hint}"
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    """The parser of the ``streamsaver`` command with every subcommand (--url and --prefix are
    accepted before the command too)."""
    parser = Parser(
        prog="streamsaver",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"streamsaver {__version__}")
    server_options(parser, defaults=True)
    commands = parser.add_subparsers(title="commands", metavar="<command>", required=True)
    common = common_options()
    for module in subcommand_modules():
        module.register(commands, common)
    return parser


def _log_to_stderr(level: str) -> None:
    """Show the library's records at `level` and above on stderr (the command, not the library,
    configures a handler)."""
    logging.basicConfig(format="%(asctime)s %(name)s %(levelname)s %(message)s", stream=sys.stderr)
    logging.getLogger("streamsaver").setLevel(level)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse `argv` (default: the process arguments), run the subcommand, return its exit code."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:
        # argparse exits for --help, --version and usage errors; callers get the code instead.
        return exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 2
    if args.log_level:
        _log_to_stderr(args.log_level)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        set_progress_mode(args.progress)
        return handler(args)
    except UsageError as exc:
        print(f"streamsaver: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader left (e.g. `| head`); point stdout at devnull so the exit flush stays quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (StreamSaverError, RedisError, OSError, ValueError) as exc:
        # An operator's mistake (a bad URL, a missing directory, a bad value) or a server that
        # fails: one line that says what, not a traceback. ValueError covers the client's
        # refusals of a URL or an option (InvalidInputError is one too).
        print(f"streamsaver: error: {explain(exc, args.url)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("streamsaver: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
