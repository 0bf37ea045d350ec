"""The measurement loop: one table of timed operations, run round by round over every saver.

One iteration is one LangGraph superstep and the reads around it: ``put``, ``put_writes``,
``get_tuple`` of the latest checkpoint and of an earlier one by id, ``list(limit=10)`` of the
thread, ``list`` of the thread filtered by metadata (one earlier step), ``list`` across all
threads filtered by metadata, and ``delete_thread`` of a small thread written (untimed) just
before. Each op also checks its result (outside the clock); a wrong answer is counted, not
fatal, and shows in the report.
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple

from benchmarks.savers import Environment, Opened, SaverSpec
from benchmarks.workload import WRITES_PER_STEP, Conversation, Step, Workload

__all__ = ["OPS", "OpFn", "Settings", "Subject", "Wrap", "iterate", "open_subject", "run_rounds"]

LIST_LIMIT = 10


@dataclass(frozen=True)
class Settings:
    """How much to measure; the same for every saver."""

    samples: int = 300
    rounds: int = 10
    warmup: int = 10
    threads: int = 300
    background_steps: int = 3
    prefill: tuple[int, int] = (20, 35)
    steps_per_thread: int = 10
    seed: int = 7


@dataclass
class Subject:
    """One opened saver, its workload and what was measured on it."""

    spec: SaverSpec
    opened: Opened
    workload: Workload
    settings: Settings
    conversation: Conversation | None = None
    samples: dict[str, list[float]] = field(default_factory=dict)
    failures: Counter[str] = field(default_factory=Counter)

    around: Callable[[], AbstractContextManager[object]] = nullcontext

    def call(self, method: str, *args: Any, **kwargs: Any) -> tuple[Any, float]:
        """One saver call and its seconds; `around` brackets it outside the clock (profilers)."""
        with self.around():
            return self.opened.driver.call(method, *args, **kwargs)


@dataclass
class Turn:
    """The state one iteration's ops share."""

    conversation: Conversation
    step: Step


OpFn = Callable[[Subject, Turn], tuple[float, bool]]
"""Runs one op; returns its seconds and whether its result was right."""


def _is(got: CheckpointTuple | None, wanted: RunnableConfig) -> bool:
    return (
        got is not None
        and got.config["configurable"]["checkpoint_id"] == wanted["configurable"]["checkpoint_id"]
    )


def _is_latest(got: CheckpointTuple | None, conversation: Conversation) -> bool:
    """The latest checkpoint, with every message back as the message object it was."""
    return (
        got is not None
        and _is(got, conversation.latest)
        and got.checkpoint["channel_values"].get("messages") == conversation.messages
    )


def _put(subject: Subject, turn: Turn) -> tuple[float, bool]:
    step = turn.step
    saved, seconds = subject.call(
        "put", step.parent_config, step.checkpoint, step.metadata, step.new_versions
    )
    turn.conversation.record(saved)
    return seconds, saved["configurable"]["checkpoint_id"] == step.checkpoint["id"]


def _put_writes(subject: Subject, turn: Turn) -> tuple[float, bool]:
    _, seconds = subject.call(
        "put_writes", turn.conversation.latest, turn.step.writes, turn.step.task_id
    )
    return seconds, True


def _get_latest(subject: Subject, turn: Turn) -> tuple[float, bool]:
    got, seconds = subject.call("get_tuple", turn.conversation.thread_config)
    right = _is_latest(got, turn.conversation)
    return seconds, right and len(got.pending_writes or []) == WRITES_PER_STEP


def _get_by_id(subject: Subject, turn: Turn) -> tuple[float, bool]:
    wanted = subject.workload.pick_saved(turn.conversation, subject.spec.keeps_history)
    got, seconds = subject.call("get_tuple", wanted)
    return seconds, _is(got, wanted)


def _list_thread(subject: Subject, turn: Turn) -> tuple[float, bool]:
    got, seconds = subject.call("list", turn.conversation.thread_config, limit=LIST_LIMIT)
    expected = min(LIST_LIMIT, len(turn.conversation.saved)) if subject.spec.keeps_history else 1
    return seconds, len(got) == expected and _is_latest(got[0], turn.conversation)


def _list_filtered(subject: Subject, turn: Turn) -> tuple[float, bool]:
    wanted = subject.workload.metadata_filter(subject.settings.background_steps)
    got, seconds = subject.call("list", None, filter=wanted, limit=LIST_LIMIT)
    matching = all(t.metadata.get(k) == v for t in got for k, v in wanted.items())
    return seconds, len(got) == LIST_LIMIT and matching


def _list_filtered_thread(subject: Subject, turn: Turn) -> tuple[float, bool]:
    saved = turn.conversation.saved
    index = len(saved) - 1
    if subject.spec.keeps_history:
        index = subject.workload.rng.randrange(1, len(saved) - 1)
    wanted = {"source": "loop", "step": index - 1}  # saved[0] is step -1
    got, seconds = subject.call(
        "list", turn.conversation.thread_config, filter=wanted, limit=LIST_LIMIT
    )
    return seconds, len(got) == 1 and _is(got[0], saved[index])


DOOMED_STEPS = 2
"""Steps of the thread each ``delete_thread`` deletes (its steps are -1 and 0: no background
thread's metadata filter matches them)."""


def _delete_thread(subject: Subject, turn: Turn) -> tuple[float, bool]:
    doomed = subject.workload.conversation("doomed")
    driver = subject.opened.driver
    for _ in range(DOOMED_STEPS):  # untimed and uncounted: straight to the driver
        step = doomed.next_step()
        doomed.record(
            driver.call(
                "put", step.parent_config, step.checkpoint, step.metadata, step.new_versions
            )[0]
        )
        driver.call("put_writes", doomed.latest, step.writes, step.task_id)
    _, seconds = subject.call("delete_thread", doomed.thread_id)
    return seconds, driver.call("get_tuple", doomed.thread_config)[0] is None


OPS: dict[str, OpFn] = {
    "put": _put,
    "put_writes": _put_writes,
    "get_tuple latest": _get_latest,
    "get_tuple by id": _get_by_id,
    "list thread limit=10": _list_thread,
    "list thread filter": _list_filtered_thread,
    "list filter all threads": _list_filtered,
    "delete_thread": _delete_thread,
}
"""The measured ops, in the order one iteration runs them (``put`` comes first)."""


def _apply(subject: Subject, conversation: Conversation, steps: int) -> None:
    """Untimed steps: a prefill."""
    for _ in range(steps):
        turn = Turn(conversation, conversation.next_step())
        _put(subject, turn)
        _put_writes(subject, turn)


def open_subject(env: Environment, spec: SaverSpec, settings: Settings) -> Subject:
    """Open the saver, then write the background threads and run the warm-up iterations."""
    opened = spec.open(env)
    workload = Workload(
        opened.saver.get_next_version, settings.seed, settings.prefill, settings.steps_per_thread
    )
    subject = Subject(spec, opened, workload, settings)
    for _ in range(settings.threads):
        _apply(subject, workload.conversation("bg"), settings.background_steps)
    for _ in range(settings.warmup):
        iterate(subject)
    return subject


def _current(subject: Subject) -> Conversation:
    if subject.conversation is None:
        subject.conversation = subject.workload.conversation("conv")
        _apply(subject, subject.conversation, subject.workload.prefill_steps())
    return subject.conversation


Wrap = Callable[[str, OpFn], OpFn]


def _unwrapped(name: str, op: OpFn) -> OpFn:
    return op


def iterate(subject: Subject, wrap: Wrap = _unwrapped) -> list[tuple[str, float, bool]]:
    """One iteration: every op once, each as `wrap` makes it; returns (op, seconds, right)."""
    conversation = _current(subject)
    turn = Turn(conversation, conversation.next_step())
    results = [(name, *wrap(name, op)(subject, turn)) for name, op in OPS.items()]
    if subject.workload.thread_is_done():
        subject.conversation = None
    return results


def _record(subject: Subject, results: list[tuple[str, float, bool]]) -> None:
    for name, seconds, right in results:
        subject.samples.setdefault(name, []).append(seconds)
        subject.failures[name] += not right


def _per_round(settings: Settings) -> list[int]:
    base, extra = divmod(settings.samples, settings.rounds)
    return [base + (r < extra) for r in range(settings.rounds)]


def run_rounds(subjects: Sequence[Subject], progress: Callable[[str], None]) -> None:
    """Measure every subject, interleaved: round r starts with subject r (mod n)."""
    counts = _per_round(subjects[0].settings)
    for r, count in enumerate(counts):
        shift = r % len(subjects)
        for subject in [*subjects[shift:], *subjects[:shift]]:
            gc.collect()
            for _ in range(count):
                _record(subject, iterate(subject))
        progress(f"round {r + 1}/{len(counts)} done")
