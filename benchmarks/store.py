"""Issue 19's store benchmark: StreamStore side by side with InMemoryStore and
langgraph-checkpoint-redis's RedisStore (the ``bench`` extra) on one embedded Redis, every store
holding the same items with the same deterministic embedding (`benchmarks.store_data`).

    python -m benchmarks.store [--n 10000] [--dims 64] [--samples 400] [--queries 100] [--out F] [--ops-only]

Tables (Markdown, to stdout and `--out`):

1. put (an upsert of an existing item), get, a filtered search (``filter={"bucket": b}``,
   10% of the items, limit 10), a vector search (``query=``, limit 10) and ``list_namespaces``
   (under ``("users",)``, 100 namespaces): medians in microseconds, each sample one call on
   every store back to back (order shuffled each sample), so load on the machine hits every store alike,
   each result checked (a page of 10 of the right bucket, 100 namespaces); the ratio to
   StreamStore.
2. StreamStore's get against one bare ``JSON.GET`` round trip of the same item (the floor of a
   networked store), measured interleaved.
3. recall@10 of vector search against exact brute force (numpy), FLAT and HNSW, over the whole
   store (no namespace prefix: a bare KNN, where HNSW is approximate) and with the 10% filter
   (RediSearch then picks brute force over the filtered items or HNSW in batches, by the
   filter's size), for every store; for HNSW the recall at growing ``EF_RUNTIME`` (sent in the
   query) and the smallest giving 0.99.
   The same for a store with ``text_fields`` (hybrid retrieval): against the vectors' exact
   neighbours, hybrid and ``hybrid=False`` on the same items.
   With ``--plans``, the ops and the recall are also measured on a StreamStore that always takes
   the pre-filtered KNN (the plan before `streamsaver.store.postfilter`), interleaved with the
   others: the before/after of the bare KNN whose candidates the filter checks.
4. bytes per item: the server's ``used_memory`` grown by each Redis store's fill, over the items
   (StreamStore's includes its log and feed: the truth the views are rebuilt from).

With ``--local-cache N``, a StreamStore with ``local_cache=N`` reading the same items as
StreamStore joins the ops table (its gets there pick random items, so they are mostly misses:
the cost of a miss), and a reread table follows: gets of a working set of ``--working-set``
items already read once (a memory read again and again: profiles, preferences), interleaved
over every store and a bare ``JSON.GET``, with the cache's hit ratio. A hit is a lookup in this
process's memory, no round trip: that is what it measures, not a faster server.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import redis
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

from benchmarks import store_data as data
from streamsaver import StreamStore
from streamsaver.server.embedded import EmbeddedRedis
from streamsaver.store.knn import KnnSearch
from streamsaver.store.postfilter import SelectivityMemory
from streamsaver.store.queries import search_items

OPS = ("put", "get", "filtered search", "vector search", "list_namespaces")
EF_RUNTIMES = (10, 20, 40, 80, 160, 320, 640)
EXACT_SKIPPED_FROM = 20_000
"""Past this many items InMemoryStore's recall is not measured: it is brute force (exact), and
each of its searches takes seconds."""


class AlwaysSelective(SelectivityMemory):
    """A memory that knows every search shape as selective: the store always takes the
    pre-filtered KNN (the plan before the bare KNN was tried first)."""

    def try_bare(self, terms: Any) -> bool:
        return False


def index_config(embeddings: data.ClusteredEmbeddings, vector_type: str = "flat", text: bool = False) -> dict[
        str, Any]:
    config = {"dims": embeddings.dims, "embed": embeddings, "fields": ["text"], "distance_type": "cosine",
              "ann_index_config": {"vector_type": vector_type}}
    return config | {"text_fields": ["text"]} if text else config


def fill(store: BaseStore, n: int, chunk: int = 100) -> None:
    """Put items 0 .. n-1 into `store`, `chunk` at a time through ``batch``."""
    ops = [PutOp(ns, k, v) for ns, k, v in data.items(n)]
    for at in range(0, n, chunk):
        store.batch(ops[at : at + chunk])


def _calls(store: BaseStore, n: int, rng: random.Random) -> dict[str, Callable[[], Any]]:
    """One fresh call of each op (random item, bucket or query), with its check."""
    i, b, j = rng.randrange(n), rng.randrange(data.BUCKETS), rng.randrange(10_000)

    def filtered() -> None:
        found = store.search(("users",), filter={"bucket": b}, limit=10)
        assert len(found) == 10 and all(item.value["bucket"] == b for item in found), "short or wrong page"

    def listed() -> None:
        assert len(store.list_namespaces(prefix=("users",), limit=1000)) == data.NAMESPACES, "namespaces missing"

    return {
        "put": lambda: store.put(data.namespace(i), data.key(i), data.value(i)),
        "get": lambda: store.get(data.namespace(i), data.key(i)),
        "filtered search": filtered,
        "vector search": lambda: store.search(("users",), query=data.query(j), limit=10),
        "list_namespaces": listed,
    }


def _timed(call: Callable[[], Any]) -> tuple[float, bool]:
    """The microseconds `call` took, and whether its result passed its check."""
    start = time.perf_counter()
    try:
        call()
    except AssertionError:
        return (time.perf_counter() - start) * 1e6, False
    return (time.perf_counter() - start) * 1e6, True


def measure_ops(stores: dict[str, BaseStore], n: int, samples: int, rounds: int = 5) -> dict[str, dict[str, Any]]:
    """Median microseconds of each op per store, and whether every result passed its check, in
    `rounds` rounds; each sample of an op is one call on every store, back to back, in an order
    shuffled from sample to sample, so a burst of load on the machine hits every store alike
    (until 2026-11-27 a round ran all of one store's samples, then the next store's: on a shared
    machine a burst could fall on one store's samples only, and the put ratio swung 0.8x-5.8x).
    Shuffled, not rotated: in a rotation each store always follows the same one, and the store
    after RedisStore paid for it (its garbage, the server's work it leaves behind): two
    StreamStores running the same put measured ~5% apart, the one after the peer slower."""
    times: dict[str, dict[str, list[float]]] = {name: {op: [] for op in OPS} for name in stores}
    failed: dict[str, set[str]] = {name: set() for name in stores}
    rng = random.Random(7)
    order = random.Random(13)
    names = list(stores)
    for _ in range(rounds):
        for op in OPS:
            reps = samples // rounds if op in ("put", "get") else max(samples // (rounds * 4), 5)
            for _ in range(reps):
                order.shuffle(names)
                for name in names:
                    took, ok = _timed(_calls(stores[name], n, rng)[op])
                    times[name][op].append(took)
                    if not ok:
                        failed[name].add(op)
    return {name: {op: (statistics.median(times[name][op]), op not in failed[name]) for op in OPS} for name in stores}


def get_floor(client: redis.Redis, store: StreamStore, n: int, samples: int) -> tuple[float, float]:
    """Medians of StreamStore's get and of a bare ``JSON.GET`` of the same item, interleaved."""
    rng = random.Random(11)
    gets, bare = [], []
    for _ in range(samples):
        i = rng.randrange(n)
        namespace, key = data.namespace(i), data.key(i)
        doc = store.core.keyspace.store(store.core.keyspace.store_partition(namespace[0])).item(
            f"{'.'.join(namespace)}:{key}")
        gets.append(_timed(lambda ns=namespace, k=key: store.get(ns, k))[0])
        bare.append(_timed(lambda d=doc: client.execute_command("JSON.GET", d))[0])
    return statistics.median(gets), statistics.median(bare)


def reread(stores: dict[str, BaseStore], client: redis.Redis, cached: StreamStore, n: int, samples: int,
           working_set: int) -> str:
    """The reread table: median get of items of a working set already read once, per store and
    for a bare ``JSON.GET``, interleaved (the order shuffled each sample, see `measure_ops`); the cache's hit ratio."""
    cache = cached.core.cache
    assert cache is not None
    rng = random.Random(13)
    chosen = rng.sample(range(n), working_set)
    for i in chosen:
        cached.get(data.namespace(i), data.key(i))
    hits, lookups = cache.hits, cache.hits + cache.misses
    names = [*stores, "bare JSON.GET"]
    times: dict[str, list[float]] = {name: [] for name in names}
    order = random.Random(17)
    for _ in range(samples):
        i = rng.choice(chosen)
        namespace, key = data.namespace(i), data.key(i)
        doc = cached.core.document_key(namespace, key)
        order.shuffle(names)
        for name in names:
            if name == "bare JSON.GET":
                times[name].append(_timed(lambda d=doc: client.execute_command("JSON.GET", d))[0])
            else:
                times[name].append(_timed(lambda g=stores[name].get, ns=namespace, k=key: g(ns, k))[0])
    ratio = (cache.hits - hits) / max(1, cache.hits + cache.misses - lookups)
    medians = {name: statistics.median(times[name]) for name in names}
    peer = medians.get("RedisStore (peer)")
    rows = [[name, f"{us:,.1f} µs", f"{peer / us:.1f}x" if peer else "-"] for name, us in medians.items()]
    return (f"## Rereads: gets of {working_set} items read before (median)\n\n"
            + _table(["store", "get", "RedisStore's get / this"], rows)
            + f"\n\nlocal_cache hit ratio over these gets: {ratio:.3f}.\n")


def recall(store: BaseStore, embeddings: data.ClusteredEmbeddings, vectors: Any, queries: int,
           filtered: bool, **options: Any) -> str:
    """Mean recall@10 of `store`'s vector search against exact brute force, over the whole store
    (no namespace prefix; a store that fails such a search is asked under ``("users",)``, which
    holds every item, and the figure is marked *)."""
    hits, mark = 0, ""
    for j in range(queries):
        bucket = j % data.BUCKETS if filtered else None
        want = data.exact_top(embeddings, vectors, data.query(j), 10, bucket)
        search = {"query": data.query(j), "limit": 10, "filter": {"bucket": bucket} if filtered else None, **options}
        try:
            found = store.search((), **search)  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001 - the peer's search fails on an empty prefix
            found, mark = store.search(("users",), **search), "*"  # type: ignore[arg-type]
        hits += len(want & {item.key for item in found})
    return f"{hits / (10 * queries):.3f}{mark}"


def hnsw_sweep(client: redis.Redis, store: StreamStore, embeddings: data.ClusteredEmbeddings, vectors: Any,
               queries: int, filtered: bool) -> dict[int, float]:
    """Recall@10 of the HNSW store at each ``EF_RUNTIME`` (sent in the query itself)."""
    from langgraph.store.base import SearchOp

    assert store.core.vectors is not None
    out: dict[int, float] = {}
    for ef in EF_RUNTIMES:
        hits = 0
        for j in range(queries):
            bucket = j % data.BUCKETS if filtered else None
            op = SearchOp((), {"bucket": bucket} if filtered else None, 10, 0, data.query(j))
            blob = store.core.vectors.blob(embeddings.embed_query(data.query(j)))
            request = KnnSearch(store.core.index, op, blob).first()[-1]
            request = [f"{a[:-len(' AS dist]')]} EF_RUNTIME {ef} AS dist]" if isinstance(a, str) and
                       a.endswith(" AS dist]") else a for a in request]
            found = search_items(client.execute_command(*request))
            hits += len(data.exact_top(embeddings, vectors, data.query(j), 10, bucket) & {i.key for i in found})
        out[ef] = hits / (10 * queries)
    return out


def _table(header: Iterable[str], rows: Iterable[Iterable[Any]]) -> str:
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _cell(measured: tuple[float, bool], base: tuple[float, bool]) -> str:
    us, ok = measured
    return f"{us:,.0f} µs ({us / base[0]:.2f}x)" + ("" if ok else " **wrong results**")


def _used(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def _filled(client: redis.Redis, make: Callable[[], BaseStore], n: int) -> tuple[BaseStore, float]:
    before = _used(client)
    store = make()
    fill(store, n)
    return store, (_used(client) - before) / n


def _ops_tables(client: redis.Redis, stores: dict[str, BaseStore], n: int, samples: int) -> str:
    """Tables 1 and 2 (see the module docstring)."""
    medians = measure_ops(stores, n, samples)
    base = medians["StreamStore"]
    out = ["## Ops (median; ratio to StreamStore)\n"]
    out.append(_table(["store", *OPS], [[name, *(_cell(row[op], base[op]) for op in OPS)]
                                        for name, row in medians.items()]))
    get, bare = get_floor(client, stores["StreamStore"], n, samples)  # type: ignore[arg-type]
    out.append(f"\n\nStreamStore get {get:,.0f} µs against one bare JSON.GET of the same item {bare:,.0f} µs: "
               f"{get / bare:.2f}x.\n")
    return "\n".join(out)


def run(n: int, dims: int, samples: int, queries: int, plans: bool = False, ops_only: bool = False,
        local_cache: int = 0, working_set: int = 100) -> str:
    """The four tables, as Markdown (`ops_only`: the first two, without the HNSW and hybrid stores)."""
    embeddings = data.ClusteredEmbeddings(dims)
    vectors = data.matrix(embeddings, n)
    out: list[str] = [f"# Store benchmark: {n:,} items, {dims} dims, {samples} samples per op\n"]
    with EmbeddedRedis() as server:
        client = redis.Redis.from_url(server.url, socket_timeout=600)  # an HNSW fill's batch takes long

        def ours(kind: str, text: bool = False) -> StreamStore:
            config = index_config(embeddings, kind, text)
            store = StreamStore(client, prefix=f"b{uuid.uuid4().hex[:8]}", index=config)  # type: ignore[arg-type]
            store.setup()
            return store

        stores: dict[str, BaseStore] = {}
        sizes: dict[str, float] = {}
        stores["StreamStore"], sizes["StreamStore (FLAT)"] = _filled(client, lambda: ours("flat"), n)
        if plans:  # the same items, read through the pre-filtered plan only
            prefiltered = StreamStore(client, prefix=stores["StreamStore"].core.prefix,  # type: ignore[attr-defined]
                                      index=index_config(embeddings, "flat"))  # type: ignore[arg-type]
            prefiltered.setup()
            prefiltered.core.selectivity = AlwaysSelective()
            stores["StreamStore (pre-filtered KNN)"] = prefiltered
        if local_cache:  # the same items, read through a local cache
            cached = StreamStore(client, prefix=stores["StreamStore"].core.prefix,  # type: ignore[attr-defined]
                                 index=index_config(embeddings, "flat"), local_cache=local_cache)  # type: ignore[arg-type]
            assert cached.core.cache is not None and cached.core.cache.wait_for(lambda: cached.core.cache.live, 10)
            stores[f"StreamStore (local_cache={local_cache:,})"] = cached
        stores["InMemoryStore"] = InMemoryStore(index=index_config(embeddings))  # type: ignore[arg-type]
        fill(stores["InMemoryStore"], n)
        peer = _peer(client, embeddings)
        if peer is not None:
            stores["RedisStore (peer)"], sizes["RedisStore (peer)"] = _filled(client, lambda: peer, n)
        if ops_only:
            out.append(_ops_tables(client, stores, n, samples))
            if local_cache:
                out.append(reread(stores, client, cached, n, samples, working_set))
                cached.close()
            return "\n".join(out) + "\n"
        hnsw, sizes["StreamStore (HNSW)"] = _filled(client, lambda: ours("hnsw"), n)
        recall_stores: dict[str, BaseStore] = {"StreamStore (HNSW, default ef_runtime)": hnsw}
        if plans:
            hnsw_prefiltered = StreamStore(client, prefix=hnsw.core.prefix, index=index_config(embeddings, "hnsw"))  # type: ignore[arg-type]
            hnsw_prefiltered.setup()
            hnsw_prefiltered.core.selectivity = AlwaysSelective()
            recall_stores["StreamStore (HNSW, pre-filtered KNN)"] = hnsw_prefiltered
        hybrid, sizes["StreamStore (FLAT, text_fields)"] = _filled(client, lambda: ours("flat", True), n)
        out.append(_ops_tables(client, stores, n, samples))
        if local_cache:
            out.append(reread(stores, client, cached, n, samples, working_set))
        out.append("## Recall@10 against exact brute force\n")
        rows = []
        for name, store in {**stores, **recall_stores}.items():
            if local_cache and store is cached:  # its searches are StreamStore's own
                continue
            label = f"{name} (FLAT)" if name == "StreamStore" else name
            if isinstance(store, InMemoryStore) and n > EXACT_SKIPPED_FROM:
                rows.append([label, "exact by construction (not measured)", "exact by construction (not measured)"])
                continue
            rows.append([label, *(recall(store, embeddings, vectors, queries, f) for f in (False, True))])
        for label, switch in (("hybrid: BM25 + vectors, RRF", True), ("hybrid=False: vectors alone", False)):
            rows.append([f"StreamStore (FLAT, text_fields) {label}",
                         *(recall(hybrid, embeddings, vectors, queries, f, hybrid=switch) for f in (False, True))])
        out.append(_table(["store", "no filter", "filter keeping 10%"], rows))
        out.append("\n\n(* the store fails a search without a namespace prefix: asked under (\"users\",))")
        for filtered in (False, True):
            sweep = hnsw_sweep(client, hnsw, embeddings, vectors, queries, filtered)  # type: ignore[arg-type]
            enough = next((ef for ef, r in sweep.items() if r >= 0.99), None)
            cells = ", ".join(f"{ef}: {r:.3f}" for ef, r in sweep.items())
            out.append(f"\n\nHNSW {'with' if filtered else 'without'} the filter, recall by EF_RUNTIME: {cells}; "
                       f"0.99 from EF_RUNTIME {enough}.")
        out.append("\n\n## Bytes per item (server used_memory)\n")
        out.append(_table(["store", "bytes per item"], [[name, f"{b:,.0f}"] for name, b in sizes.items()]))
        if local_cache:
            cached.close()
    return "\n".join(out) + "\n"


def _peer(client: redis.Redis, embeddings: data.ClusteredEmbeddings) -> BaseStore | None:
    try:
        from langgraph.store.redis import RedisStore
    except ImportError:
        return None
    peer = RedisStore(client, index=index_config(embeddings))  # type: ignore[arg-type]
    peer.setup()
    return peer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="items per store (default 10,000)")
    parser.add_argument("--dims", type=int, default=64, help="embedding dimensions (default 64)")
    parser.add_argument("--samples", type=int, default=400, help="put and get samples per store (default 400)")
    parser.add_argument("--queries", type=int, default=100, help="queries per recall figure (default 100)")
    parser.add_argument("--out", help="also write the report to this file")
    parser.add_argument("--plans", action="store_true",
                        help="also measure a StreamStore that always takes the pre-filtered KNN (before/after)")
    parser.add_argument("--local-cache", type=int, default=0, metavar="N",
                        help="also measure a StreamStore with local_cache=N, and the reread table")
    parser.add_argument("--working-set", type=int, default=100,
                        help="items the reread table reads again and again (default 100)")
    parser.add_argument("--ops-only", action="store_true",
                        help="only tables 1 and 2 (no HNSW or hybrid store, recall or bytes per item): for A/B runs")
    args = parser.parse_args()
    report = run(args.n, args.dims, args.samples, args.queries, args.plans, args.ops_only, args.local_cache,
                 args.working_set)
    print(report)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(report)


if __name__ == "__main__":
    main()
