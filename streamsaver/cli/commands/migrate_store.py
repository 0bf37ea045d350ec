"""``streamsaver migrate-store --from redis URL``: copy a langgraph-checkpoint-redis RedisStore's
items into this deployment's memory store (`streamsaver.ops.migrate_store`)."""

from __future__ import annotations

import argparse
import sys
from importlib import import_module
from typing import Any

from streamsaver.cli.commands._shared import UsageError, emit_json, open_client

__all__ = ["register"]

DESCRIPTION = """\
Copy every item of a langgraph-checkpoint-redis RedisStore (namespace, key, value, and the
time it has left to live) into this deployment's memory store (StreamStore, --url, --prefix),
then read each copy back and compare it; a difference is listed and the command exits 1.
created_at and updated_at become the time of the copy (a store's put does not take them).

Search by meaning: give the target's index configuration, as LangGraph's IndexConfig, either
as --index module:attribute (a dict importable from Python) or with --dims, --embed and
--fields; items are embedded as they are put. Without it the items are copied unembedded.

Resumable: an item already there with the same value is not put again, so after a failure or
Ctrl-C run the same command. The source is only read. Needs: pip install langgraph-checkpoint-redis
"""


def _imported(path: str, what: str) -> Any:
    """The object `path` (``module:attribute``) names.

    Raises:
        UsageError: `path` is not of that form, or names nothing importable.
    """
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise UsageError(f"{what} must be module:attribute, not {path!r}")
    try:
        return getattr(import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise UsageError(f"{what} {path!r}: {exc}") from exc


def index_config(args: argparse.Namespace) -> dict[str, Any] | None:
    """The target store's IndexConfig the options name (None: no index).

    Raises:
        UsageError: --index beside --dims/--embed, --dims without --embed (or the reverse),
            or a path that names nothing.
    """
    if args.index and (args.dims or args.embed):
        raise UsageError("give the index either with --index or with --dims and --embed, not both")
    if args.index:
        config = _imported(args.index, "--index")
        if not isinstance(config, dict):
            raise UsageError(f"--index {args.index!r} is a {type(config).__name__}, not a dict (an IndexConfig)")
        return config
    if not args.dims and not args.embed:
        return None
    if not (args.dims and args.embed):
        raise UsageError("--dims and --embed go together")
    try:
        embed: Any = _imported(args.embed, "--embed")
    except UsageError:
        embed = args.embed  # not an importable object: a 'provider:model' for init_embeddings
    fields = args.fields.split(",") if args.fields else None
    return {"dims": args.dims, "embed": embed, "fields": fields}


def _run(args: argparse.Namespace) -> int:
    from streamsaver.memory.sync import StreamStore
    from streamsaver.ops.migrate_store import migrate_items, open_redis_store, redis_store_items
    from streamsaver.ops.progress import Progress

    index = index_config(args)
    with open_client(args) as client, open_redis_store(args.source_url, args.store_prefix,
                                                        args.vector_prefix) as source:
        target = StreamStore(client, prefix=args.prefix, index=index,  # type: ignore[arg-type]
                             writer="streamsaver migrate-store")
        target.setup()
        with Progress("items", enabled=False if args.json else None) as bar:
            report = migrate_items(redis_store_items(source), target, on_page=bar.advance)
    if args.json:
        emit_json(report.as_dict())
    else:
        print(f"{report.items:,} item(s): copied {report.copied:,}, {report.skipped:,} already there")
        for namespace, key in report.mismatches:
            print(f"differs: namespace {namespace!r} key {key!r}", file=sys.stderr)
        print("the copy equals the source" if report.ok else f"{len(report.mismatches):,} item(s) differ")
    return 0 if report.ok else 1


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``migrate-store``."""
    parser = commands.add_parser(
        "migrate-store",
        parents=[common],
        help="copy a langgraph-checkpoint-redis RedisStore's items into this deployment's memory store",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--from", dest="source", required=True, choices=("redis",),
                        help="the kind of store to copy from (redis: langgraph-checkpoint-redis's RedisStore)")
    parser.add_argument("source_url", metavar="URL", help="the source store's Redis URL")
    parser.add_argument("--store-prefix", default="store", help="RedisStore's store_prefix (default: %(default)s)")
    parser.add_argument("--vector-prefix", default="store_vectors",
                        help="RedisStore's vector_prefix (default: %(default)s)")
    parser.add_argument("--index", metavar="MODULE:ATTRIBUTE",
                        help="the target's IndexConfig, a dict importable from Python")
    parser.add_argument("--dims", type=int, help="the embedding dimensions (with --embed)")
    parser.add_argument("--embed", help="the embedder: 'provider:model' (LangChain's init_embeddings) or "
                        "module.path:attribute (an Embeddings or a function of a list of texts)")
    parser.add_argument("--fields", help="comma-separated JSON paths of the value to embed (default: the whole value)")
    parser.set_defaults(handler=_run)
