"""How big each section of the suite runs (``--quick`` or the default), and what sections share.

Pure data and one helper: a section gets a `Context` and opens its savers in an `Environment`
of its own, so its Redis servers stop, and their memory is freed, when the section ends.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from benchmarks.measure import Settings
from benchmarks.savers import Environment, SaverSpec

__all__ = ["DEFAULT", "QUICK", "Context", "Plan", "progress", "without_100k_threads"]


@dataclass(frozen=True)
class Plan:
    """Sizes of every section.

    Args:
        micro: samples and threads of the micro ops.
        trips_iterations: iterations whose round trips are counted, per saver.
        history_points: checkpoints in the measured thread at each scaling point.
        thread_points: threads in the deployment at each scaling point.
        public_fill_max: the largest point a saver is filled to through its public API
            (StreamSaver is filled through pipelined appends, InMemorySaver is quick: no cap).
        scale_samples: timed calls per op, saver and scaling point.
        storage_threads: growing conversations written for the storage section.
        storage_steps: steps (checkpoints) of each of them.
        e2e_rounds: interleaved rounds of the sync agent loop (each ~0.1 s a saver by default;
            ratios are medians of per-round ratios, which settle with many short rounds).
        e2e_turns: user turns per thread in the agent loop (4 supersteps each).
        e2e_concurrency: concurrent threads of the async agent loop.
        resume_samples: threads whose 20th turn is timed, per saver.
    """

    micro: Settings
    trips_iterations: int
    history_points: tuple[int, ...]
    thread_points: tuple[int, ...]
    public_fill_max: int
    scale_samples: int
    storage_threads: int
    storage_steps: int
    e2e_rounds: int
    e2e_turns: int
    e2e_concurrency: tuple[int, ...]
    resume_samples: int


DEFAULT = Plan(
    micro=Settings(samples=200, rounds=10, warmup=10, threads=300),
    trips_iterations=10,
    history_points=(10, 100, 1_000, 10_000),
    thread_points=(100, 10_000, 100_000),
    public_fill_max=10_000,
    scale_samples=40,
    storage_threads=10,
    storage_steps=40,
    e2e_rounds=40,
    e2e_turns=5,
    e2e_concurrency=(1, 16, 64),
    resume_samples=4,
)

QUICK = Plan(
    micro=Settings(samples=30, rounds=3, warmup=3, threads=30),
    trips_iterations=3,
    history_points=(10, 100, 1_000),
    thread_points=(100, 1_000),
    public_fill_max=1_000,
    scale_samples=10,
    storage_threads=3,
    storage_steps=40,
    e2e_rounds=4,
    e2e_turns=2,
    e2e_concurrency=(1, 16, 64),
    resume_samples=1,
)


def without_100k_threads(plan: Plan) -> Plan:
    """The plan without its 100,000-thread scaling point (about 3 minutes less by default)."""
    return replace(plan, thread_points=tuple(p for p in plan.thread_points if p < 100_000))


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Context:
    """What every section gets: the plan, the savers by key, the loop, a temp dir."""

    plan: Plan
    specs: dict[str, SaverSpec]
    chosen: Sequence[str]
    loop: asyncio.AbstractEventLoop
    tmp: Path
    postgres_url: str | None
    seed: int = 7
    micro_chosen: Sequence[str] = ()

    def pick(self, *, api: str | None = None, history_only: bool = False) -> list[SaverSpec]:
        """The chosen savers serving `api` (``sync``/``async``; ``both`` serves either)."""
        found = [self.specs[k] for k in self.chosen]
        if api is not None:
            found = [s for s in found if s.api in (api, "both")]
        return [s for s in found if s.keeps_history or not history_only]

    def pick_micro(self) -> list[SaverSpec]:
        """The savers of the micro section (`micro_chosen`, else every chosen one)."""
        return [self.specs[k] for k in (self.micro_chosen or self.chosen)]

    @contextmanager
    def environment(self, name: str) -> Iterator[Environment]:
        """A fresh environment for one section; its servers stop when the block ends."""
        with ExitStack() as stack:
            folder = self.tmp / name
            folder.mkdir()
            yield Environment(stack, folder, self.loop, postgres_url=self.postgres_url)
