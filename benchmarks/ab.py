"""Before/after: the micro ops of the same saver config from two source trees, in one run.

Both trees hold a package named ``streamsaver``, so each runs in worker processes of its own
(`benchmarks.ab_worker`, started with ``python -c`` and the tree first on ``sys.path``: it wins
over any installed copy, and each worker checks that every module of the tree's packages it
loaded came from the tree). The harness (`benchmarks.measure`'s ops, checks and workload) is this
checkout's, the same for both. The parent starts one embedded Redis per worker and saver (same
settings), each worker opens its savers on its own servers through the tree's public API, and
the parent runs the rounds over pipes, one process measuring at a time: round k runs A then B,
round k+1 B then A, so load on the machine hits both alike. Statistics: `benchmarks.ab_report`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import asdict, replace
from pathlib import Path
from typing import IO, Any, cast

from benchmarks.ab_report import Rounds, report, split_rounds
from benchmarks.ab_worker import PACKAGES
from benchmarks.measure import OPS, Settings
from benchmarks.plan import DEFAULT, QUICK, progress
from benchmarks.savers import Environment, catalog

__all__ = ["main"]

BENCH_ROOT = Path(__file__).resolve().parents[1]
TREES = ("before", "after")
DEFAULT_SETTINGS = replace(DEFAULT.micro, samples=400, rounds=80)

_BOOT = """
import sys
tree, bench = sys.argv[1], sys.argv[2]
sys.path[0] = tree  # '' under -c: the tree under test comes first, before any installed copy
import streamsaver, projectors  # the tree's own, loaded while it is first
sys.path.insert(0, bench)  # then the harness, the same for both trees
from benchmarks.ab_worker import serve
serve(tree, sys.argv[3])
"""


class Worker:
    """The parent's end of one worker process."""

    def __init__(self, tree: Path, savers: list[str], urls: list[str], settings: Settings):
        config = json.dumps({"savers": savers, "urls": urls, "settings": asdict(settings)})
        self.tree = tree
        self.imported = ""  # the tree's streamsaver/__init__.py, as the worker reports it
        self.process = subprocess.Popen(
            [sys.executable, "-c", _BOOT, str(tree), str(BENCH_ROOT), config],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=tree,
        )

    def receive(self) -> dict[str, Any]:
        line = cast(IO[str], self.process.stdout).readline()
        if not line:
            raise RuntimeError(f"a worker of {self.tree} ended (exit {self.process.wait()})")
        return cast(dict[str, Any], json.loads(line))

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        stdin = cast(IO[str], self.process.stdin)
        stdin.write(json.dumps(request) + "\n")
        stdin.flush()
        return self.receive()

    def close(self) -> None:
        cast(IO[str], self.process.stdin).close()
        self.process.wait(timeout=60)


def _describe(tree: Path) -> str:
    """The tree's commit, and whether its packages have uncommitted changes."""

    def git(*args: str) -> str:
        command = ["git", "-C", str(tree), *args]
        done = subprocess.run(command, check=False, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD") or "no git commit"
    return commit + " (+ changes)" if git("status", "--porcelain", "--", *PACKAGES) else commit


def _start(
    stack: ExitStack, trees: dict[str, Path], savers: list[str], settings: Settings, processes: int
) -> dict[str, list[Worker]]:
    """Start `processes` workers per tree, each on servers of its own; return once all are ready.

    Several per tree, taking rounds in turn: a process's own speed (memory layout, hash seed,
    where the scheduler puts it and its server) shifts all its ops by several %."""
    env = Environment(stack, Path(tempfile.gettempdir()), asyncio.new_event_loop())
    workers = {
        t: [
            Worker(trees[t], savers, [env.redis_server().url for _ in savers], settings)
            for _ in range(processes)
        ]
        for t in TREES
    }
    for worker in [w for t in TREES for w in workers[t]]:
        stack.callback(worker.close)  # registered after the servers' stop: runs before it
        worker.imported = worker.receive()["imported"]
    return workers


def _rounds(
    workers: dict[str, list[Worker]], savers: list[str], settings: Settings
) -> tuple[dict[str, dict[str, Rounds]], dict[str, Counter[str]]]:
    """Round r, saver s: A then B when r + s is even, else B then A; worker r mod processes."""
    data: dict[str, dict[str, Rounds]] = {t: {k: [] for k in savers} for t in TREES}
    failures = {t: Counter[str]() for t in TREES}
    for r, count in enumerate(split_rounds(settings.samples, settings.rounds)):
        for s, key in enumerate(savers):
            for t in TREES if (r + s) % 2 == 0 else TREES[::-1]:
                got = workers[t][r % len(workers[t])].ask({"saver": s, "count": count})
                data[t][key].append(got["samples"])
                failures[t].update({f"{key} {op}": n for op, n in got["failures"].items()})
        progress(f"ab: round {r + 1}/{settings.rounds} done")
    return data, failures


def _notes(tree: Path, workers: list[Worker], failures: Counter[str]) -> str:
    """Where the tree's code came from, checked in every worker, and its wrong results.

    Raises:
        RuntimeError: a worker loaded a module of the tree's packages from elsewhere."""
    checks = [w.ask({"check": True}) for w in workers]
    if outside := [m for check in checks for m in check["outside"]]:
        raise RuntimeError(f"modules loaded from outside {tree}: {outside}")
    wrong = ", ".join(f"{op}: {n}" for op, n in failures.items() if n) or "none"
    return (
        f"`{tree}` at {_describe(tree)}; streamsaver imported from `{workers[0].imported}` "
        f"in {len(workers)} processes, all {checks[0]['loaded']} modules of "
        f"{' and '.join(PACKAGES)} from the tree; wrong results: {wrong}"
    )


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.ab", description=(__doc__ or "").split("\n\n")[0]
    )
    add = parser.add_argument
    add("--before", type=Path, required=True, help="the source tree compared against (A)")
    add("--after", type=Path, required=True, help="the source tree measured against it (B)")
    add("--quick", action="store_true", help="30 samples in 3 rounds, 30 background threads")
    add("--samples", type=int, help=f"per op, tree and saver (default {DEFAULT_SETTINGS.samples})")
    add("--rounds", type=int, help=f"interleaved rounds (default {DEFAULT_SETTINGS.rounds})")
    add("--processes", type=int, help="workers per tree, taking turns (default 4; 2 quick)")
    add("--savers", default="ss-full,ss-async", help="keys, see benchmarks.run --list-savers")
    add("--out", type=Path, help="also write the Markdown report (always printed) to this file")
    args = parser.parse_args(argv)
    if unknown := [k for k in args.savers.split(",") if k not in catalog(None)]:
        parser.error(f"unknown savers: {unknown}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = _arguments(argv)
    s = QUICK.micro if args.quick else DEFAULT_SETTINGS
    s = replace(s, samples=args.samples or s.samples, rounds=args.rounds or s.rounds)
    savers, processes = args.savers.split(","), args.processes or (2 if args.quick else 4)
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    started, load = time.perf_counter(), os.getloadavg()[0]
    with ExitStack() as stack:
        workers = _start(stack, trees, savers, s, processes)
        progress(f"ab: {2 * processes} workers ready")
        data, failures = _rounds(workers, savers, s)
        head = [f"- **{t}**: {_notes(trees[t], workers[t], failures[t])}" for t in TREES]
    head += [
        "",
        (
            f"{s.samples} samples per op, tree and saver in {s.rounds} rounds interleaved A B, "
            f"B A, ... after {s.warmup} warm-up iterations; {s.threads} background threads of "
            f"{s.background_steps} steps; one embedded Redis per worker and saver. Times in ms, "
            f"ratios after / before (below 1: faster). Run time {time.perf_counter() - started:.0f} "
            f"s; load average (1 min) {load:.2f} at the start, {os.getloadavg()[0]:.2f} at the end."
        ),
    ]
    names = catalog(None)
    sections = {f"{names[k].name} (`{k}`)": (data["before"][k], data["after"][k]) for k in savers}
    text = "\n".join(report("# Before/after: micro ops", head, sections, list(OPS)))
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
