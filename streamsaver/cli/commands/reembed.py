"""``streamsaver reembed``: move the memory store's items to a new embedding model, as logged puts
(`streamsaver.memory.sync.StreamStore.reembed`), with the embedding imported from the operator's
code (`streamsaver.ops.embedding_source`)."""

from __future__ import annotations

import argparse
import sys

from streamsaver.cli.commands._shared import UsageError, emit_json, open_client, positive_int
from streamsaver.cli.commands._store import namespace_option
from streamsaver.ops.progress import Progress

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from streamsaver.errors import InvalidInputError
    from streamsaver.memory.sync import StreamStore
    from streamsaver.ops.embedding_source import index_config
    from streamsaver.ops.inspection import deployment_keyspace

    try:
        index = index_config(embed=args.embed, index=args.index, dims=args.dims, fields=args.field,
                             distance=args.distance, model=args.model)
    except InvalidInputError as exc:
        raise UsageError(str(exc)) from exc
    where = ".".join(args.namespace) or "the whole store"
    with open_client(args) as client:
        deployment_keyspace(client, args.prefix)  # no deployment under --prefix: say so, write nothing
        store = StreamStore(client, prefix=args.prefix, index=index, writer="streamsaver reembed")
        model = store.core.vectors.model if store.core.vectors else "?"
        due = store.reembed(args.namespace, everything=args.everything, dry_run=True)
        if args.dry_run or not due:
            done = 0
        else:
            print(f"re-embedding {due:,} items under {where} with {model}", file=sys.stderr, flush=True)
            with Progress("items", due, enabled=None if not args.json else False) as bar:
                done = store.reembed(args.namespace, everything=args.everything, progress=bar.advance)
    if args.json:
        emit_json({"namespace": list(args.namespace), "model": model, "due": due, "reembedded": done,
                   "dry_run": args.dry_run})
    elif args.dry_run:
        print(f"{due:,} items under {where} would be re-embedded with {model} (dry run: nothing written)")
    else:
        print(f"re-embedded {done:,} items under {where} with {model}")
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``reembed``."""
    parser = commands.add_parser(
        "reembed",
        parents=[common],
        help="re-embed the memory store's items with a new embedding model (logged puts)",
        description="Embed again every item of the memory store (under --namespace) whose "
        "embeddings another model computed (every embedded item with --everything), with the "
        "embedding you name, and log each as a put that keeps the item's value, updated_at and "
        "deadline: replay and export carry the new vectors, never re-embed, and 'inspect --store' "
        "shows the model of each put. The embedding is imported from your code, never from stored "
        "data: --embed package.module:attr (an Embeddings instance or class, a function texts -> "
        "vectors, or a factory taking no arguments; the current directory is importable) with "
        "--dims, or --index package.module:attr naming the IndexConfig your application gives "
        "its StreamStore. Give the same fields as that config: an item is embedded again at the "
        "paths it was put with. Items are read 50 at a time and each page is appended atomically, "
        "refused and read again if a write raced it (safe beside live writers). A model of other "
        "dimensions needs a new index first (docs/store.md, 'Re-embedding').",
    )
    parser.add_argument("--embed", metavar="MODULE:ATTR", help="the new embedding, imported from your code")
    parser.add_argument("--index", metavar="MODULE:ATTR", help="your IndexConfig (mapping or factory), instead of "
                        "--embed/--dims/--field/--distance")
    parser.add_argument("--dims", type=positive_int, help="the embedding's dimensions (with --embed)")
    parser.add_argument("--field", action="append", metavar="PATH",
                        help="a value path the index embeds (repeatable; default: the whole value, as IndexConfig)")
    parser.add_argument("--distance", choices=("cosine", "l2", "inner_product"),
                        help="the index's distance (default cosine)")
    parser.add_argument("--model", help="the model name logged with each embedding (default: the embedding's "
                        "model or model_name attribute, else its qualified name)")
    namespace_option(parser)
    parser.add_argument("--everything", action="store_true",
                        help="re-embed every embedded item, also those the named model computed")
    parser.add_argument("--dry-run", action="store_true", help="count the items due; embed and write nothing")
    parser.set_defaults(handler=_run)
