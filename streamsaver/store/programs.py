"""The store's calls as programs (`streamsaver.log.program`): the shells hand them to a driver.

`batch` is ONE round trip whatever the ops: an atomic append per partition written, then every
read, pipelined. Every op is checked before anything is sent, so a rejected batch changes
nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Container, Iterable, Sequence
from typing import Any

from langgraph.store.base import Op, PutOp, Result, SearchOp

from projectors.store import VIEW
from streamsaver.log import setup
from streamsaver.log.program import Call, Program, Refused
from streamsaver.log.routing import Command, Step
from streamsaver.store.cluster_ranges import ranged_search
from streamsaver.store.cluster_search import filled_page, ranged_page
from streamsaver.store.core import StoreCore
from streamsaver.store.fanout import missing, with_documents
from streamsaver.store.index_config import check_index
from streamsaver.store.knn import KnnSearch
from streamsaver.store.local_reads import LocalReads
from streamsaver.store.queries import item_of
from streamsaver.store.refresh import refresh_calls
from streamsaver.store.slot_map import joined, on_new_primaries, slot_map_request
from streamsaver.store.validation import check_ops
from streamsaver.store.vectors import Embed, VectorIndex

__all__ = ["batch", "set_up"]

log = logging.getLogger("streamsaver.store")


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
    a vector index; and more when a search by meaning's page came back short, see
    `streamsaver.store.knn`, or a refreshing search's page holds items that expire, see
    `streamsaver.store.refresh`); their results in op order.

    A read that finds the items index gone (dropped or lost), or a batch that finds the
    cluster changed since setup (a primary joined: `streamsaver.store.slot_map`), sets up
    again (re-creating the index where it is missing and waiting until it has indexed every
    item) and sends again, once (`_sent`).

    Raises:
        InvalidNamespaceError, InvalidInputError: an invalid op, or an embedder's answer of the
            wrong count or dimensions (nothing was sent).
        IndexMissingError, IndexNotReadyError: see `set_up`.
    """
    checked = check_ops(ops)
    if not checked:
        return []
    local = LocalReads.start(core.cache, checked, _document_key(core), lambda held: item_of(held, core.serde))
    if len(local.hits) == len(checked):  # every op a get the local cache holds: no round trip
        return [local.hits[n] for n in range(len(checked))]
    if len(checked) == 1 and isinstance(checked[0], PutOp):
        return (yield from _write(core, checked[0], local))
    vectors: dict[int, Any] = {}
    queries: dict[int, bytes] = {}
    if core.vectors is not None:
        vectors, queries = yield from _embedded(core.vectors, checked)
    ranged = core.ranged_on_cluster(checked, queries)
    knn = core.knn_searches(checked, queries, ranged)
    try:
        sent, reads = yield from _sent(core, checked, vectors, knn, {*ranged, *local.hits})
    finally:
        local.acknowledged()
    replies = core.replies_by_op(checked, sent, reads)
    local.remember(replies)
    replies = yield from _with_documents(core, replies)
    rounds = yield from _finished(core, knn, replies)
    done = yield from _ranged(core, checked, ranged, replies)
    done |= yield from _filled(core, knn, rounds)
    results = core.results(checked, replies, knn, rounds, {**done, **local.hits})
    answers = [[reply for group in rounds[n] for reply in group] if n in knn else replies[n]
               for n in range(len(checked))]
    if refreshes := refresh_calls(core.keyspace, checked, results, answers):
        yield Call(refreshes, core.load_scripts)  # see streamsaver.store.refresh: after the page is known
    return results


def _document_key(core: StoreCore) -> Callable[[tuple[str, ...], str], bytes]:
    return lambda namespace, key: core.document_key(namespace, key).encode()


def _sent(core: StoreCore, ops: Sequence[Op], vectors: dict[int, Any], knn: dict[int, KnnSearch],
          ranged: Container[int]) -> Program[tuple[list[Any], list[list[Command]]]]:
    """The replies to the batch's round trip (`StoreCore.requests`), and its read commands.

    When the slot map it was built on is out of date, the store sets up again (reading the map,
    making the items index where it is missing and waiting until it has indexed its items,
    loading the scripts) and sends again: the reads when the items index was gone, or when
    primaries joined the cluster (`streamsaver.store.slot_map`); and when a script was missing,
    the appends to the primaries setup did not know (they ran nothing there; the others ran).
    """
    reads = core.reads(ops, knn, ranged)
    steps = core.requests(ops, vectors, reads)
    check = slot_map_request(core.topology, ops)
    writes = len(steps) - len(core.fan([command for commands in reads for command in commands]))
    appends: list[Step] = []
    before, lost = core.topology, False
    if not steps and not check:  # every get held by the local cache
        return [], reads
    try:
        sent: list[Any] = yield Call([*steps, *check], core.load_scripts)
        new = joined(core.topology, sent[len(steps) :])
        if not new:
            return sent[: len(steps)], reads
        log.warning("primaries joined the cluster since setup (%s): setting up again and reading again",
                    ", ".join(new))
    except Refused as refused:
        if not (refused.moved or (refused.scripts_missing and core.topology is not None)):
            raise
        log.warning("the store's slot map or index is out of date (%s): setting up again and sending again",
                    refused.error)
        lost = refused.scripts_missing
    yield from set_up(core, wait_indexed=True)
    if lost and before is not None and core.topology is not None:
        appends = on_new_primaries(before, core.topology, steps[:writes])
    reads = core.reads(ops, knn, ranged)
    resent = yield Call([*appends, *core.fan([command for commands in reads for command in commands])],
                        core.load_scripts)
    return [None] * (writes - len(appends)) + resent, reads


def _write(core: StoreCore, op: PutOp, local: LocalReads) -> Program[list[Result]]:
    """A batch of one write (`StreamStore.put`, ``delete``), checked: what `batch` does for it
    (its embeddings, then its partition's append, one round trip, sent again as `_sent` says
    when the cluster changed), without the steps of reads."""
    vectors: dict[int, Any] = {}
    if core.vectors is not None and (texts := core.vectors.texts(op)):
        vectors[0] = core.vectors.checked((yield Embed(tuple(texts))), len(texts))
    try:
        yield from _sent(core, [op], vectors, {}, ())
    finally:
        local.acknowledged()
    return [None]


def _ranged(core: StoreCore, ops: Sequence[Op], ranged: dict[int, tuple[bytes | None, str | None]],
            replies: list[list[Any]]) -> Program[dict[int, Result]]:
    """The pages of the searches with range conditions on a cluster (`ranged`: each with its
    query vector and full-text clause, if any; `streamsaver.store.cluster_ranges`,
    `streamsaver.store.cluster_search`), their replies put in `replies`."""
    done: dict[int, Result] = {}
    for n, (vector, text) in ranged.items():
        op = ops[n]
        assert isinstance(op, SearchOp)  # ranged_on_cluster picks searches only
        if vector is None or core.vectors is None:
            done[n], reply = yield from ranged_search(core, op)
            replies[n] = [reply]
        else:
            done[n], replies[n] = yield from ranged_page(core, op, vector, text, core.vectors.score)
    return done


def _filled(core: StoreCore, knn: dict[int, KnnSearch], rounds: dict[int, list[list[Any]]]) -> Program[
        dict[int, Result]]:
    """On a cluster, the pages of the searches by meaning whose scored items left them short,
    filled with the items without embeddings (`streamsaver.store.cluster_search.filled_page`);
    each fill's reply is added to its `rounds`."""
    done: dict[int, Result] = {}
    if core.topology is None or core.vectors is None:
        return done
    for n, search in knn.items():
        filled = yield from filled_page(core, search, rounds[n], core.vectors.score)
        if filled is not None:
            done[n] = filled[0]
            rounds[n].append([filled[1]])
    return done


def _finished(core: StoreCore, knn: dict[int, KnnSearch], replies: list[list[Any]]) -> Program[
        dict[int, list[list[Any]]]]:
    """The rounds of replies of each search by meaning: its first round trip's `replies`, then
    one more round trip while any page came back short (`KnnSearch.follow_up`)."""
    rounds = {n: [replies[n]] for n in knn}
    while follow := {n: commands for n, search in knn.items() if (commands := search.follow_up(rounds[n]))}:
        commands = [command for group in follow.values() for command in group]
        answers = iter(core.gather(commands, (yield Call(core.fan(commands), core.load_scripts))))
        groups = yield from _with_documents(core, [[next(answers) for _ in group] for group in follow.values()])
        for n, group in zip(follow, groups, strict=True):
            rounds[n].append(group)
    core.learn(knn, rounds)
    return rounds


def _with_documents(core: StoreCore, groups: list[list[Any]]) -> Program[list[list[Any]]]:
    """On a cluster, `groups` of replies with the documents of their merged pages, read by key
    in one round trip (`streamsaver.store.fanout`); on one server, `groups` as they are."""
    if core.topology is None:
        return groups
    stems = sorted({stem for group in groups for reply in group for stem in missing(reply)})
    if not stems:
        return groups
    documents = yield Call([["JSON.GET", core.item_key(stem)] for stem in stems], core.load_scripts)
    found = dict(zip(stems, documents, strict=True))
    return [[with_documents(reply, found) for reply in group] for group in groups]


def set_up(core: StoreCore, *, wait_indexed: bool = False) -> Program[None]:
    """Probe the modules, fix the partition count, create the items index and load the store's
    scripts (`streamsaver.log.setup` with the store domain); on a cluster, read the slot map
    and make the index on every primary. Idempotent. With `wait_indexed`, wait until an index
    it created has indexed the items already there.

    Raises:
        EvictionPolicyError: the server evicts keys and the core does not allow it.
        IndexMissingError: the index is missing and the user may not create it.
        IndexNotReadyError: with `wait_indexed`, the new index still indexing when the wait ran out.
        IndexConfigMismatchError: the store has an index config and the items index was made
            with another (`streamsaver.store.index_config`).
    """
    keyspace, topology = yield from setup.program(
        core.domain, core.prefix, core.partitions, (VIEW,), core.cluster, allow_eviction=core.allow_eviction,
        wait_indexed=wait_indexed,
    )
    core.keyspace, core.topology = keyspace, topology
    if core.vectors is not None:
        [items] = core.domain.views
        infos = yield Call([target.query(["FT.INFO", target.name]) for target in core.targets], core.load_scripts)
        check_index(core.index, items.index_fields or (), infos)
