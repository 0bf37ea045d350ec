"""What a put's zstd frames cost inside the put: level 3 against the sized tables (`_CLASSES`).

A frame is compressed between a put's serde and its send, on caches the serde has just filled:
timed alone in a loop, the same frames cost a third of what they cost there. So each variant
runs the micro benchmark's conversation (`benchmarks.workload.Conversation`, put + put_writes
per step) on an embedded Redis and times every compression inside it (thread CPU time), in
alternating rounds (level 3, sized, sized, level 3, ...); per size class: the median time and
the stored size against the input's.

    python -m benchmarks.compression_tables --rounds 4 --threads 6
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from collections.abc import Callable

import redis
import zstandard

from benchmarks.workload import Conversation
from streamsaver import StreamSaver
from streamsaver.log import compression
from streamsaver.server.embedded import EmbeddedRedis

__all__ = ["main"]

_SIZED = compression._compress



_LEVEL3_CONTEXT: list[zstandard.ZstdCompressor] = []


def _level3_reused(data: bytes) -> bytes:
    """Level 3 on one reused context (what `compression` did before the size classes)."""
    if not _LEVEL3_CONTEXT:
        _LEVEL3_CONTEXT.append(zstandard.ZstdCompressor(level=3, write_checksum=True, write_content_size=True))
    return _LEVEL3_CONTEXT[0].compress(data)


def _run(
    url: str, compress: Callable[[bytes], bytes], threads: int, steps: int, seed: int
) -> list[tuple[int, int, int]]:
    """(input size, ns of thread CPU, frame size) of every compression of the conversation."""
    samples: list[tuple[int, int, int]] = []

    def timed(data: bytes) -> bytes:
        start = time.thread_time_ns()
        frame = compress(data)
        samples.append((len(data), time.thread_time_ns() - start, len(frame)))
        return frame

    compression._compress = timed  # type: ignore[assignment]
    try:
        saver = StreamSaver(redis.Redis.from_url(url), prefix=f"ct{seed}")
        saver.setup()
        for t in range(threads):
            conversation = Conversation(f"t{t}", saver.get_next_version, random.Random(seed + t))
            for _ in range(steps):
                step = conversation.next_step()
                saved = saver.put(step.parent_config, step.checkpoint, step.metadata, step.new_versions)
                conversation.record(saved)
                saver.put_writes(saved, step.writes, step.task_id)
    finally:
        compression._compress = _SIZED  # type: ignore[assignment]
    return samples


def main(argv: list[str] | None = None) -> None:
    """Run the variants alternately and print one row per variant and size class."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--threads", type=int, default=6, help="conversations per variant per round")
    parser.add_argument("--steps", type=int, default=45, help="steps per conversation")
    args = parser.parse_args(argv)
    variants = {"level 3": _level3_reused, "sized (_CLASSES)": _SIZED}
    results: dict[str, list[tuple[int, int, int]]] = {name: [] for name in variants}
    with EmbeddedRedis() as server:
        for round_ in range(args.rounds):
            names = list(variants) if round_ % 2 == 0 else list(variants)[::-1]
            for name in names:
                results[name] += _run(server.url, variants[name], args.threads, args.steps, 100 * round_)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"zstd inside puts, {args.rounds} rounds x {args.threads} threads x {args.steps} steps; load {load}")
    print(f"{'variant':18} {'class':>10} {'frames':>6} {'median us':>9} {'stored/input':>12}")
    for name, samples in results.items():
        for label, low, high in (("< 16 KiB", 0, 16 << 10), ("< 128 KiB", 16 << 10, 128 << 10)):
            chosen = [s for s in samples if low <= s[0] < high]
            if chosen:
                median = statistics.median(s[1] for s in chosen) / 1000
                ratio = sum(s[2] for s in chosen) / sum(s[0] for s in chosen)
                print(f"{name:18} {label:>10} {len(chosen):6} {median:9.1f} {ratio:12.4f}")


if __name__ == "__main__":
    main()
