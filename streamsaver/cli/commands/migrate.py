"""``streamsaver migrate --from redis|postgres|sqlite URL``: copy another saver's threads into
this deployment and check the copy (`streamsaver.ops.migrate`)."""

from __future__ import annotations

import argparse
import sys

from streamsaver.cli.commands._shared import emit_json, open_client

__all__ = ["register"]

DESCRIPTION = """\
Copy every thread's whole history from another LangGraph checkpointer into this deployment
(--url, --prefix): checkpoints with their metadata, parent links and namespaces (subgraphs
included), and pending writes. The source is read through its public API (list, get_tuple),
the copy written with the saver's own put and put_writes, oldest checkpoint first. Then each
checkpoint is read back and compared with the source's (values, versions, metadata, parent,
writes); any difference is listed and the command exits 1.

Resumable: a checkpoint the deployment already holds is not copied again, so after a failure
or Ctrl-C, run the same command: it continues, and checks everything. The source is only read.

Sources (their packages are not streamsaver's dependencies; install the one you need):
  redis     redis://host:port/db        pip install langgraph-checkpoint-redis
  postgres  postgresql://user@host/db   pip install langgraph-checkpoint-postgres 'psycopg[binary]'
  sqlite    path/to/checkpoints.db      pip install langgraph-checkpoint-sqlite
"""


def _run(args: argparse.Namespace) -> int:
    from streamsaver.ops.migrate import migrate_threads
    from streamsaver.ops.migrate_sources import open_source
    from streamsaver.ops.progress import Progress
    from streamsaver.saver.sync import StreamSaver

    prefixes = (args.redis_checkpoint_prefix, args.redis_write_prefix)
    with open_client(args) as client, open_source(args.source, args.source_url, redis_prefixes=prefixes) as source:
        thread_ids = args.thread or source.thread_ids()
        target = StreamSaver(client, prefix=args.prefix)
        with Progress("threads", total=len(thread_ids), enabled=False if args.json else None) as bar:
            report = migrate_threads(source, target, thread_ids, on_thread=lambda _: bar.advance())
    if args.json:
        emit_json(report.as_dict())
    else:
        print(
            f"{report.threads:,} thread(s), {report.checkpoints:,} checkpoint(s): copied "
            f"{report.copied_checkpoints:,} checkpoint(s) and {report.copied_writes:,} pending write(s), "
            f"{report.skipped_checkpoints:,} already there"
        )
        for m in report.mismatches:
            print(f"differs: thread {m.thread_id!r} ns {m.checkpoint_ns!r} checkpoint {m.checkpoint_id}: "
                  f"{', '.join(m.parts)}", file=sys.stderr)
        print("the copy equals the source" if report.ok else f"{len(report.mismatches):,} checkpoint(s) differ")
    return 0 if report.ok else 1


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``migrate``."""
    parser = commands.add_parser(
        "migrate",
        parents=[common],
        help="copy the threads of a RedisSaver, PostgresSaver or SqliteSaver into this deployment, and check them",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--from", dest="source", required=True, choices=("redis", "postgres", "sqlite"),
                        help="the kind of saver to copy from")
    parser.add_argument("source_url", metavar="URL", help="where the source saver keeps its checkpoints")
    parser.add_argument("--thread", action="append", metavar="THREAD_ID",
                        help="copy only this thread (repeatable; default: every thread of the source)")
    parser.add_argument("--redis-checkpoint-prefix", default="checkpoint",
                        help="RedisSaver's checkpoint_prefix (default: %(default)s)")
    parser.add_argument("--redis-write-prefix", default="checkpoint_write",
                        help="RedisSaver's checkpoint_write_prefix (default: %(default)s)")
    parser.set_defaults(handler=_run)
