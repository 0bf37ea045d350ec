"""Client instructions of one micro benchmark op, per call, for one saver.

valgrind --tool=callgrind --instr-atstart=no --toggle-collect=ffi_call --callgrind-out-file=/tmp/op.cg \
    .venv/bin/python -m benchmarks.read_instructions --saver ss-full --op "get_tuple latest" [-n 100]
(the ``totals:`` line of /tmp/op.cg, divided by n; ``callgrind_annotate /tmp/op.cg`` for where)

The micro benchmark's workload (`benchmarks.measure`: every op of an iteration, in its order, on a
growing conversation), on one saver with no background threads; only the chosen op's saver call
runs inside a ctypes call (libc's ``bsearch``, calling back into Python once), so callgrind
collects only there: the client's instructions for that op, exactly, whatever the machine's load
(the server runs in another process, outside valgrind). Instrumentation starts (``callgrind_control
-i on``) after the imports and the warm-up iterations.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import ctypes.util
import os
import subprocess
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from benchmarks.measure import OPS, OpFn, Settings, Subject, iterate, open_subject
from benchmarks.savers import EXTRA_SAVERS, SAVERS, Environment

_LIBC = ctypes.CDLL(ctypes.util.find_library("c"))
_COMPARE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


def _inside(subject: Subject, method: str, args: Any, kwargs: Any) -> tuple[Any, float]:
    """`subject`'s saver call, run inside a call through libffi (bsearch on a one-element array)."""
    out: list[tuple[Any, float]] = []

    def compare(_a: int | None, _b: int | None) -> int:
        out.append(subject.opened.driver.call(method, *args, **kwargs))
        return 0

    key, base = ctypes.c_int(0), (ctypes.c_int * 1)(0)
    _LIBC.bsearch(ctypes.byref(key), base, ctypes.c_size_t(1), ctypes.c_size_t(4), _COMPARE(compare))
    return out[0]


def _measured(op_name: str) -> Any:
    def wrap(name: str, op: OpFn) -> OpFn:
        if name != op_name:
            return op

        def run(subject: Subject, turn: Any) -> tuple[float, bool]:
            subject.call = lambda method, *a, **k: _inside(subject, method, a, k)  # type: ignore[method-assign]
            try:
                return op(subject, turn)
            finally:
                del subject.call

        return run

    return wrap


def main() -> None:
    specs = {s.key: s for s in (*SAVERS, *EXTRA_SAVERS)}
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--saver", default="ss-full", choices=sorted(specs))
    parser.add_argument("--op", default="get_tuple latest", choices=list(OPS))
    parser.add_argument("-n", type=int, default=100, help="measured calls")
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    loop = asyncio.new_event_loop()
    with tempfile.TemporaryDirectory(prefix="streamsaver-instr-") as tmp, ExitStack() as stack:
        env = Environment(stack, Path(tmp), loop)
        subject = open_subject(env, specs[args.saver], Settings(threads=0, warmup=args.warmup))
        subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], check=False, capture_output=True)
        wrap = _measured(args.op)
        wrong = sum(not right for _ in range(args.n) for name, _, right in iterate(subject, wrap) if name == args.op)
        print(f"{args.saver} {args.op}: {args.n} calls, {wrong} wrong")


if __name__ == "__main__":
    main()
