"""A quick side-by-side of store put, get and filtered search: StreamStore, InMemoryStore and
langgraph-checkpoint-redis's RedisStore on one embedded Redis (medians in microseconds).

    python -m benchmarks.store_quick [--n 2000]

Not the issue-19 benchmark (10,000 and 100,000 items, vector search, recall, bytes per item):
a first look, run on whatever machine runs it.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

import redis
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from streamsaver import StreamStore
from streamsaver.server.embedded import EmbeddedRedis


def _median_us(calls: list[Callable[[], Any]]) -> float:
    times = []
    for call in calls:
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def measure(store: BaseStore, n: int) -> dict[str, float]:
    """Medians of put, get and a filtered search over `n` items."""
    value = lambda i: {"text": f"fact {i}", "kind": ("a", "b", "c")[i % 3], "n": i}  # noqa: E731
    put = _median_us([lambda i=i: store.put(("user", str(i % 50)), f"k{i}", value(i)) for i in range(n)])
    get = _median_us([lambda i=i: store.get(("user", str(i % 50)), f"k{i}") for i in range(n)])
    search = _median_us([lambda: store.search(("user",), filter={"kind": "b"}, limit=10) for _ in range(200)])
    return {"put": put, "get": get, "search kind=b": search}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=2000)
    args = parser.parse_args()
    with EmbeddedRedis() as server:
        client = redis.Redis.from_url(server.url)
        rows = {"InMemoryStore": measure(InMemoryStore(), args.n)}
        stream = StreamStore(client, prefix=f"b{uuid.uuid4().hex[:8]}")
        stream.setup()
        rows["StreamStore"] = measure(stream, args.n)
        try:
            from langgraph.store.redis import RedisStore
        except ImportError:
            RedisStore = None
        if RedisStore is not None:
            with RedisStore.from_conn_string(server.url) as peer:
                peer.setup()
                rows["RedisStore (peer)"] = measure(peer, args.n)
        floor = _median_us([lambda: client.execute_command("JSON.GET", "nothing") for _ in range(args.n)])
    print(f"{'store':<20}" + "".join(f"{op:>16}" for op in next(iter(rows.values()))))
    for name, row in rows.items():
        print(f"{name:<20}" + "".join(f"{us:>14.0f}us" for us in row.values()))
    print(f"one bare JSON.GET round trip: {floor:.0f}us")


if __name__ == "__main__":
    main()
