"""The server-side scripts, loaded once from their ``.lua`` files.

Each script is its ``.lua`` file with ``_lib.lua`` spliced in after the shebang line. `Script`
knows its SHA1, so a call is one EVALSHA; on NOSCRIPT (a restarted or flushed server) it loads
the source and calls again. `enqueue` puts a call on a non-transactional pipeline, which queues
synchronously in both redis-py clients, so one helper serves the sync and the async saver.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

__all__ = ["APPEND", "READ_FULL", "READ_SHALLOW", "Script"]

Arg = str | bytes | int


def _source(name: str) -> str:
    folder = resources.files(__package__)
    lib = folder.joinpath("_lib.lua").read_text()
    shebang, _, body = folder.joinpath(f"{name}.lua").read_text().partition("\n")
    return f"{shebang}\n{lib}\n{body}"


@dataclass(frozen=True)
class Script:
    """One server-side script: its name, source and SHA1."""

    name: str
    source: str = field(repr=False)

    @classmethod
    def load(cls, name: str) -> Script:
        """The script in ``<name>.lua``."""
        return cls(name, _source(name))

    @property
    def sha(self) -> str:
        """The SHA1 that EVALSHA names the script by."""
        return hashlib.sha1(self.source.encode()).hexdigest()

    def evalsha_args(self, keys: Sequence[Arg], args: Sequence[Arg]) -> list[Arg]:
        """The arguments of an EVALSHA call."""
        return ["EVALSHA", self.sha, len(keys), *keys, *args]

    def enqueue(self, pipe: Any, keys: Sequence[Arg], args: Sequence[Arg]) -> None:
        """Queue a call on a non-transactional pipeline (sync or async)."""
        pipe.execute_command(*self.evalsha_args(keys, args))


APPEND = Script.load("append")
READ_FULL = Script.load("read_full")
READ_SHALLOW = Script.load("read_shallow")
ALL = (APPEND, READ_FULL, READ_SHALLOW)
