"""Client instructions of a put + put_writes step with the read cache on and off, in one process.

valgrind --tool=callgrind --instr-atstart=no --toggle-collect=ffi_call --callgrind-out-file=/tmp/put.cg \
    .venv/bin/python -m benchmarks.put_instructions --measure cached|plain [--steps 40]
(the ``totals:`` line of /tmp/put.cg, divided by the steps)

Two savers (the default read cache, and ``read_cache_bytes=0``) each write their own thread of
the same growing conversation (`benchmarks.read_cache`), step by step, alternating (ABBA), after
a first read that tells the cached saver the thread's incarnation (so its puts fill the cache).
The measured saver's steps run inside a ctypes call (libc's ``bsearch``, calling back into
Python once): callgrind collects only there, so the total is the client's instructions for
that saver's steps, exactly, whatever the machine's load; the other saver's steps run outside.
Instrumentation starts (``callgrind_control -i on``) after the imports and the warm-up steps.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import functools
import os
import random
import subprocess
from collections.abc import Callable
from typing import Any

import redis
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint

from benchmarks.read_cache import _text
from streamsaver import StreamSaver
from streamsaver.server.embedded import EmbeddedRedis

_LIBC = ctypes.CDLL(ctypes.util.find_library("c"))
_COMPARE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


class _Writer:
    def __init__(self, saver: StreamSaver, thread: str) -> None:
        self.saver, self.rng, self.messages = saver, random.Random(7), list[Any]()
        self.saved: RunnableConfig = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        self.step = 0

    def write(self, read: bool = False) -> None:
        step, rng = self.step, self.rng
        self.messages += [HumanMessage(content=_text(rng), id=f"h{step}"), AIMessage(content=_text(rng), id=f"a{step}")]
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"messages": list(self.messages), "step": step}
        checkpoint["channel_versions"] = {"messages": step + 1, "step": step + 1}
        versions: dict[str, str | int | float] = {"messages": step + 1, "step": step + 1}
        self.saved = self.saver.put(self.saved, checkpoint, {"source": "loop", "step": step}, versions)
        self.saver.put_writes(self.saved, [("a", 1), ("b", 2), ("c", 3)], "task")
        if step == 0 or read:  # the first read tells the saver the thread's incarnation
            self.saver.get_tuple(self.saved)
        self.step += 1


def _inside(run: Callable[[], None]) -> None:
    """Run `run` inside a call through libffi (libc's bsearch on a one-element array)."""
    key, base, count = ctypes.c_int(0), (ctypes.c_int * 1)(0), ctypes.c_size_t(1)

    def compare(_a: int | None, _b: int | None) -> int:
        run()
        return 0

    callback = _COMPARE(compare)
    _LIBC.bsearch(ctypes.byref(key), base, count, ctypes.c_size_t(4), callback)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--measure", choices=["cached", "plain"], required=True)
    parser.add_argument(
        "--no-compression", action="store_true",
        help="store values uncompressed: zstd's table resets cost more or less with the heap's state",
    )
    parser.add_argument("--read", action="store_true", help="each step ends with a get_tuple (an agent loop)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=40, help="measured steps per saver")
    args = parser.parse_args()
    with EmbeddedRedis() as server:
        client = redis.Redis.from_url(server.url)
        compression = None if args.no_compression else "zstd"
        cached = _Writer(StreamSaver(client, compression=compression), "cached")
        plain = _Writer(StreamSaver(client, compression=compression, read_cache_bytes=0), "plain")
        measured = cached if args.measure == "cached" else plain
        for writer in (cached, plain):
            writer.saver.setup()
            for _ in range(args.warmup):
                writer.write()
        subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], check=False, capture_output=True)
        for step in range(args.steps):
            order = [cached, plain]
            for writer in order if step % 2 == 0 else order[::-1]:
                if writer is measured:
                    _inside(functools.partial(writer.write, args.read))
                else:
                    writer.write(args.read)


if __name__ == "__main__":
    main()
