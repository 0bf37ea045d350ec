"""Benchmark streamsaver against langgraph-checkpoint-redis, SQLite and in-memory savers.

python -m benchmarks.run --rounds 10 --samples 300 --out report.md
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack, closing
from importlib.metadata import version
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis

from benchmarks.measure import OPS, Settings, Subject, open_subject, run_rounds
from benchmarks.report import Row, render
from benchmarks.savers import EXTRA_SAVERS, SAVERS, Environment, SaverSpec
from benchmarks.workload import MESSAGE_BYTES, WRITES_PER_STEP

PACKAGES = (
    "streamsaver",
    "langgraph-checkpoint",
    "langgraph-checkpoint-redis",
    "langgraph-checkpoint-sqlite",
    "redis",
    "redisvl",
)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    known = ", ".join(s.key for s in (*SAVERS, *EXTRA_SAVERS))
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--samples", type=int, default=300, help="samples per op per saver (default 300)"
    )
    parser.add_argument(
        "--rounds", type=int, default=10, help="interleaved rounds the samples are spread over"
    )
    parser.add_argument("--warmup", type=int, default=10, help="untimed iterations per saver first")
    parser.add_argument(
        "--threads", type=int, default=300, help="background threads for the filtered list"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--savers",
        default=",".join(s.key for s in SAVERS),
        help=f"comma-separated, the first is the baseline; known: {known}",
    )
    parser.add_argument("--out", type=Path, help="also write the Markdown report here")
    args = parser.parse_args(argv)
    if args.samples < args.rounds or args.rounds < 1:
        parser.error("need --rounds >= 1 and --samples >= --rounds")
    return args


def select(keys: str) -> list[SaverSpec]:
    by_key = {s.key: s for s in (*SAVERS, *EXTRA_SAVERS)}
    unknown = [k for k in keys.split(",") if k not in by_key]
    if unknown:
        raise SystemExit(f"unknown saver(s): {', '.join(unknown)}; known: {', '.join(by_key)}")
    return [by_key[k] for k in keys.split(",")]


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def open_subjects(
    env: Environment, specs: Sequence[SaverSpec], settings: Settings
) -> list[Subject]:
    subjects = []
    for spec in specs:
        subjects.append(open_subject(env, spec, settings))
        progress(f"{spec.name}: ready")
    return subjects


def _server_version(env: Environment) -> str:
    if not env.servers:
        return "n/a"
    with closing(redis.Redis.from_url(env.servers[0].url)) as client:
        return str(client.info("server")["redis_version"])


def preamble(
    env: Environment, settings: Settings, seconds: float, load: Sequence[float]
) -> list[str]:
    versions = ", ".join(f"{p} {version(p)}" for p in PACKAGES)
    machine = f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs"
    s = settings
    return [
        (
            f"{datetime.datetime.now().isoformat(timespec='seconds')}; Python {platform.python_version()} "
            f"on {machine}; Redis {_server_version(env)}, one embedded server per saver (AOF everysec); "
            f"{versions}."
        ),
        "",
        (
            f"Per saver: {s.samples} samples per op over {s.rounds} interleaved rounds after {s.warmup} "
            f"warm-up iterations; {s.threads} background threads of {s.background_steps} steps; measured "
            f"threads start with {s.prefill[0]}-{s.prefill[1]} steps and take {s.steps_per_thread} measured "
            f"steps (a step: 2 messages of {MESSAGE_BYTES} bytes, {WRITES_PER_STEP} pending writes). "
            f"Run time {seconds:.0f} s; load average {load[0]:.1f} at start, {load[1]:.1f} at end."
        ),
    ]


NOTES = [
    "",
    (
        "Checks: `put` returns the id it was given; `get_tuple latest` the latest id, messages equal "
        f"to the ones saved (message objects) and exactly that checkpoint's {WRITES_PER_STEP} pending "
        "writes; `get_tuple by id` the id asked for; `list` the expected count, newest first (the "
        "thread list: with the messages as saved), only matching metadata. Shallow savers keep one "
        "checkpoint per thread: their `by id` reads the latest and their thread list has one entry."
    ),
]


def run(args: argparse.Namespace) -> str:
    settings = Settings(
        samples=args.samples,
        rounds=args.rounds,
        warmup=args.warmup,
        threads=args.threads,
        seed=args.seed,
    )
    started, load_before = time.perf_counter(), os.getloadavg()[0]
    loop = asyncio.new_event_loop()
    with tempfile.TemporaryDirectory(prefix="streamsaver-bench-") as tmp, ExitStack() as stack:
        env = Environment(stack, Path(tmp), loop)
        subjects = open_subjects(env, select(args.savers), settings)
        run_rounds(subjects, progress)
        rows = [Row(s.spec.name, s.samples, s.failures, s.opened.stored_bytes()) for s in subjects]
        load = (load_before, os.getloadavg()[0])
        head = preamble(env, settings, time.perf_counter() - started, load)
        text = render("Checkpointer benchmark", head, rows, list(OPS), NOTES)
    loop.close()
    return text


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    text = run(args)
    print(text)
    if args.out is not None:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
