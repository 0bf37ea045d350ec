"""The server-side scripts, loaded once from their ``.lua`` files.

Each script is its ``.lua`` file with its preludes spliced in after the shebang line:
``_spread.lua`` (an unpack for any count of arguments) and ``_esc.lua`` (key escaping), then
``_item.lua`` (key type checks, the store's item put) and ``_lib.lua`` (the write side: the op
interpreter, purges, TTL blocks) for the scripts that write views (``store_put.lua``, one
store put, takes ``_item.lua`` alone), and ``_defer.lua`` (a batch's held writes) for ``apply.lua`` alone, or
``_read.lua`` (following view pointers into the log) for the read scripts, and ``_window.lua``
(finding the page of a listing across threads) for the listing scripts; a script that needs
neither gets none (a prelude is evaluated on every call: each local function it defines is a
closure made per call). `Script` knows its SHA1, so a call is one EVALSHA; on NOSCRIPT (a
restarted or flushed server) it loads the source and calls again. `enqueue` puts a call on a
non-transactional pipeline, which queues synchronously in both redis-py clients, so one helper
serves the sync and the async saver.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from typing import Any

__all__ = [
    "ALL",
    "APPEND",
    "APPEND_BATCH",
    "APPLY",
    "BATCH_SIDE",
    "CLAIM",
    "ERASE",
    "FENCED_APPEND",
    "LIST_PAGE",
    "LIST_WINDOW",
    "LOAD_SCRIPTS",
    "READ_CACHED",
    "READ_FULL",
    "READ_HISTORY",
    "READ_SHALLOW",
    "READ_SIDE",
    "REWRITE",
    "STORE_GET",
    "STORE_NAMESPACES",
    "STORE_PUT",
    "SWAP",
    "TRIM",
    "TTL",
    "TTL_TOUCH",
    "WRITE_SIDE",
    "Script",
]

Arg = str | bytes | int


def _read(filename: str) -> str:
    return resources.files(__package__).joinpath(filename).read_text()


WRITE_SIDE = ("_spread", "_esc", "_item", "_lib")
"""The preludes of a script that writes views."""
BATCH_SIDE = (*WRITE_SIDE, "_defer")
"""The preludes of a script that applies batches of logged events (holding their writes)."""
READ_SIDE = ("_spread", "_esc", "_delta", "_read")
"""The preludes of a read script."""
LIST_SIDE = ("_window",)
"""The prelude of a listing across threads that only finds its page (Redis Cluster)."""
PAGE_SIDE = (*READ_SIDE, "_window")
"""The preludes of a listing across threads that also reads its page (one server)."""


def _spliced(shebang: str, preludes: Sequence[str], body: str) -> str:
    return "\n".join([shebang, *(_read(f"{p}.lua") for p in preludes), body])


@dataclass(frozen=True)
class Script:
    """One server-side script: its name, source and SHA1."""

    name: str
    source: str = field(repr=False)

    @classmethod
    def load(cls, name: str, preludes: Sequence[str] = WRITE_SIDE, *, named: str | None = None) -> Script:
        """The script in ``<name>.lua`` with `preludes` (names of ``_*.lua`` files) spliced in
        (called `named` when it is a variant of that file's script)."""
        shebang, _, body = _read(f"{name}.lua").partition("\n")
        return cls(named or name, _spliced(shebang, preludes, body))

    @classmethod
    def alone(cls, name: str) -> Script:
        """The script in ``<name>.lua`` without a prelude (a script that needs none is spared
        evaluating one on every call)."""
        return cls.load(name, ())

    @classmethod
    def with_library(cls, name: str, body: str, shebang: str = "#!lua", preludes: Sequence[str] = WRITE_SIDE) -> Script:
        """A script from inline Lua with `preludes` spliced in (for tools and tests)."""
        return cls(name, _spliced(shebang, preludes, body))

    def when_full(self, name: str, guard: str) -> Script:
        """This script flagged ``allow-oom`` (Redis runs it on a server at ``maxmemory`` with
        ``noeviction``, which refuses every other script that writes), with `guard` run first:
        Lua that returns an error, writing nothing, for the calls that are not the one freeing
        or not growing memory it exists for."""
        _, _, body = self.source.partition("\n")
        return Script(name, "\n".join(["#!lua flags=allow-oom", guard, body]))

    @cached_property
    def sha(self) -> str:
        """The SHA1 that EVALSHA names the script by."""
        return hashlib.sha1(self.source.encode()).hexdigest()

    def evalsha_args(self, keys: Sequence[Arg], args: Sequence[Arg]) -> list[Arg]:
        """The arguments of an EVALSHA call."""
        return ["EVALSHA", self.sha, len(keys), *keys, *args]

    def enqueue(self, pipe: Any, keys: Sequence[Arg], args: Sequence[Arg]) -> None:
        """Queue a call on a non-transactional pipeline (sync or async)."""
        pipe.execute_command(*self.evalsha_args(keys, args))


APPEND = Script.load("append", (*WRITE_SIDE, "_delta"))
READ_FULL = Script.load("read_full", READ_SIDE)
READ_SHALLOW = Script.load("read_shallow", READ_SIDE)
READ_CACHED = Script.load("read_cached", READ_SIDE)
APPLY = Script.load("apply", BATCH_SIDE)
SWAP = Script.load("swap")
TRIM = Script.alone("trim")
REWRITE = Script.load("rewrite")
READ_HISTORY = Script.load("read_history", READ_SIDE)
LIST_WINDOW = Script.load("list_window", LIST_SIDE)
LIST_PAGE = Script.load("list_page", PAGE_SIDE)
TTL = Script.load("ttl")
ERASE = APPEND.when_full(
    "erase",
    "local erase_at = tonumber(ARGV[1]) + 2\n"
    "if ARGV[erase_at + 1 + tonumber(ARGV[erase_at])] ~= '1' then\n"
    "  return redis.error_reply('ERR erase.lua only runs an append that erases a log')\nend",
)
"""`APPEND` for the calls that erase a log (`delete_thread`), runnable on a full server: it
deletes the log and its view keys, leaving one feed pointer (the memory it frees is the point)."""
TTL_TOUCH = TTL.when_full(
    "ttl_touch",
    "if ARGV[1] ~= 'touch' then return redis.error_reply('ERR ttl_touch.lua only refreshes') end",
)
"""`TTL` for the refresh of `refresh_on_read` alone (it only moves expiries), runnable on a full
server so that reading never needs memory."""
APPEND_BATCH = Script.load("append_batch")
STORE_PUT = Script.load("store_put", ("_item",))
"""One store put (`streamsaver.store.put`): what `APPEND_BATCH` does for a partition's single
put, without the op interpreter's prelude and with a third of its arguments."""
STORE_GET = Script.alone("store_get")
STORE_NAMESPACES = Script.alone("store_namespaces")
FENCED_APPEND = Script.load("append", ("_fence", *WRITE_SIDE, "_delta"), named="fenced_append")
"""`APPEND` for a writer holding a claim of the thread (`streamsaver.checkpoints.ownership`):
its last argument is the claim's token, and a token that is not the thread's current claim
refuses the call (``SSOWNER``) before anything is written."""
CLAIM = Script.alone("claim")
ALL = (
    APPEND, APPLY, READ_FULL, READ_SHALLOW, SWAP, REWRITE, READ_HISTORY, TTL, LIST_WINDOW, LIST_PAGE, ERASE, TTL_TOUCH,
    FENCED_APPEND, CLAIM, READ_CACHED,
)
LOAD_SCRIPTS: list[list[Arg]] = [["SCRIPT", "LOAD", s.source] for s in ALL]
"""The commands that load every script of `ALL` (after NOSCRIPT, or on a new primary)."""
