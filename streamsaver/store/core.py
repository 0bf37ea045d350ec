"""What the store decides, without I/O: the events a batch's writes are, the round trip that
carries a batch, and what its replies mean (`streamsaver.store.programs` runs it)."""

from __future__ import annotations

import time
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.store.base import GetOp, ListNamespacesOp, Op, PutOp, Result, SearchOp

from projectors.store import VIEW
from projectors.store_domain import STORE, with_vectors
from streamsaver.log import setup
from streamsaver.log.append import append_batch_call
from streamsaver.log.codec import unescape
from streamsaver.log.domain import Domain
from streamsaver.log.events import ItemDeleted, ItemPut
from streamsaver.log.keys import DEFAULT_PARTITIONS, Keyspace, item_stem
from streamsaver.log.routing import Command, IndexTarget, Step, Topology, index_targets
from streamsaver.log.serde import SafeSerializer
from streamsaver.scripts import STORE_GET
from streamsaver.store.fanout import fanned, merged
from streamsaver.store.hybrid import text_query, wants_text
from streamsaver.store.item_cache import ItemCache
from streamsaver.store.knn import KnnSearch
from streamsaver.store.namespaces import list_calls, namespaces_of
from streamsaver.store.postfilter import SelectivityMemory, candidate_filter, shape
from streamsaver.store.put import put_call
from streamsaver.store.queries import item_of, query_terms, search_items, search_request
from streamsaver.store.values import encoded
from streamsaver.store.vectors import VectorIndex
from streamsaver.store.writers import run_of

__all__ = ["StoreCore"]

Event = ItemPut | ItemDeleted
Vectors = Mapping[int, Sequence[tuple[float, ...]]]
"""The embeddings of a batch's puts, by the op's position in the batch."""


_QUERIES = frozenset({"FT.AGGREGATE", "FT.SEARCH"})


def _now_micros() -> int:
    return time.time_ns() // 1000


@dataclass
class StoreCore:
    """One store deployment's decisions.

    Attributes:
        keyspace: the deployment's keys (setup replaces it with the stored partition count).
        prefix: the key prefix.
        partitions: the partition count asked for a new deployment (None: the stored one).
        refresh_on_read: whether reads renew an item's TTL unless a call says otherwise (the
            shells hand it to LangGraph's ``BaseStore``, which resolves each op's ``refresh_ttl``).
        vectors: the vector index (None: no search by meaning).
        domain: the store domain whose index setup creates (with the vector field, if any).
        allow_eviction: whether setup accepts a server whose maxmemory-policy evicts keys.
        serde: what encodes the parts of values that are not plain JSON (`streamsaver.store.values`).
        cluster: whether the store runs on Redis Cluster (its queries go to every primary).
        writer: the name every put and delete logs as its writer (`streamsaver.store.writers`).
    """

    prefix: str
    partitions: int | None = None
    refresh_on_read: bool = True
    vectors: VectorIndex | None = None
    allow_eviction: bool = False
    serde: SerializerProtocol = field(default_factory=SafeSerializer)
    cluster: bool = False
    writer: str = ""
    keyspace: Keyspace = field(init=False)
    domain: Domain = field(init=False)
    topology: Topology | None = field(default=None, init=False)
    """The cluster's slot map, read by setup (None: one server)."""
    selectivity: SelectivityMemory = field(default_factory=SelectivityMemory, init=False)
    """The pre-filters whose bare KNN came back short (`streamsaver.store.postfilter`)."""
    cache: ItemCache | None = field(default=None, init=False)
    """The store's item cache (``local_cache``; None: off), `streamsaver.store.item_cache`."""

    def __post_init__(self) -> None:
        self.keyspace = Keyspace(self.prefix, self.partitions or DEFAULT_PARTITIONS)
        self.domain = STORE if self.vectors is None else with_vectors(self.vectors.attrs, self.vectors.text)

    @property
    def index(self) -> str:
        """The items index."""
        return self.keyspace.index(VIEW)

    @property
    def targets(self) -> tuple[IndexTarget, ...]:
        """Where the items index lives: one server, or one index per primary of a cluster."""
        return index_targets(self.keyspace, VIEW, self.topology)

    def events(self, ops: Sequence[Op], vectors: Vectors) -> dict[str, list[Event]]:
        """The events of a batch's writes (with their `vectors`), by store partition (log id),
        in batch order; for several writes of one item only the last counts, as in LangGraph's
        stores. Values are `encoded` (their parts that are not JSON through the serde). Each
        names `writer` and the LangGraph run its op carries (`streamsaver.store.writers`).

        Raises:
            InvalidInputError: a value with a part the serde cannot encode.
        """
        last = {(tuple(op.namespace), op.key): (n, op) for n, op in enumerate(ops) if isinstance(op, PutOp)}
        at = _now_micros()
        by_log: dict[str, list[Event]] = {}
        for (namespace, key), (n, op) in last.items():
            log_id = self.keyspace.store_partition(namespace[0])
            event: Event
            if op.value is None:
                event = ItemDeleted(log_id, namespace, key, at, self.writer, run_of(op))
            else:
                ttl_ms = max(1, round(op.ttl * 60_000)) if op.ttl else 0
                found = tuple(vectors.get(n, ()))
                model = self.vectors.model if found and self.vectors is not None else ""
                paths = tuple(op.index) if found and isinstance(op.index, list) else None
                value = encoded(op.value, self.serde)
                event = ItemPut(log_id, namespace, key, value, at, ttl_ms, found, model, paths, 0, self.writer,
                                run_of(op))
            by_log.setdefault(log_id, []).append(event)
        return by_log

    def ranged_on_cluster(self, ops: Sequence[Op], queries: Mapping[int, bytes]) -> dict[
            int, tuple[bytes | None, str | None]]:
        """The searches among `ops` with range conditions on a cluster, each with its query
        vector and full-text clause (None: none), which `streamsaver.store.cluster_ranges` and
        `streamsaver.store.cluster_search` run.

        Raises:
            InvalidInputError: ``hybrid=True`` on a store without text fields.
        """
        text = self.vectors.text if self.vectors is not None else ()
        ranged: dict[int, tuple[bytes | None, str | None]] = {}
        for n, op in enumerate(ops):
            if self.topology is None or not isinstance(op, SearchOp) or not query_terms(op)[1]:
                continue
            clause = text_query(text, op.query or "") if n in queries and wants_text(op, text) else None
            ranged[n] = (queries.get(n), clause)
        return ranged

    def knn_searches(self, ops: Sequence[Op], queries: Mapping[int, bytes], skip: Container[int] = ()) -> dict[
            int, KnnSearch]:
        """The searches by meaning among `ops` (but those in `skip`): those with a query vector
        in `queries` (by op position), each hybrid when it ranks by text too
        (`streamsaver.store.hybrid.wants_text`).

        Raises:
            InvalidInputError: ``hybrid=True`` on a store without text fields.
        """
        text = self.vectors.text if self.vectors is not None else ()
        searches: dict[int, KnnSearch] = {}
        for n, op in enumerate(ops):
            if isinstance(op, SearchOp) and n in queries and n not in skip:
                clause = text_query(text, op.query or "") if wants_text(op, text) else None
                search = KnnSearch(self.index, op, queries[n], clause, self.serde, fill=self.topology is None)
                searches[n] = replace(search, postfilter=self._candidate_filter(op))
        return searches

    def _candidate_filter(self, op: SearchOp) -> Command | None:
        """The clauses of a bare KNN whose candidates `op`'s filter checks, when that plan is
        tried first (`streamsaver.store.postfilter`): on a FLAT index, a pre-filter not known to
        be selective, and on a cluster one that loads nothing. (On HNSW, RediSearch's filtered
        KNN under a pre-filter most items pass walks the graph in batches: cheaper there than a
        bare KNN of ten times the candidates, measured in `benchmarks/store_knn_plans.py`.)"""
        flat = self.vectors is not None and self.vectors.attrs.get("algorithm") == "flat"
        clauses = candidate_filter(op) if flat and query_terms(op)[0] != "*" else None
        if clauses is None or (self.topology is not None and "LOAD" in clauses):
            return None
        return clauses if self.selectivity.try_bare(shape(op)) else None

    def learn(self, knn: Mapping[int, KnnSearch], rounds: Mapping[int, Sequence[Sequence[Any]]]) -> None:
        """Remember the search shapes whose bare KNN handed over to the pre-filtered plan, and
        forget those whose bare KNN filled its page."""
        for n, search in knn.items():
            if search.handed_over(rounds[n]):
                self.selectivity.selective(shape(search.op))
            elif search.postfilter is not None:
                self.selectivity.filled(shape(search.op))

    def reads(self, ops: Sequence[Op], knn: Mapping[int, KnnSearch], skip: Container[int] = ()) -> list[
            list[Command]]:
        """The read commands of each op, in op order (none for a write or an op in `skip`; a
        search by meaning in `knn`, its first round trip's)."""
        reads: list[list[Command]] = []
        for n, op in enumerate(ops):
            if n in skip:
                reads.append([])
            elif isinstance(op, GetOp):
                reads.append([self._get(op)])
            elif n in knn:
                reads.append(knn[n].first())
            elif isinstance(op, SearchOp):
                reads.append([search_request(self.index, op)])
            elif isinstance(op, ListNamespacesOp):
                reads.append(list_calls(self.keyspace, op))
            else:
                reads.append([])
        return reads

    def requests(self, ops: Sequence[Op], vectors: Vectors, reads: Sequence[Sequence[Command]]) -> list[Step]:
        """One round trip for the whole batch: one atomic append per partition written (writes
        first, so the batch's reads see them; a partition's lone put as ``store_put.lua``,
        `streamsaver.store.put`), then the `reads` (each query on the items index
        on every primary of a cluster, `streamsaver.store.fanout`)."""
        by_log = self.events(ops, vectors)
        steps: list[Step] = [
            put_call(self.keyspace, events[0]) if len(events) == 1 and type(events[0]) is ItemPut
            else append_batch_call(STORE, events, self.keyspace, (VIEW,)) for events in by_log.values()
        ]
        return steps + self.fan([command for commands in reads for command in commands])

    def _fanned(self, command: Command) -> list[Step]:
        return fanned(command, self.index, self.targets) if command[0] in _QUERIES else [command]

    def fan(self, commands: Sequence[Command]) -> list[Step]:
        """The steps of `commands`: queries on the items index sent to every index of it."""
        return [step for command in commands for step in self._fanned(command)]

    def gather(self, commands: Sequence[Command], replies: Sequence[Any]) -> list[Any]:
        """The reply of each of `commands` from the replies to their `fan` steps."""
        answers = iter(replies)
        return [merged(command, [next(answers) for _ in self._fanned(command)], self.targets)
                if command[0] in _QUERIES else next(answers) for command in commands]

    def load_scripts(self) -> list[Step]:
        """What a call sends on ``NOSCRIPT``: the store's scripts (on every primary of a cluster)."""
        return setup.load_scripts(STORE.setup_scripts, self.topology)

    def item_key(self, stem: str) -> str:
        """The document key of the item whose stem (escaped labels, ':', escaped key) is `stem`."""
        first = unescape(stem.split(":", 1)[0].split(".", 1)[0])
        return self.keyspace.store(self.keyspace.store_partition(first)).item(stem)

    def document_key(self, namespace: tuple[str, ...], key: str) -> str:
        """The document key of the item `key` in `namespace`."""
        return self.keyspace.store(self.keyspace.store_partition(namespace[0])).item(item_stem(namespace, key))

    def _get(self, op: GetOp) -> list[str | bytes | int]:
        refresh = "1" if op.refresh_ttl else "0"  # BaseStore resolved it from refresh_on_read
        # With a cache, the PTTL too: the deadline a held document is served until.
        # On a cluster, the id of the primary that ran it too (`ItemCache.offer`).
        argv = [refresh] if self.cache is None else [refresh, "1", "1"] if self.cache.asks_node else [refresh, "1"]
        return STORE_GET.evalsha_args([self.document_key(tuple(op.namespace), op.key)], argv)

    def replies_by_op(self, ops: Sequence[Op], replies: Sequence[Any], reads: Sequence[Sequence[Command]]) -> list[
            list[Any]]:
        """The replies to `requests`, merged per read command and grouped by op, in op order."""
        writes = len({self.keyspace.store_partition(op.namespace[0]) for op in ops if isinstance(op, PutOp)})
        answers = iter(self.gather([command for commands in reads for command in commands], replies[writes:]))
        return [[next(answers) for _ in commands] for commands in reads]

    def results(
        self, ops: Sequence[Op], replies: Sequence[list[Any]], knn: Mapping[int, KnnSearch],
        rounds: Mapping[int, Sequence[Sequence[Any]]], done: Mapping[int, Result],
    ) -> list[Result]:
        """The result of each op, in op order, from its replies (`replies_by_op`); a search by
        meaning's from the `rounds` of replies to it (see `KnnSearch.follow_up`); those `done`
        already, as they are."""
        results: list[Result] = []
        for n, op in enumerate(ops):
            if n in done:
                results.append(done[n])
            elif isinstance(op, GetOp):
                results.append(item_of(replies[n][0][0], self.serde))
            elif n in knn and self.vectors is not None:
                results.append(knn[n].page(rounds[n], self.vectors.score))
            elif isinstance(op, SearchOp):
                results.append(search_items(replies[n][0], None, self.serde))
            elif isinstance(op, ListNamespacesOp):
                results.append(namespaces_of(replies[n], op))
            else:
                results.append(None)
        return results
