"""Source savers for the migration tests: a SqliteSaver file, the peer RedisSaver on the test
server (under a prefix of its own), and a PostgresSaver on a throwaway PostgreSQL server when
its binaries are installed (skipped otherwise).

Each fixture yields ``(kind, url, saver, extra CLI arguments)``: the saver writes the history
the test migrates, the URL and arguments are what ``streamsaver migrate`` is given.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

__all__ = ["postgres_server", "source_saver"]

PG_BIN = ("initdb", "pg_ctl", "postgres")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_postgres_user(argv: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run it as the ``postgres`` user then."""
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


@contextmanager
def postgres_server() -> Iterator[str]:
    """A PostgreSQL server in a temporary directory (trust authentication), its URL; skips the
    test when the binaries are absent."""
    if any(shutil.which(b) is None for b in PG_BIN):
        pytest.skip("no PostgreSQL binaries (initdb, pg_ctl, postgres)")
    pytest.importorskip("langgraph.checkpoint.postgres")
    home = Path(tempfile.mkdtemp(prefix="streamsaver-pg-"))
    if os.geteuid() == 0:
        shutil.chown(home, "postgres")
    data, port = home / "data", _free_port()
    subprocess.run(_as_postgres_user(["initdb", "-A", "trust", "-U", "postgres", "-D", str(data)]),
                   check=True, capture_output=True)
    options = f"-p {port} -k {home} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(_as_postgres_user(["pg_ctl", "-D", str(data), "-o", options, "-w", "start",
                                      "-l", str(home / "log")]), check=True, capture_output=True)
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(_as_postgres_user(["pg_ctl", "-D", str(data), "-m", "immediate", "stop"]),
                       check=False, capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


@contextmanager
def source_saver(kind: str, redis_url: str, prefix: str, tmp_path: Path) -> Iterator[tuple[str, Any, list[str]]]:
    """The saver of `kind` to migrate from: ``(url, saver, extra migrate arguments)``."""
    if kind == "sqlite":
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver

        path = tmp_path / "checkpoints.db"
        conn = sqlite3.connect(path, check_same_thread=False)
        try:
            yield str(path), SqliteSaver(conn), []
        finally:
            conn.close()
    elif kind == "redis":
        from langgraph.checkpoint.redis import RedisSaver

        prefixes = [f"{prefix}-peer", f"{prefix}-peer-write"]
        with RedisSaver.from_conn_string(redis_url, checkpoint_prefix=prefixes[0],
                                         checkpoint_write_prefix=prefixes[1]) as saver:
            saver.setup()
            yield redis_url, saver, ["--redis-checkpoint-prefix", prefixes[0], "--redis-write-prefix", prefixes[1]]
            for index in (saver.checkpoints_index, saver.checkpoint_writes_index):
                index.delete(drop=True)
    else:
        from langgraph.checkpoint.postgres import PostgresSaver

        with postgres_server() as url, PostgresSaver.from_conn_string(url) as saver:
            saver.setup()
            yield url, saver, []
