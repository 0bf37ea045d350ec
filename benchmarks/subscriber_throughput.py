"""Subscriber throughput and end-to-end delay (a benchmark, not a test).

    python -m benchmarks.subscriber_throughput [--events 40000] [--rate 1000] [--seconds 10]

On an embedded Redis (AOF on, as the tests run it), or ``--url``:

1. **Throughput.** ``--events`` checkpoints are appended through the ordinary append path
   (pipelined; small LangGraph-like steps with LangGraph's metadata keys, so pointers carry real
   metadata; the writer projects only the shallow view). The subscriber processes start on a group created
   at the end of the feeds and
   idle; once they are all in the group's roster the group is moved back to the feeds' start
   (``XGROUP SETID 0``) and the clock runs until every entry is acknowledged (lag and pending 0).
   Done with one subscriber process and with four; the handler only counts (it never asks for
   metadata or payload, so no log entry is read).
2. **Delay.** One subscriber process follows a group while a writer ``put``s at ``--rate`` per
   second for ``--seconds`` (one append call each, as ``put`` sends); each put stamps its
   metadata with the wall-clock time, the handler records now minus that stamp (the subscriber
   reads checkpoints' metadata with each batch: ``load_metadata``). Prints p50, p99 and max.

``--profile`` profiles one single-subscriber run (in-process, ``run_burst``) and prints where
the client's time goes.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import multiprocessing
import pstats
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis
from langgraph.checkpoint.base import empty_checkpoint

from streamsaver import StreamSaver
from streamsaver.feeds.subscriber import Subscriber
from streamsaver.log.keys import Keyspace
from streamsaver.ops.inspection import group_health
from streamsaver.server.embedded import EmbeddedRedis

PREFIX = "bench"


class Writer:
    """Threads that each save a LangGraph-like step: a small checkpoint, metadata as LangGraph
    writes it (source, step, parents, run id). Values stay small: this measures the feed, not
    the serialization of a growing state."""

    def __init__(self, saver: StreamSaver, threads: int, label: str) -> None:
        self.saver, self.threads, self.label = saver, threads, label
        self.parents: dict[str, str] = {}
        self.steps: dict[str, int] = {}

    def put_request(self, n: int, extra: dict[str, Any] | None = None) -> tuple[Any, Any]:
        thread = f"{self.label}-{n % self.threads}"
        step = self.steps.get(thread, -1) + 1
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"messages": [f"message {step}"], "step": step}
        checkpoint["channel_versions"] = {"messages": step + 1, "step": step + 1}
        config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": "",
                                        **({"checkpoint_id": self.parents[thread]} if thread in self.parents else {})}}
        metadata: Any = {"source": "loop", "step": step, "parents": {}, "run_id": f"run-{thread}", **(extra or {})}
        self.parents[thread], self.steps[thread] = checkpoint["id"], step
        versions = {"messages": step + 1, "step": step + 1}
        return self.saver.core.put_request(config, checkpoint, metadata, versions)[0], config


def build_feed(client: redis.Redis, events: int, threads: int = 500) -> None:
    """Append `events` checkpoints over `threads` threads, 500 per round trip."""
    saver = StreamSaver(client, prefix=PREFIX, projections=("shallow",), view="shallow")
    saver.setup()
    writer = Writer(saver, threads, "backlog")
    for start in range(0, events, 500):
        pipe = client.pipeline(transaction=False)
        for n in range(start, min(start + 500, events)):
            pipe.execute_command(*writer.put_request(n)[0])
        pipe.execute()


def consume(url: str, group: str, name: str, lease_ms: int, delays: bool) -> None:
    """A subscriber process: counts events (or records their delay) until SIGTERM."""
    import signal

    client = redis.Redis.from_url(url)
    recorded: list[float] = []

    def handle(event: Any) -> None:
        if delays and event.metadata and "sent" in event.metadata:
            recorded.append(time.time() - event.metadata["sent"])

    sub = Subscriber(client, group, handle, prefix=PREFIX, name=name, lease_ms=lease_ms, batch=200, start="$",
                     load_metadata=delays)
    signal.signal(signal.SIGTERM, lambda *_: sub.stop())
    sub.run()
    if delays:
        client.rpush(f"{PREFIX}:bench:delays", *[str(d) for d in recorded] or ["nan"])


def start_consumers(url: str, group: str, n: int, delays: bool = False) -> list[multiprocessing.Process]:
    procs = [multiprocessing.Process(target=consume, args=(url, group, f"{group}-{i}", 3000, delays))
             for i in range(n)]
    for proc in procs:
        proc.start()
    return procs


def wait(condition: Any, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("benchmark condition not reached")
        time.sleep(0.01)


def stop(procs: list[multiprocessing.Process]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.join(10)


def throughput(client: redis.Redis, url: str, consumers: int, events: int) -> float:
    """Events per second `consumers` processes handle from a backlog of `events`."""
    group = f"tp{consumers}"
    procs = start_consumers(url, group, consumers)
    try:
        return _throughput(client, group, consumers, events)
    finally:
        stop(procs)


def _throughput(client: redis.Redis, group: str, consumers: int, events: int) -> float:
    keyspace = Keyspace(PREFIX, int(client.hget(Keyspace(PREFIX).meta, "partitions") or 0))
    roster = keyspace.subscribers(group)
    wait(lambda: client.zcard(roster) == consumers and all(
        h.owner for h in group_health(client, PREFIX, group)))
    start = time.perf_counter()
    for p in range(keyspace.partitions):
        client.xgroup_setid(keyspace.feed(p), group, "0")
    wait(lambda: all(h.pending == 0 and h.lag == 0 for h in group_health(client, PREFIX, group)))
    return events / (time.perf_counter() - start)


def delay(client: redis.Redis, url: str, rate: int, seconds: float) -> list[float]:
    """Put-to-handler delays (seconds) with one subscriber while putting `rate` per second."""
    procs = start_consumers(url, "delay", 1, delays=True)
    try:
        return _delay(client, rate, seconds, procs)
    finally:
        stop(procs)


def _delay(client: redis.Redis, rate: int, seconds: float, procs: list[multiprocessing.Process]) -> list[float]:
    keyspace = Keyspace(PREFIX, int(client.hget(Keyspace(PREFIX).meta, "partitions") or 0))
    wait(lambda: all(h.owner for h in group_health(client, PREFIX, "delay")) and len(group_health(
        client, PREFIX, "delay")) == keyspace.partitions)
    saver = StreamSaver(client, prefix=PREFIX, projections=("shallow",), view="shallow")
    saver.setup()
    writer = Writer(saver, 50, "live")
    start, total = time.perf_counter(), int(rate * seconds)
    for n in range(total):
        due = start + n / rate
        if (ahead := due - time.perf_counter()) > 0:
            time.sleep(ahead)
        command, _ = writer.put_request(n, {"sent": time.time()})
        client.execute_command(*command)
    achieved = total / (time.perf_counter() - start)
    wait(lambda: all(h.pending == 0 and h.lag == 0 for h in group_health(client, PREFIX, "delay")))
    for proc in procs:
        proc.terminate()
        proc.join(10)
    print(f"  writer achieved {achieved:,.0f} puts/s")
    return sorted(float(x) for x in client.lrange(f"{PREFIX}:bench:delays", 0, -1))


def profile(client: redis.Redis, top: int) -> None:
    sub = Subscriber(client, "profiled", lambda e: None, prefix=PREFIX, batch=200)
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    stats = sub.run_burst()
    profiler.disable()
    print(f"in-process run_burst: {stats.handled / (time.perf_counter() - start):,.0f} events/s under cProfile")
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    print(out.getvalue())


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.subscriber_throughput",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=40_000, help="backlog for throughput (default: %(default)s)")
    parser.add_argument("--rate", type=int, default=1000, help="puts per second for the delay run")
    parser.add_argument("--seconds", type=float, default=10, help="length of the delay run")
    parser.add_argument("--url", help="a Redis 8 server (default: an embedded one)")
    parser.add_argument("--profile", action="store_true", help="also profile one in-process run")
    parser.add_argument("--top", type=int, default=25, help="functions listed by --profile")
    args = parser.parse_args(argv)
    server = None if args.url else EmbeddedRedis().__enter__()
    url = args.url or server.url  # type: ignore[union-attr]
    try:
        client = redis.Redis.from_url(url)
        begin = time.perf_counter()
        build_feed(client, args.events)
        print(f"feed: {args.events:,} checkpoints appended in {time.perf_counter() - begin:.1f} s")
        if args.profile:
            profile(client, args.top)
        for consumers in (1, 4):
            print(f"throughput, {consumers} subscriber process(es): "
                  f"{throughput(client, url, consumers, args.events):,.0f} events/s")
        delays = delay(client, url, args.rate, args.seconds)
        ms = [d * 1000 for d in delays]
        print(f"delay put -> handler at {args.rate}/s for {args.seconds:.0f} s ({len(ms):,} events): "
              f"p50 {statistics.median(ms):.1f} ms, p99 {ms[int(len(ms) * 0.99) - 1]:.1f} ms, max {ms[-1]:.1f} ms")
    finally:
        if server is not None:
            server.__exit__(None, None, None)


if __name__ == "__main__":
    main()
