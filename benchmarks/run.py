"""Benchmark streamsaver against langgraph-checkpoint-redis, SQLite, Postgres and in-memory savers.

python -m benchmarks.run [--quick] [--postgres-url URL] [--no-100k] --out report.md

Runs every section (micro ops, scaling, storage, end to end) and writes one Markdown report:
one table per section, every figure with its ratio to StreamSaver.
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
from collections.abc import Callable, Sequence
from dataclasses import replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.e2e import run_e2e
from benchmarks.micro import run_micro
from benchmarks.plan import DEFAULT, QUICK, Context, Plan, progress, without_100k_threads
from benchmarks.savers import EXTRA_SAVERS, catalog
from benchmarks.scaling import run_scaling
from benchmarks.storage import run_storage

PACKAGES = (
    "streamsaver",
    "langgraph",
    "langgraph-checkpoint",
    "langgraph-checkpoint-redis",
    "langgraph-checkpoint-sqlite",
    "langgraph-checkpoint-postgres",
    "redis",
    "redisvl",
)
SECTIONS: dict[str, Callable[[Context], list[str]]] = {
    "micro": lambda ctx: run_micro(ctx, ctx.pick_micro()),
    "scaling": run_scaling,
    "storage": run_storage,
    "e2e": run_e2e,
}
ASYNC_E2E_ONLY = ("sqlite-async", "postgres-async")
"""Savers in the line-up for the async end-to-end runs; the micro ops skip them by default."""
POSTGRES_ENV = "STREAMSAVER_BENCH_POSTGRES_URL"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--quick", action="store_true", help="every section at small sizes (about 3 minutes)"
    )
    parser.add_argument(
        "--sections",
        default=",".join(SECTIONS),
        help=f"comma-separated, of: {', '.join(SECTIONS)} (default: all)",
    )
    parser.add_argument(
        "--savers",
        help="comma-separated saver keys for every section (default: all; the first is the "
        "baseline); see --list-savers",
    )
    parser.add_argument("--list-savers", action="store_true", help="print the saver keys and exit")
    parser.add_argument(
        "--postgres-url",
        default=os.environ.get(POSTGRES_ENV),
        help=f"also measure PostgresSaver (needs the bench-postgres extra); default ${POSTGRES_ENV}",
    )
    parser.add_argument(
        "--no-100k",
        action="store_true",
        help="leave out the default 100,000-thread scaling point (StreamSaver and InMemorySaver "
        "only; about 3 minutes)",
    )
    parser.add_argument(
        "--samples", type=int, help="micro: samples per op per saver (overrides the plan)"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, help="also write the Markdown report here")
    return parser.parse_args(argv)


def _plan(args: argparse.Namespace) -> Plan:
    plan = QUICK if args.quick else DEFAULT
    if args.no_100k:
        plan = without_100k_threads(plan)
    if args.samples:
        plan = replace(plan, micro=replace(plan.micro, samples=args.samples))
    return plan


def _version(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def preamble(ctx: Context, quick: bool, seconds: float, load: Sequence[float]) -> list[str]:
    versions = ", ".join(f"{p} {v}" for p in PACKAGES if (v := _version(p)))
    machine = f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs"
    postgres = (
        "PostgresSaver measured" if ctx.postgres_url else "no Postgres URL given: no Postgres"
    )
    return [
        "# Checkpointer benchmark",
        "",
        (
            f"{datetime.datetime.now().isoformat(timespec='seconds')}; "
            f"{'--quick' if quick else 'default'} sizes; Python {platform.python_version()} on "
            f"{machine}; one embedded Redis 8 (search + JSON, AOF everysec) per Redis-based saver; "
            f"{postgres}; {versions}."
        ),
        (
            f"Run time {seconds:.0f} s; load average {load[0]:.1f} at start, {load[1]:.1f} at end. "
            "Ratios are to the StreamSaver row of each table (the first row): for latencies and "
            "bytes lower is better, for throughput higher is better."
        ),
        "",
    ]


def run(args: argparse.Namespace) -> str:
    specs = catalog(args.postgres_url)
    on_request = {spec.key for spec in EXTRA_SAVERS}
    chosen = args.savers.split(",") if args.savers else [k for k in specs if k not in on_request]
    unknown = [k for k in chosen if k not in specs]
    if unknown:
        raise SystemExit(f"unknown saver(s): {', '.join(unknown)}; known: {', '.join(specs)}")
    sections = args.sections.split(",")
    if any(s not in SECTIONS for s in sections):
        raise SystemExit(f"unknown section in {args.sections}; known: {', '.join(SECTIONS)}")
    started, load_before = time.perf_counter(), os.getloadavg()[0]
    loop = asyncio.new_event_loop()
    body: list[str] = []
    with tempfile.TemporaryDirectory(prefix="streamsaver-bench-") as tmp:
        micro_keys = chosen if args.savers else [k for k in chosen if k not in ASYNC_E2E_ONLY]
        ctx = Context(
            _plan(args), specs, chosen, loop, Path(tmp), args.postgres_url, args.seed, micro_keys
        )
        for name in sections:
            section_start = time.perf_counter()
            body += SECTIONS[name](ctx)
            progress(f"{name}: done in {time.perf_counter() - section_start:.0f} s")
    loop.close()
    load = (load_before, os.getloadavg()[0])
    head = preamble(ctx, args.quick, time.perf_counter() - started, load)
    return "\n".join([*head, *body]) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.list_savers:
        for key, spec in catalog(args.postgres_url).items():
            print(f"{key:22} {spec.name}")
        return
    text = run(args)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)


if __name__ == "__main__":
    main()
