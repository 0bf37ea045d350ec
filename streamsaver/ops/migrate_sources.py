"""The savers a migration reads from: langgraph-checkpoint-redis, -postgres and -sqlite.

Each is opened from a URL with its own package, which is optional (not a dependency of
streamsaver): a missing one is a `ConfigurationError` naming the package to install. A source
is the saver itself (checkpoints are read through its public API: `list` for the ids,
`get_tuple` for each checkpoint) and a way to name every thread it holds, which no saver's API
offers cheaply (``list(None)`` reads every checkpoint whole, and RedisSaver's stops at 10,000):

* sqlite and postgres: ``SELECT DISTINCT thread_id FROM checkpoints`` on the saver's connection;
* redis: an ``FT.AGGREGATE ... GROUPBY @thread_id`` on the saver's checkpoints index.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver

from streamsaver.errors import ConfigurationError, InvalidInputError

__all__ = ["SOURCE_KINDS", "Source", "SourceKind", "import_optional", "open_source"]

SourceKind = Literal["redis", "postgres", "sqlite"]
SOURCE_KINDS: tuple[SourceKind, ...] = ("redis", "postgres", "sqlite")

_PACKAGES = {
    "redis": "langgraph-checkpoint-redis",
    "postgres": "langgraph-checkpoint-postgres psycopg[binary]",
    "sqlite": "langgraph-checkpoint-sqlite",
}

REDIS_LIST_CAP = 10_000
"""RedisSaver.list returns at most this many checkpoints per call (its FT.SEARCH limit)."""


@dataclass
class Source:
    """A saver to migrate from.

    Attributes:
        kind: ``"redis"``, ``"postgres"`` or ``"sqlite"``.
        saver: the source saver; only its public read API is used.
        thread_lister: every thread id the source holds (see the module docstring).
        list_cap: the most checkpoints one ``list`` call returns (None: no cap).
    """

    kind: SourceKind
    saver: BaseCheckpointSaver[Any]
    thread_lister: Callable[[], list[str]] = field(repr=False)
    list_cap: int | None = None

    def thread_ids(self) -> list[str]:
        """Every thread id of the source, sorted."""
        return sorted(self.thread_lister())


def import_optional(kind: SourceKind, name: str) -> Any:
    """The module `name` of the `kind` source's package.

    Raises:
        ConfigurationError: the package is not installed (the message says what to install).
    """
    try:
        return import_module(name)
    except ImportError as exc:
        raise ConfigurationError(
            f"migrating from {kind} needs {_PACKAGES[kind]}: pip install {_PACKAGES[kind]}"
        ) from exc


@contextmanager
def open_source(kind: str, url: str, *, redis_prefixes: tuple[str, str] | None = None) -> Iterator[Source]:
    """The saver of `kind` at `url`, closed on exit.

    Args:
        kind: ``"redis"`` (a ``redis://`` URL), ``"postgres"`` (a ``postgresql://`` URL, what
            ``PostgresSaver.from_conn_string`` takes) or ``"sqlite"`` (a file path, or
            ``sqlite:///path``).
        redis_prefixes: RedisSaver's ``checkpoint_prefix`` and ``checkpoint_write_prefix``
            (default: its own defaults).

    Raises:
        InvalidInputError: an unknown kind, or a sqlite file that does not exist (connecting
            would create an empty one).
        ConfigurationError: the kind's package is not installed.
    """
    if kind == "sqlite":
        with _sqlite(url) as source:
            yield source
    elif kind == "postgres":
        with _postgres(url) as source:
            yield source
    elif kind == "redis":
        with _redis(url, redis_prefixes) as source:
            yield source
    else:
        raise InvalidInputError(f"unknown source {kind!r}: one of {', '.join(SOURCE_KINDS)}")


@contextmanager
def _sqlite(url: str) -> Iterator[Source]:
    path = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else url
    if path != ":memory:" and not Path(path).is_file():
        raise InvalidInputError(f"no sqlite database at {path!r}")
    saver_class = import_optional("sqlite", "langgraph.checkpoint.sqlite").SqliteSaver
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        def threads() -> list[str]:
            return [row[0] for row in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")]

        yield Source("sqlite", saver_class(conn), threads)
    finally:
        conn.close()


@contextmanager
def _postgres(url: str) -> Iterator[Source]:
    saver_class = import_optional("postgres", "langgraph.checkpoint.postgres").PostgresSaver
    with saver_class.from_conn_string(url) as saver:
        def threads() -> list[str]:
            rows = saver.conn.execute("SELECT DISTINCT thread_id FROM checkpoints").fetchall()
            return [row["thread_id"] if isinstance(row, dict) else row[0] for row in rows]

        yield Source("postgres", saver, threads)


@contextmanager
def _redis(url: str, prefixes: tuple[str, str] | None) -> Iterator[Source]:
    module = import_optional("redis", "langgraph.checkpoint.redis")
    util = import_optional("redis", "langgraph.checkpoint.redis.util")
    options = {} if prefixes is None else {"checkpoint_prefix": prefixes[0], "checkpoint_write_prefix": prefixes[1]}
    with module.RedisSaver.from_conn_string(url, **options) as saver:
        saver.setup()  # creates its indexes when absent; writes no checkpoint

        def threads() -> list[str]:
            reply = saver._redis.execute_command(
                "FT.AGGREGATE", saver.checkpoints_index.name, "*", "GROUPBY", "1", "@thread_id", "LIMIT", "0",
                str(2**31 - 1),
            )
            ids = []
            for row in reply[1:]:
                pairs = dict(zip(row[::2], row[1::2], strict=True))
                raw = pairs.get(b"thread_id", pairs.get("thread_id"))
                if raw is not None:
                    ids.append(util.from_storage_safe_id(raw.decode() if isinstance(raw, bytes) else raw))
            return ids

        yield Source("redis", saver, threads, REDIS_LIST_CAP)
