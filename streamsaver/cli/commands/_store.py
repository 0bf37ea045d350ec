"""How the commands address the memory store: ``--store``, and a namespace prefix ``--namespace a.b``.

A checkpoint thread is named by its id (``inspect THREAD``, ``replay --thread T``,
``tail --thread T``); the store's unit is a namespace, written with dots (labels never hold
one), matched label by label as the store matches it, so ``users.alice`` never reaches
``users.alicea``. A prefix's items share one store partition (its first label's).
"""

from __future__ import annotations

import argparse

from langgraph.store.base import InvalidNamespaceError

__all__ = ["NAMESPACE_HELP", "namespace_option", "store_option", "wants_store"]

NAMESPACE_HELP = ("a store namespace prefix, labels joined by '.' (users.alice: every item under "
                  "('users', 'alice'), labels matched whole; implies --store); default: the whole store")


def _labels(text: str) -> tuple[str, ...]:
    """The labels of a namespace written with dots (``users.alice``; "" is the whole store)."""
    from streamsaver.store.validation import check_labels

    try:
        return check_labels(text.split(".")) if text else ()
    except InvalidNamespaceError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def store_option(parser: argparse.ArgumentParser, what: str) -> None:
    """Add ``--store``: work on the memory store's partition logs (`what` they give) instead of
    the checkpoint threads'."""
    parser.add_argument("--store", action="store_true",
                        help=f"work on the memory store (StreamStore): {what}, instead of the checkpoint threads")


def namespace_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--namespace A.B`` (parsed to a tuple of labels, ``()`` by default)."""
    parser.add_argument("--namespace", type=_labels, default=(), metavar="A.B", help=NAMESPACE_HELP)


def wants_store(args: argparse.Namespace) -> bool:
    """Whether the command line addresses the store (``--store``, or a ``--namespace``)."""
    return bool(getattr(args, "store", False) or getattr(args, "namespace", ()))
