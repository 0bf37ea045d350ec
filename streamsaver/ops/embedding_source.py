"""The embedding an operator names on the command line (``streamsaver reembed``), imported from
the operator's own code: ``--embed package.module:attr`` or ``--index package.module:attr``.

Re-embedding needs the model, which no stored data names in a form that could be run: the log
and the items keep only the model's *name*. So the callable comes from an explicit reference the
operator types, resolved like ``uvicorn app:app`` (the current directory is importable), never
from anything read out of Redis.

``--embed`` resolves to what LangGraph's ``IndexConfig["embed"]`` accepts:

* an ``Embeddings`` instance, or a function ``texts -> vectors`` (one required parameter);
* an ``Embeddings`` class, or a factory taking no arguments: called once, and what it returns
  must be one of the above.

``--index`` resolves to a whole ``IndexConfig`` (a mapping, or a factory taking no arguments
that returns one): the very config the application passes to its ``StreamStore``, so the
dimensions, paths and metric cannot drift from it.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, cast

from langgraph.store.base import IndexConfig

from streamsaver.errors import ConfigurationError, InvalidInputError

__all__ = ["index_config", "resolve"]


def resolve(reference: str) -> Any:
    """The object `reference` (``package.module:attr``, ``attr`` may be dotted) names.

    Raises:
        InvalidInputError: not of the form ``module:attr``.
        ConfigurationError: the module cannot be imported or has no such attribute.
    """
    module_name, colon, attr = reference.partition(":")
    if not colon or not module_name or not attr:
        raise InvalidInputError(f"expected package.module:attribute, not {reference!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m`: the operator's project is importable
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"cannot import {module_name!r} (from {reference!r}): {exc}") from exc
    for part in attr.split("."):
        if not hasattr(found, part):
            raise ConfigurationError(f"{module_name!r} has no attribute {attr!r} (from {reference!r})")
        found = getattr(found, part)
    return found


def _required(function: Any) -> int:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return 1  # a builtin without a signature: take it as an embedding function
    return sum(1 for p in parameters if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _embedding(found: Any, reference: str) -> Any:
    """`found` as an ``IndexConfig["embed"]``: instances and embedding functions as they are,
    classes and zero-argument factories called once."""
    if hasattr(found, "embed_documents") and not inspect.isclass(found):
        return found
    if not callable(found):
        raise ConfigurationError(f"{reference!r} is neither an Embeddings, a function nor a factory")
    if inspect.isclass(found) or _required(found) == 0:
        made = found()
        if hasattr(made, "embed_documents") or callable(made):
            return made
        raise ConfigurationError(f"{reference!r} returned {type(made).__name__}, not an Embeddings or a function")
    return found


def index_config(
    *, embed: str | None = None, index: str | None = None, dims: int | None = None,
    fields: Sequence[str] | None = None, distance: str | None = None, model: str | None = None,
) -> IndexConfig:
    """The index config ``streamsaver reembed`` opens the store with: the one `index` names,
    or one built from the `embed` reference, `dims`, `fields` (default: the whole value) and
    `distance`; `model` overrides the name logged with each embedding.

    Raises:
        InvalidInputError: neither or both of `embed` and `index`; `embed` without `dims`.
        ConfigurationError: a reference that cannot be imported, or is not what it must be.
    """
    if (embed is None) == (index is None):
        raise InvalidInputError("name the embedding with --embed module:attr or the whole config with --index")
    if index is not None and (dims is not None or distance or fields):
        raise InvalidInputError("--index gives the whole config: not with --dims, --fields or --distance")
    if index is not None:
        found = resolve(index)
        config = found() if callable(found) and not isinstance(found, Mapping) else found
        if not isinstance(config, Mapping) or "dims" not in config or "embed" not in config:
            raise ConfigurationError(f"{index!r} is not an IndexConfig (a mapping with dims and embed)")
        built = dict(config)
    else:
        assert embed is not None
        if dims is None:
            raise InvalidInputError("--embed needs --dims (the embedding's dimensions)")
        built = {"dims": dims, "embed": _embedding(resolve(embed), embed)}
        if fields:
            built["fields"] = list(fields)
        if distance:
            built["distance_type"] = distance
    if model:
        built["model"] = model
    return cast(IndexConfig, built)
