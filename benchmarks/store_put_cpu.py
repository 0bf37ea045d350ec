"""CPU per store put, StreamStore against langgraph-checkpoint-redis's RedisStore (the ``bench``
extra), on one embedded Redis: what the put ratio follows on a machine short of CPU.

    python -m benchmarks.store_put_cpu [--n 2000] [--chunk 40] [--rounds 25]

Both stores are filled with the same `--n` items (`benchmarks.store_data`, the benchmark's
64-dim FLAT index); then, `--rounds` times, each store upserts `--chunk` random items in turn
(the order alternating round by round). Per chunk: the client's CPU (this process's
``time.process_time``), the server's (``INFO cpu``: user + system of every thread, the AOF's
included) and the wall clock, each over the chunk's puts. Prints the medians per put and the
ratios peer / StreamStore of CPU (client + server) and of wall clock. Unlike the single calls
``benchmarks.store`` times, a chunk's CPU is little moved by other jobs' load.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
import uuid
from typing import Any

import redis
from langgraph.store.base import BaseStore

from benchmarks import store_data as data
from benchmarks.store import _peer, fill, index_config
from streamsaver import StreamStore
from streamsaver.server.embedded import EmbeddedRedis


def _server_cpu(client: redis.Redis) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def measure(n: int, chunk: int, rounds: int) -> dict[str, dict[str, float]]:
    """Median microseconds per put of each store: client CPU ``c``, server CPU ``s``, wall ``w``."""
    embeddings = data.ClusteredEmbeddings(64)
    with EmbeddedRedis() as server:
        client = redis.Redis.from_url(server.url, socket_timeout=600)
        ours = StreamStore(client, prefix=f"b{uuid.uuid4().hex[:8]}", index=index_config(embeddings))  # type: ignore[arg-type]
        ours.setup()
        peer = _peer(client, embeddings)
        if peer is None:
            raise SystemExit("langgraph-checkpoint-redis is not installed (pip install -e '.[bench]')")
        stores: dict[str, BaseStore] = {"StreamStore": ours, "RedisStore (peer)": peer}
        for store in stores.values():
            fill(store, n)
        rng = random.Random(3)
        samples: dict[str, dict[str, list[float]]] = {name: {"c": [], "s": [], "w": []} for name in stores}
        for r in range(rounds):
            for name in list(stores) if r % 2 == 0 else list(reversed(stores)):
                chosen = [rng.randrange(n) for _ in range(chunk)]
                server0, client0, wall0 = _server_cpu(client), time.process_time(), time.perf_counter()
                for i in chosen:
                    stores[name].put(data.namespace(i), data.key(i), data.value(i))
                wall1, client1, server1 = time.perf_counter(), time.process_time(), _server_cpu(client)
                for kind, took in (("c", client1 - client0), ("s", server1 - server0), ("w", wall1 - wall0)):
                    samples[name][kind].append(took / chunk * 1e6)
        return {name: {kind: statistics.median(values) for kind, values in by.items()} for name, by in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=2000, help="items in each store (default 2000)")
    parser.add_argument("--chunk", type=int, default=40, help="puts per chunk (default 40)")
    parser.add_argument("--rounds", type=int, default=25, help="chunks per store (default 25)")
    args = parser.parse_args()
    found: Any = measure(args.n, args.chunk, args.rounds)
    for name, m in found.items():
        print(f"{name}: client CPU {m['c']:.0f} µs, server CPU {m['s']:.0f} µs, wall {m['w']:.0f} µs per put")
    ours, peer = found["StreamStore"], found["RedisStore (peer)"]
    print(f"peer / StreamStore: CPU {(peer['c'] + peer['s']) / (ours['c'] + ours['s']):.2f}x, "
          f"wall {peer['w'] / ours['w']:.2f}x")


if __name__ == "__main__":
    main()
