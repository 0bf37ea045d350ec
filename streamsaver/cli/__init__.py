"""The ``streamsaver`` command: `main` parses and dispatches; each subcommand is a module of
`streamsaver.cli.commands`."""

from streamsaver.cli.main import main

__all__ = ["main"]
