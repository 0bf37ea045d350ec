"""The store's calls as programs (`streamsaver.log.program`): the shells hand them to a driver.

`batch` is ONE round trip whatever the ops: an atomic append per partition written, then every
read, pipelined. Every op is checked before anything is sent, so a rejected batch changes
nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from langgraph.store.base import Op, Result

from projectors.store import VIEW
from projectors.store_domain import STORE
from streamsaver.log import setup
from streamsaver.log.program import Call, Program
from streamsaver.log.routing import Step
from streamsaver.store.core import StoreCore
from streamsaver.store.validation import check_ops

__all__ = ["batch", "set_up"]


def _reload() -> Sequence[Step]:
    return setup.load_scripts(STORE.setup_scripts)


def batch(core: StoreCore, ops: Iterable[Op]) -> Program[list[Result]]:
    """Every op of `ops`, in one round trip; their results in op order.

    Raises:
        InvalidNamespaceError, InvalidInputError: an invalid op (nothing was sent).
    """
    checked = check_ops(ops)
    if not checked:
        return []
    replies: list[Any] = yield Call(core.requests(checked), _reload)
    return core.results(checked, replies)


def set_up(core: StoreCore, cluster: bool = False) -> Program[None]:
    """Probe the modules, fix the partition count, create the items index and load the store's
    scripts (`streamsaver.log.setup` with the store domain). Idempotent."""
    keyspace, _ = yield from setup.program(STORE, core.prefix, core.partitions, (VIEW,), cluster)
    core.keyspace = keyspace
