"""Factories for LangGraph Platform (``langgraph dev``, ``langgraph up``, LangSmith deployments):
the ``checkpointer`` and ``store`` entries of ``langgraph.json``.

The server loads the object a ``"path"`` names and enters it once per worker thread (it accepts
a saver or store, a context manager, or a callable returning either); each factory here is an
``@asynccontextmanager`` function, so every entry makes its own async client on the event loop
that uses it, runs ``setup()`` (idempotent), and closes the client on exit::

    {
      "graphs": {"agent": "./agent.py:graph"},
      "checkpointer": {"path": "streamsaver.platform.checkpointer"},
      "store": {"path": "streamsaver.platform.store",
                "index": {"embed": "openai:text-embedding-3-small", "dims": 1536}}
    }

The server is named by ``STREAMSAVER_URL`` (or ``REDIS_URL``) and the key prefix by
``STREAMSAVER_PREFIX`` (default ``streamsaver``). The store reads the ``index`` and ``ttl`` of
the ``store`` entry, which the server passes in ``LANGGRAPH_STORE``; an ``embed`` given as a
file path (``./embeddings.py:embed``) is loaded from that file, any other string goes to
LangChain's ``init_embeddings`` (``provider:model``). For other options (a view, durability,
TTL, compression, a serde) make your own factory with `checkpointer_factory` /
`store_factory` in your project and point the ``path`` at it.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

from streamsaver.errors import ConfigurationError
from streamsaver.log.keys import DEFAULT_PREFIX
from streamsaver.memory.aio import AsyncStreamStore
from streamsaver.saver.aio import AsyncStreamSaver

__all__ = ["checkpointer", "checkpointer_factory", "server_url", "store", "store_factory", "store_options"]


def server_url() -> str:
    """The Redis URL the factories use: ``STREAMSAVER_URL``, else ``REDIS_URL``.

    Raises:
        ConfigurationError: neither is set.
    """
    url = os.environ.get("STREAMSAVER_URL") or os.environ.get("REDIS_URL")
    if not url:
        raise ConfigurationError(
            "streamsaver.platform needs a Redis server with the search and JSON modules: set "
            "STREAMSAVER_URL (or REDIS_URL), e.g. redis://localhost:6379 (streamsaver server starts one)"
        )
    return url


def _prefix(options: dict[str, Any]) -> dict[str, Any]:
    return {"prefix": os.environ.get("STREAMSAVER_PREFIX", DEFAULT_PREFIX), **options}


def checkpointer_factory(url: str | None = None, **options: Any) -> Callable[[], AbstractAsyncContextManager[Any]]:
    """A ``checkpointer`` factory for ``langgraph.json``: each call opens an `AsyncStreamSaver`
    on `url` (default: `server_url`) with `options` (``prefix`` defaults to
    ``STREAMSAVER_PREFIX``), set up, closed on exit."""

    @asynccontextmanager
    async def open_saver() -> AsyncIterator[AsyncStreamSaver]:
        async with AsyncStreamSaver.from_conn_string(url or server_url(), **_prefix(options)) as saver:
            await saver.setup()
            yield saver

    return open_saver


def _load_embed(embed: Any) -> Any:
    """An ``embed`` of langgraph.json: a file path with a function name is loaded from the file.

    Raises:
        ConfigurationError: the file cannot be loaded or lacks the function.
    """
    if not isinstance(embed, str) or ".py:" not in embed:
        return embed
    path, name = embed.rsplit(":", 1)
    spec = importlib.util.spec_from_file_location(f"streamsaver_embed_{Path(path).stem}", path)
    if spec is None or spec.loader is None:
        raise ConfigurationError(f"cannot load the embeddings file {path!r}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        return getattr(module, name)
    except (OSError, AttributeError) as exc:
        raise ConfigurationError(f"cannot load embed {embed!r}: {exc}") from exc


def store_options() -> dict[str, Any]:
    """The `AsyncStreamStore` options the ``store`` entry of langgraph.json gives (``index``,
    ``ttl``), read from ``LANGGRAPH_STORE`` (empty when unset).

    Raises:
        ConfigurationError: ``LANGGRAPH_STORE`` is not a JSON object.
    """
    raw = os.environ.get("LANGGRAPH_STORE")
    if not raw:
        return {}
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"LANGGRAPH_STORE is not JSON: {exc}") from exc
    if not isinstance(config, dict):
        raise ConfigurationError("LANGGRAPH_STORE must be a JSON object (the store entry of langgraph.json)")
    options: dict[str, Any] = {}
    if index := config.get("index"):
        options["index"] = {**index, "embed": _load_embed(index.get("embed"))}
    ttl = config.get("ttl") or {}
    if ttl.get("default_ttl") is not None:
        options["default_ttl"] = float(ttl["default_ttl"])
    if "refresh_on_read" in ttl:
        options["refresh_on_read"] = bool(ttl["refresh_on_read"])
    return options


def store_factory(url: str | None = None, **options: Any) -> Callable[[], AbstractAsyncContextManager[Any]]:
    """A ``store`` factory for ``langgraph.json``: each call opens an `AsyncStreamStore` on `url`
    (default: `server_url`) with the options of the ``store`` entry (`store_options`) and then
    `options` (which win), set up, closed on exit."""

    @asynccontextmanager
    async def open_store() -> AsyncIterator[AsyncStreamStore]:
        chosen = _prefix({**store_options(), **options})
        async with AsyncStreamStore.from_conn_string(url or server_url(), **chosen) as memory:
            await memory.setup()
            yield memory

    return open_store


checkpointer = checkpointer_factory()
"""``"checkpointer": {"path": "streamsaver.platform.checkpointer"}``."""

store = store_factory()
"""``"store": {"path": "streamsaver.platform.store"}``."""
