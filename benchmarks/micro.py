"""Section 1, micro ops: every saver call LangGraph makes, timed interleaved round by round.

The ops, their checks and the rounds are `benchmarks.measure`'s; after the timed rounds each
Redis-based saver runs a few more iterations whose round trips and commands are counted on the
wire (`benchmarks.round_trips`), outside any clock.
"""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.measure import OPS, Subject, open_subject, run_rounds
from benchmarks.plan import Context, progress
from benchmarks.report import Row, micro_tables, table
from benchmarks.round_trips import trips_per_op
from benchmarks.savers import SaverSpec
from benchmarks.workload import MESSAGE_BYTES, WRITES_PER_STEP

__all__ = ["run_micro"]

NOTES = [
    "",
    (
        "Checks: `put` returns the id it was given; `get_tuple latest` the latest id, messages equal "
        f"to the ones saved (message objects) and exactly that checkpoint's {WRITES_PER_STEP} pending "
        "writes; `get_tuple by id` the id asked for; `list` the expected count, newest first (the "
        "thread list: with the messages as saved), only matching metadata; `list thread filter` "
        "(`{source: loop, step: k}` within the thread) exactly the one checkpoint of step k; "
        "`delete_thread` leaves `get_tuple` of the deleted thread empty (the deleted thread was "
        "written just before, untimed: 2 checkpoints with their writes). Shallow savers keep one "
        "checkpoint per thread: their `by id` and their filter read the latest and their thread "
        "list has one entry."
    ),
]


def _trips_table(
    subjects: Sequence[Subject], trips: dict[str, dict[str, tuple[float, float]]]
) -> list[str]:
    ops = list(OPS)
    body = []
    for subject in subjects:
        found = trips.get(subject.spec.key)
        cells = [
            f"{found[op][0]:g} / {found[op][1]:g}" if found else "n/a (not Redis)" for op in ops
        ]
        body.append([subject.spec.name, *cells])
    return table(["saver", *ops], body)


def run_micro(ctx: Context, specs: Sequence[SaverSpec]) -> list[str]:
    """Measure every op on every saver in `specs`; the first is the baseline of the ratios."""
    settings = ctx.plan.micro
    with ctx.environment("micro") as env:
        subjects = []
        for spec in specs:
            subjects.append(open_subject(env, spec, settings))
            progress(f"micro: {spec.name} ready")
        run_rounds(subjects, lambda m: progress(f"micro: {m}"))
        rows = [Row(s.spec.name, s.samples, s.failures, s.opened.stored_bytes()) for s in subjects]
        trips = {
            s.spec.key: trips_per_op(s, ctx.plan.trips_iterations)
            for s in subjects
            if s.spec.backend == "redis"
        }
    s = settings
    head = [
        "## 1. Micro ops",
        "",
        (
            f"Per saver: {s.samples} samples per op over {s.rounds} interleaved rounds after "
            f"{s.warmup} warm-up iterations; {s.threads} background threads of "
            f"{s.background_steps} steps; measured threads start with {s.prefill[0]}-{s.prefill[1]} "
            f"steps and take {s.steps_per_thread} measured steps (a step: 2 messages of "
            f"{MESSAGE_BYTES} bytes, {WRITES_PER_STEP} pending writes)."
        ),
        "",
    ]
    trips_head = [
        "",
        "#### Round trips / commands sent per op (median, counted on the wire; Redis savers)",
        "",
    ]
    return [
        *head,
        *micro_tables(rows, list(OPS)),
        *NOTES,
        *trips_head,
        *_trips_table(subjects, trips),
        "",
    ]
