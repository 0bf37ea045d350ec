"""The store's calls as programs (`streamsaver.log.program`): the shells hand them to a driver.

`batch` is ONE round trip whatever the ops: an atomic append per partition written, then every
read, pipelined. Every op is checked before anything is sent, so a rejected batch changes
nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from langgraph.store.base import Op, PutOp, Result, SearchOp

from projectors.store import VIEW
from projectors.store_domain import STORE
from streamsaver.log import setup
from streamsaver.log.program import Call, Program
from streamsaver.log.routing import Step
from streamsaver.store.core import StoreCore
from streamsaver.store.validation import check_ops
from streamsaver.store.vectors import Embed, VectorIndex

__all__ = ["batch", "set_up"]


def _reload() -> Sequence[Step]:
    return setup.load_scripts(STORE.setup_scripts)


def _embedded(index: VectorIndex, ops: Sequence[Op]) -> Program[tuple[dict[int, Any], dict[int, bytes]]]:
    """The embeddings of the puts' texts (one `Embed` step for all) and of each search query
    (one each), by op position: computed before anything is sent."""
    texts = {n: index.texts(op) for n, op in enumerate(ops) if isinstance(op, PutOp)}
    flat = tuple(text for group in texts.values() for text in group)
    found = index.checked((yield Embed(flat)), len(flat)) if flat else []
    vectors: dict[int, Any] = {}
    at = 0
    for n, group in texts.items():
        vectors[n], at = found[at : at + len(group)], at + len(group)
    queries: dict[int, bytes] = {}
    for n, op in enumerate(ops):
        if isinstance(op, SearchOp) and op.query:
            [vector] = index.checked((yield Embed((op.query,), query=True)), 1)
            queries[n] = index.blob(vector)
    return vectors, queries


def batch(core: StoreCore, ops: Iterable[Op]) -> Program[list[Result]]:
    """Every op of `ops`, in one round trip (after the embeddings it needs, when the store has
    a vector index; and a second when a search by meaning's page came back short, see
    `streamsaver.store.knn`); their results in op order.

    Raises:
        InvalidNamespaceError, InvalidInputError: an invalid op, or an embedder's answer of the
            wrong count or dimensions (nothing was sent).
    """
    checked = check_ops(ops)
    if not checked:
        return []
    vectors: dict[int, Any] = {}
    queries: dict[int, bytes] = {}
    if core.vectors is not None:
        vectors, queries = yield from _embedded(core.vectors, checked)
    knn = core.knn_searches(checked, queries)
    replies = core.replies_by_op(checked, (yield Call(core.requests(checked, vectors, knn), _reload)), knn)
    follow = {n: steps for n, search in knn.items() if (steps := search.follow_up(replies[n]))}
    more: dict[int, list[Any]] = {}
    if follow:  # a search by meaning whose page came back short: one more round trip finishes it
        answers = iter((yield Call([step for steps in follow.values() for step in steps], _reload)))
        more = {n: [next(answers) for _ in steps] for n, steps in follow.items()}
    return core.results(checked, replies, knn, more)


def set_up(core: StoreCore, cluster: bool = False) -> Program[None]:
    """Probe the modules, fix the partition count, create the items index and load the store's
    scripts (`streamsaver.log.setup` with the store domain). Idempotent.

    Raises:
        EvictionPolicyError: the server evicts keys and the core does not allow it.
    """
    keyspace, _ = yield from setup.program(
        core.domain, core.prefix, core.partitions, (VIEW,), cluster, allow_eviction=core.allow_eviction
    )
    core.keyspace = keyspace
