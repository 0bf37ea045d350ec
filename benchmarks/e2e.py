"""Section 4, end to end: the agent/tool loop of `benchmarks.agent` run by LangGraph on each saver.

* Sync: each round, every sync saver runs ``e2e_turns`` turns of a new thread with ``invoke``
  (savers interleaved, round r starting with saver r); supersteps/s is the median over rounds,
  and a saver's ratio to the first is the median of its per-round ratios (`paired_ratios`): the
  savers of one round run within a fraction of a second of each other, so a machine whose load
  drifts moves both sides of a ratio alike, where it moves the medians of separate rates apart.
  The load around the rounds is reported: it still moves savers unequally (benchmarks/README.md).
* Async: each async saver (created on default settings) runs ``e2e_turns`` turns on each of C
  threads at once with ``ainvoke``, for each C in ``e2e_concurrency``; supersteps/s is all
  supersteps over the wall time. A run that fails is reported with its error, not retried.
* Resumed conversation: a thread gets 19 turns, then a freshly compiled graph on the same saver
  runs the 20th; its wall time (loading the 76-superstep history's latest state, four
  supersteps, their checkpoints and writes) is the latency.

Every run is checked: the thread ends with four messages per turn, the last one the answer.
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import time
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage

from benchmarks.agent import MESSAGES_PER_TURN, SUPERSTEPS_PER_TURN, build_agent, turn_input
from benchmarks.plan import Context, progress
from benchmarks.report import paired_ratios, ratio, table
from benchmarks.savers import Environment, Opened, SaverSpec

__all__ = ["paired_ratios", "run_e2e"]

RESUMED_TURN = 20
_threads = iter(range(10**9))


def _config() -> dict[str, Any]:
    return {"configurable": {"thread_id": f"e2e-{next(_threads)}"}}


def _right(state: dict[str, Any], turns: int) -> bool:
    messages = state["messages"]
    return len(messages) == MESSAGES_PER_TURN * turns and isinstance(messages[-1], AIMessage)


def _sync_turns(opened: Opened, turns: int) -> tuple[float, bool]:
    graph, config = build_agent(opened.saver), _config()
    start = time.perf_counter()
    for _ in range(turns):
        state = graph.invoke(turn_input(), config)
    return time.perf_counter() - start, _right(state, turns)


async def _async_turns(opened: Opened, turns: int, concurrency: int) -> tuple[float, bool]:
    graph = build_agent(opened.saver)

    async def one() -> bool:
        config = _config()
        for _ in range(turns):
            state = await graph.ainvoke(turn_input(), config)
        return _right(state, turns)

    start = time.perf_counter()
    results = await asyncio.gather(*(one() for _ in range(concurrency)))
    return time.perf_counter() - start, all(results)


def _resumed(opened: Opened) -> tuple[float, bool]:
    config = _config()
    graph = build_agent(opened.saver)
    for _ in range(RESUMED_TURN - 1):
        graph.invoke(turn_input(), config)
    resumed = build_agent(opened.saver)
    start = time.perf_counter()
    state = resumed.invoke(turn_input(), config)
    return time.perf_counter() - start, _right(state, RESUMED_TURN)


def _rotations(items: Sequence[Any], rounds: int) -> list[list[Any]]:
    return [[*items[r % len(items) :], *items[: r % len(items)]] for r in range(rounds)]


def _ratio_cell(rates: Sequence[float], base: Sequence[float]) -> tuple[str, str]:
    """The median rate with the median per-round ratio, and the middle half of those ratios."""
    ratios = sorted(paired_ratios(rates, base))
    if len(ratios) < 4:
        spread = "—"
    else:
        low, _, high = statistics.quantiles(ratios, n=4)
        spread = f"{low:.2f}-{high:.2f}"
    return f"{statistics.median(rates):.0f} ({statistics.median(ratios):.2f}x)", spread


def _sync_section(ctx: Context, env: Environment, specs: Sequence[SaverSpec]) -> list[str]:
    p = ctx.plan
    opened = {s.key: s.open(env) for s in specs}
    for spec in specs:  # warm-up: first calls, script loading, graph compiling
        _sync_turns(opened[spec.key], 1)
    rates: dict[str, list[float]] = {s.key: [] for s in specs}
    resumed: dict[str, list[float]] = {s.key: [] for s in specs}
    wrong: list[str] = []
    load_before = os.getloadavg()[0]
    for number, order in enumerate(_rotations(specs, p.e2e_rounds), 1):
        for spec in order:
            gc.collect()
            seconds, right = _sync_turns(opened[spec.key], p.e2e_turns)
            rates[spec.key].append(SUPERSTEPS_PER_TURN * p.e2e_turns / seconds)
            wrong += [] if right else [f"{spec.name} sync"]
        if number % 10 == 0 or number == p.e2e_rounds:
            progress(f"e2e: sync round {number} of {p.e2e_rounds} done")
    load = (load_before, os.getloadavg()[0])
    for order in _rotations(specs, p.resume_samples):
        for spec in order:
            seconds, right = _resumed(opened[spec.key])
            resumed[spec.key].append(seconds)
            wrong += [] if right else [f"{spec.name} resumed"]
    progress("e2e: resumed turns done")
    base_rates = rates[specs[0].key]
    base_resumed = statistics.median(resumed[specs[0].key])
    body = [
        [
            s.name,
            *_ratio_cell(rates[s.key], base_rates),
            ratio(statistics.median(resumed[s.key]), base_resumed, "{:.1f}", 1000),
        ]
        for s in specs
    ]
    header = [
        "saver",
        "sync supersteps/s",
        "per-round ratio, middle half",
        f"turn {RESUMED_TURN} of a resumed thread, ms",
    ]
    # A saver on a Redis server needs a core for it too: under load its ratio falls further.
    loaded = f"Load average {load[0]:.1f} before the sync rounds, {load[1]:.1f} after."
    return [*table(header, body), "", loaded, "", _wrong(wrong), ""]


def _async_section(ctx: Context, env: Environment, specs: Sequence[SaverSpec]) -> list[str]:
    p = ctx.plan
    opened = {s.key: s.open(env) for s in specs}
    for spec in specs:  # warm-up: first calls, script loading, graph compiling
        env.loop.run_until_complete(_async_turns(opened[spec.key], 1, 1))
    rates: dict[tuple[str, int], float | str] = {}
    wrong: list[str] = []
    for i, concurrency in enumerate(p.e2e_concurrency):
        for spec in [*specs[i % len(specs) :], *specs[: i % len(specs)]]:
            gc.collect()
            run = _async_turns(opened[spec.key], p.e2e_turns, concurrency)
            try:
                seconds, right = env.loop.run_until_complete(run)
            except Exception as error:  # noqa: BLE001 - a saver failing under load is a result
                rates[spec.key, concurrency] = f"failed: {type(error).__name__}"
                progress(f"e2e: {spec.name} at {concurrency} failed: {error!r}")
                continue
            rates[spec.key, concurrency] = SUPERSTEPS_PER_TURN * p.e2e_turns * concurrency / seconds
            wrong += [] if right else [f"{spec.name} at {concurrency}"]
        progress(f"e2e: async at {concurrency} done")
    body = []
    for spec in specs:
        cells = []
        for c in p.e2e_concurrency:
            value, base = rates[spec.key, c], rates[specs[0].key, c]
            numeric = isinstance(value, float) and isinstance(base, float)
            cells.append(ratio(value, base, "{:.0f}") if numeric else str(value))  # type: ignore[arg-type]
        body.append([spec.name, *cells])
    header = ["saver", *(f"{c} concurrent threads, supersteps/s" for c in p.e2e_concurrency)]
    return [*table(header, body), "", _wrong(wrong), ""]


def _wrong(wrong: Sequence[str]) -> str:
    return "Wrong results: " + (", ".join(wrong) if wrong else "none") + "."


def run_e2e(ctx: Context) -> list[str]:
    """The sync, async and resumed runs on every chosen saver of each kind."""
    p = ctx.plan
    lines = [
        "## 4. End to end: a LangGraph agent/tool loop (fake model, `ToolNode`)",
        "",
        (
            f"A turn: user message -> model asks for a tool -> tool -> model answers; "
            f"{SUPERSTEPS_PER_TURN} supersteps, {MESSAGES_PER_TURN} messages of ~500 bytes. "
            f"Sync: {p.e2e_rounds} interleaved rounds of {p.e2e_turns} turns on a new thread "
            "(rate: median of rounds; ratio: median of the per-round ratios); "
            f"resumed: median of {p.resume_samples} threads. Async: {p.e2e_turns} turns on each "
            "of C concurrent threads, one event loop, default client settings."
        ),
        "",
        "### Sync `invoke`",
        "",
    ]
    # a --savers choice may hold savers of one kind only: the other table is left out
    if sync_specs := ctx.pick(api="sync"):
        with ctx.environment("e2e-sync") as env:
            lines += _sync_section(ctx, env, sync_specs)
    if async_specs := ctx.pick(api="async"):
        lines += ["### Async `ainvoke`, concurrent threads", ""]
        with ctx.environment("e2e-async") as env:
            lines += _async_section(ctx, env, async_specs)
    return lines
