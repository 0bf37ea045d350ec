"""Postgres savers, measured only when a Postgres URL is given (``--postgres-url`` or
``STREAMSAVER_BENCH_POSTGRES_URL``); their packages come with the ``bench-postgres`` extra.

Each opened saver gets a schema of its own in that database (``streamsaver_bench_<n>``,
dropped when its section ends), so savers and sections never read each other's rows. What it
stores is weighed as ``pg_total_relation_size`` (table, indexes and TOAST) of every table in
its schema.
"""

from __future__ import annotations

import itertools
from typing import Any

import psycopg
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg.rows import dict_row

from benchmarks.savers import AsyncDriver, Environment, Opened, SaverSpec, SyncDriver

__all__ = ["POSTGRES_SAVERS"]

_numbers = itertools.count(1)


def _schema(env: Environment) -> str:
    """A new, empty schema, dropped when the section ends."""
    assert env.postgres_url is not None
    name = f"streamsaver_bench_{next(_numbers)}"
    with psycopg.connect(env.postgres_url, autocommit=True) as admin:
        admin.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
        admin.execute(f"CREATE SCHEMA {name}")

    def drop() -> None:
        with psycopg.connect(env.postgres_url or "", autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")

    env.stack.callback(drop)
    return name


def _options(schema: str) -> dict[str, Any]:
    return {
        "autocommit": True,
        "prepare_threshold": 0,
        "row_factory": dict_row,
        "options": f"-c search_path={schema}",
    }


def _weigher(env: Environment, schema: str) -> Any:
    def stored_bytes() -> int:
        with psycopg.connect(env.postgres_url or "", autocommit=True) as conn:
            row = conn.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relkind = 'r'",
                (schema,),
            ).fetchone()
        return int(row[0]) if row else 0

    return stored_bytes


def _sync(env: Environment) -> Opened:
    schema = _schema(env)
    conn = env.stack.enter_context(psycopg.connect(env.postgres_url or "", **_options(schema)))
    saver = PostgresSaver(conn)
    saver.setup()
    return Opened(saver, SyncDriver(saver), _weigher(env, schema))


def _async(env: Environment) -> Opened:
    schema = _schema(env)

    async def setup() -> AsyncPostgresSaver:
        conn = await psycopg.AsyncConnection.connect(env.postgres_url or "", **_options(schema))
        env.stack.callback(lambda: env.loop.run_until_complete(conn.close()))
        saver = AsyncPostgresSaver(conn)
        await saver.setup()
        return saver

    saver = env.loop.run_until_complete(setup())
    return Opened(saver, AsyncDriver(saver, env.loop), _weigher(env, schema))


POSTGRES_SAVERS: list[SaverSpec] = [
    SaverSpec("postgres", "PostgresSaver", _sync, backend="postgres"),
    SaverSpec("postgres-async", "AsyncPostgresSaver", _async, backend="postgres", api="async"),
]
