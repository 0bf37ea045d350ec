"""Section 2, scaling: does latency stay flat as a thread's history and the deployment grow?

Two axes, each on fresh savers: checkpoints in the measured thread (``history_points``), and
threads in the deployment (``thread_points``). The measured thread is a trimmed conversation
(its last `WINDOW` messages of ~500 bytes), so its checkpoint keeps one size however long the
thread grows and only the axis changes. Each background thread has one step. At each point
every saver is filled up to it (`benchmarks.fill`: pipelined for StreamSaver, the public API
for the others, which stop at ``public_fill_max``; InMemorySaver is filled to every point),
then ``put`` (each followed, untimed, by its ``put_writes``), ``get_tuple`` of the latest
checkpoint and, on the threads axis, a metadata-filtered ``list`` across all threads are timed,
interleaved over the savers in two rounds. The timed puts add checkpoints to the thread.
"""

from __future__ import annotations

import gc
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from benchmarks.fill import fill, is_pipelined
from benchmarks.plan import Context, progress
from benchmarks.report import ratio, table
from benchmarks.savers import Environment, Opened, SaverSpec
from benchmarks.workload import Conversation, Workload

__all__ = ["run_scaling"]

WINDOW = 10
PREFILL = 20
ROUNDS = 2
ALL_THREADS_FILTER = {"source": "input", "step": -1}
"""Matches the first checkpoint of every thread: every background thread's only one."""


@dataclass
class Scaled:
    """One saver on one axis: its measured thread, background threads and samples."""

    spec: SaverSpec
    opened: Opened
    workload: Workload
    thread: Conversation
    background: int = 0
    samples: dict[tuple[int, str], list[float]] = field(default_factory=dict)
    failures: Counter[str] = field(default_factory=Counter)

    def reaches(self, point: int, cap: int) -> bool:
        uncapped = is_pipelined(self.opened) or self.spec.backend == "memory"
        return uncapped or point <= cap


def _open(ctx: Context, env: Environment, spec: SaverSpec) -> Scaled:
    opened = spec.open(env)
    workload = Workload(opened.saver.get_next_version, ctx.seed, (0, 0), 1)
    return Scaled(spec, opened, workload, workload.conversation("measured", WINDOW))


def _grow_history(scaled: Scaled, point: int) -> None:
    missing = max(point - len(scaled.thread.saved), 0)
    fill(scaled.opened, (scaled.thread for _ in range(missing)))


def _grow_threads(scaled: Scaled, point: int) -> None:
    if not scaled.thread.saved:
        fill(scaled.opened, (scaled.thread for _ in range(PREFILL)))
    missing = max(point - 1 - scaled.background, 0)
    fill(scaled.opened, (scaled.workload.conversation("bg", WINDOW) for _ in range(missing)))
    scaled.background += missing


def _once(scaled: Scaled, point: int, list_all: bool) -> None:
    driver, thread = scaled.opened.driver, scaled.thread
    step = thread.next_step()
    saved, seconds = driver.call(
        "put", step.parent_config, step.checkpoint, step.metadata, step.new_versions
    )
    thread.record(saved)
    scaled.samples.setdefault((point, "put"), []).append(seconds)
    driver.call("put_writes", saved, step.writes, step.task_id)
    got, seconds = driver.call("get_tuple", thread.thread_config)
    scaled.samples.setdefault((point, "get_tuple latest"), []).append(seconds)
    right = got is not None and got.config["configurable"]["checkpoint_id"] == step.checkpoint["id"]
    scaled.failures["get_tuple latest"] += not (
        right and got.checkpoint["channel_values"]["messages"] == thread.messages
    )
    if list_all:
        found, seconds = driver.call("list", None, filter=ALL_THREADS_FILTER, limit=10)
        scaled.samples.setdefault((point, "list filter all threads"), []).append(seconds)
        matching = all(t.metadata.get("source") == "input" for t in found)
        scaled.failures["list filter all threads"] += not (len(found) == 10 and matching)


def _measure(subjects: Sequence[Scaled], point: int, samples: int, list_all: bool) -> None:
    for r in range(ROUNDS):
        shift = r % len(subjects)
        for scaled in [*subjects[shift:], *subjects[:shift]]:
            gc.collect()
            for _ in range(samples // ROUNDS):
                _once(scaled, point, list_all)


def _axis(
    ctx: Context,
    name: str,
    points: Sequence[int],
    grow: Callable[[Scaled, int], None],
    list_all: bool,
) -> list[Scaled]:
    cap = ctx.plan.public_fill_max
    with ctx.environment(f"scaling-{name}") as env:
        subjects = [_open(ctx, env, spec) for spec in ctx.pick(api="sync")]
        for point in points:
            here = [s for s in subjects if s.reaches(point, cap)]
            for scaled in here:
                grow(scaled, point)
            waited = env.settle()
            rewrites = f" (AOF rewrites done after {waited:.0f} s)" if waited >= 1 else ""
            progress(f"scaling: {name} {point:,} filled{rewrites}")
            _measure(here, point, ctx.plan.scale_samples, list_all)
    return subjects


def _op_table(subjects: Sequence[Scaled], points: Sequence[int], op: str) -> list[str]:
    def median(s: Scaled, point: int) -> float | None:
        found = s.samples.get((point, op))
        return statistics.median(found) if found else None

    body = []
    for scaled in subjects:
        cells = [ratio(median(scaled, p), median(subjects[0], p), scale=1000) for p in points]
        first, last = (
            median(scaled, points[0]),
            next((m for p in reversed(points) if (m := median(scaled, p)) is not None), None),
        )
        change = f"{last / first - 1:+.0%}" if first and last else "—"
        body.append([scaled.spec.name, *cells, change])
    header = ["saver", *(f"{p:,}" for p in points), "last vs first point reached"]
    return [
        f"#### {op}, median ms (ratio to {subjects[0].spec.name})",
        "",
        *table(header, body),
        "",
    ]


def _failures(subjects: Sequence[Scaled]) -> str:
    wrong = [f"{s.spec.name} {op}: {n}" for s in subjects for op, n in s.failures.items() if n]
    return "Wrong results: " + (", ".join(wrong) if wrong else "none") + "."


def run_scaling(ctx: Context) -> list[str]:
    """Both axes on every chosen sync saver (the async twins send the same commands)."""
    p = ctx.plan
    history = _axis(ctx, "history", p.history_points, _grow_history, False)
    threads = _axis(ctx, "threads", p.thread_points, _grow_threads, True)
    lines = [
        "## 2. Scaling",
        "",
        (
            f"Measured thread: a trimmed conversation (last {WINDOW} messages, ~{WINDOW // 2} KB "
            f"of text per checkpoint); {p.scale_samples} timed calls per op, saver and point. "
            "StreamSaver is filled through pipelined appends (the same projections as `put`), "
            f"InMemorySaver through its API to every point, the other savers through their public "
            f"API up to {p.public_fill_max:,} (—: not filled that far)."
        ),
        "",
        "### Checkpoints in one thread",
        "",
    ]
    for op in ("put", "get_tuple latest"):
        lines += _op_table(history, p.history_points, op)
    lines += [_failures(history), "", "### Threads in the deployment", ""]
    lines += [
        (
            f"The measured thread has {PREFILL} checkpoints; every other thread one. The filtered "
            f"list asks for `{ALL_THREADS_FILTER}` (every thread's first checkpoint), limit 10."
        ),
        "",
    ]
    for op in ("put", "get_tuple latest", "list filter all threads"):
        lines += _op_table(threads, p.thread_points, op)
    return [*lines, _failures(threads), ""]
