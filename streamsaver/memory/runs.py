"""Who is writing, as the store shells see it: the default writer name, and the LangGraph run a
call is made in, read from the runnable config LangGraph sets for each node (the context
variable ``langgraph.config.get_config()`` reads).

Only plain strings are taken from the config: a ``str``, or an ``int`` or ``UUID`` spelt out;
anything else there is left out, so nothing logged names code.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Mapping
from typing import Any

from langchain_core.runnables.config import var_child_runnable_config

from streamsaver.log.events import RunContext
from streamsaver.store.writers import MAX_WRITER, check_writer

__all__ = ["current_run", "writer_name"]


def writer_name(writer: str | None) -> str:
    """The store's writer name: `writer` checked (`streamsaver.store.writers.check_writer`), or
    by default this process's ``host-pid`` (as a subscriber names itself), cut to the bound.

    Raises:
        ConfigurationError: a `writer` that is not a printable name of 1 to 128 characters.
    """
    if writer is None:
        return check_writer(f"{socket.gethostname()}-{os.getpid()}"[-MAX_WRITER:])
    return check_writer(writer)


def _plain(value: Any) -> str:
    if isinstance(value, str):
        return value
    if (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, uuid.UUID):
        return str(value)
    return ""


def current_run() -> RunContext | None:
    """The LangGraph run the caller is in: its config's ``thread_id`` and ``checkpoint_ns``
    (``configurable``) and ``run_id`` (``configurable``, else ``metadata``, else the config's
    own); None outside a run (no runnable config, or one naming none of them)."""
    config = var_child_runnable_config.get()
    if not config:
        return None
    configurable: Mapping[str, Any] = config.get("configurable") or {}
    metadata: Mapping[str, Any] = config.get("metadata") or {}
    run_id = configurable.get("run_id") or metadata.get("run_id") or config.get("run_id")
    run = RunContext(_plain(configurable.get("thread_id")), _plain(configurable.get("checkpoint_ns")), _plain(run_id))
    return run if run.thread_id or run.checkpoint_ns or run.run_id else None
