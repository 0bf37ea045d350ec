"""The server time of a store's search by meaning under each KNN plan, paired per query.

    python -m benchmarks.store_knn_plans [--n 100000] [--queries 60] [--kind flat|hnsw]

One embedded Redis, one StreamStore filled with `benchmarks.store_data`'s items. For each query
and each search shape (a prefix every item has, one user's namespace, a 10% equality filter, the
prefix with a ``$ne``), the search runs once through the store as it is (the bare KNN whose
candidates the filter checks, handing a short page over to the pre-filtered KNN; its memory of
selective shapes as it learns) and once through a store that always takes the pre-filtered KNN,
in alternating order; each run's server time is the sum of ``INFO commandstats``' ``usec`` over
every command after ``CONFIG RESETSTAT`` (so a hand-over's second query counts). Server time is
what load on a shared machine disturbs least. Prints the median per shape and plan, the paired
median ratio, and how many searches handed over.
"""

from __future__ import annotations

import argparse
import random
import statistics
import uuid
from collections.abc import Callable
from typing import Any

import redis

from benchmarks import store_data as data
from benchmarks.store import AlwaysSelective, fill, index_config
from streamsaver import StreamStore
from streamsaver.server.embedded import EmbeddedRedis

SHAPES: dict[str, Callable[[int], dict[str, Any]]] = {
    "prefix every item has": lambda j: {"namespace_prefix": ("users",)},
    "one user's namespace (1%)": lambda j: {"namespace_prefix": ("users", f"u{j % data.NAMESPACES}")},
    "no prefix, 10% equality filter": lambda j: {"namespace_prefix": (), "filter": {"bucket": j % data.BUCKETS}},
    "prefix + $ne (90%)": lambda j: {"namespace_prefix": ("users",), "filter": {"bucket": {"$ne": j % data.BUCKETS}}},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000, help="items (default 100,000)")
    parser.add_argument("--queries", type=int, default=60, help="queries per shape (default 60)")
    parser.add_argument("--kind", default="flat", choices=["flat", "hnsw"], help="the vector index (default flat)")
    args = parser.parse_args()
    embeddings = data.ClusteredEmbeddings(64)
    with EmbeddedRedis() as server:
        client = redis.Redis.from_url(server.url, socket_timeout=600)
        prefix = f"k{uuid.uuid4().hex[:8]}"
        auto = StreamStore(client, prefix=prefix, index=index_config(embeddings, args.kind))  # type: ignore[arg-type]
        auto.setup()
        fill(auto, args.n, chunk=200)
        always = StreamStore(client, prefix=prefix, index=index_config(embeddings, args.kind))  # type: ignore[arg-type]
        always.setup()
        always.core.selectivity = AlwaysSelective()
        rng = random.Random(3)
        print(f"{args.n:,} items, {args.kind.upper()}, {args.queries} queries per shape; server µs per search")
        print("| shape | bare first (median) | pre-filtered (median) | paired ratio | handed over |")
        print("|---|---|---|---|---|")
        for name, shape in SHAPES.items():
            times: dict[str, list[float]] = {"auto": [], "always": []}
            handed = 0
            for _ in range(args.queries):
                j = rng.randrange(10_000)
                search = shape(j)
                for plan in rng.sample(["auto", "always"], 2):
                    store = auto if plan == "auto" else always
                    client.config_resetstat()
                    store.search(search["namespace_prefix"], query=data.query(j), filter=search.get("filter"),
                                 limit=10)
                    stats = client.info("commandstats")
                    search_stats = {k.lower(): v for k, v in stats.items() if k.lower().startswith("cmdstat_ft.")}
                    times[plan].append(sum(int(v["usec"]) for v in search_stats.values()))
                    if plan == "auto":
                        handed += int(search_stats.get("cmdstat_ft.aggregate", {}).get("calls", 0)) > 1
            ratio = statistics.median(a / b for a, b in zip(times["auto"], times["always"], strict=True))
            print(f"| {name} | {statistics.median(times['auto']):,.0f} | {statistics.median(times['always']):,.0f} "
                  f"| {ratio:.2f}x | {handed} of {args.queries} |")


if __name__ == "__main__":
    main()
