"""The workload, without I/O: conversation threads checkpointed the way LangGraph checkpoints them.

Each step of a `Conversation` adds a human and an AI message (~500 bytes of text each) to the
``messages`` channel, bumps a few small channels, takes channel versions from the saver's own
``get_next_version``, lists in ``new_versions`` only the channels that changed, and comes with
three pending writes. Everything random comes from one seeded `random.Random`, so every saver
sees the same sequence of threads, messages and lookups.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    copy_checkpoint,
    create_checkpoint,
    empty_checkpoint,
)

__all__ = ["Conversation", "Step", "VersionFn", "Workload"]

MESSAGE_BYTES = 500
WRITES_PER_STEP = 3
VersionFn = Callable[[Any, None], Any]
_WORDS = (
    "agent",
    "tool",
    "call",
    "result",
    "thread",
    "state",
    "graph",
    "node",
    "edge",
    "message",
    "redis",
)


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _text(rng: random.Random, size: int = MESSAGE_BYTES) -> str:
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(_WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:size]


@dataclass(frozen=True)
class Step:
    """The arguments of one ``put`` and of the ``put_writes`` that follows it."""

    parent_config: RunnableConfig
    checkpoint: Checkpoint
    metadata: CheckpointMetadata
    new_versions: ChannelVersions
    writes: list[tuple[str, Any]]
    task_id: str


@dataclass
class Conversation:
    """One thread's state as LangGraph holds it between supersteps.

    Args:
        thread_id: the thread's id.
        next_version: the saver's ``get_next_version``.
        rng: the source of message text and ids.
        window: keep only the last `window` messages (a trimmed conversation: the checkpoint
            stays the same size however long the thread grows); None keeps them all.
    """

    thread_id: str
    next_version: VersionFn
    rng: random.Random
    window: int | None = None
    step: int = -2
    messages: list[BaseMessage] = field(default_factory=list)
    checkpoint: Checkpoint = field(default_factory=empty_checkpoint)
    saved: list[RunnableConfig] = field(default_factory=list)
    run_id: str = ""

    def __post_init__(self) -> None:
        self.run_id = self.run_id or _uuid(self.rng)

    @property
    def thread_config(self) -> RunnableConfig:
        """The config LangGraph reads the latest checkpoint with (root namespace)."""
        return {"configurable": {"thread_id": self.thread_id, "checkpoint_ns": ""}}

    @property
    def latest(self) -> RunnableConfig:
        """The config the last ``put`` returned (the thread config before any)."""
        return self.saved[-1] if self.saved else self.thread_config

    def next_step(self) -> Step:
        """Advance one superstep: two more messages, the small channels, three writes."""
        self.step += 1
        turn = self.step + 2
        self.messages = [
            *self.messages,
            HumanMessage(content=_text(self.rng), id=_uuid(self.rng)),
            AIMessage(content=_text(self.rng), id=_uuid(self.rng)),
        ]
        if self.window is not None:
            self.messages = self.messages[-self.window :]
        changed: dict[str, Any] = {
            "messages": self.messages,
            "turns": turn,
            "route": "branch:to:agent",
        }
        if turn == 1:
            changed["context"] = {"user": f"user-{self.rng.randrange(1000)}", "locale": "en"}
        if turn % 5 == 0:
            changed["summary"] = _text(self.rng, 80)
        return self._step_for(changed, turn)

    def _step_for(self, changed: dict[str, Any], turn: int) -> Step:
        previous = self.checkpoint["channel_versions"]
        new_versions = {ch: self.next_version(previous.get(ch), None) for ch in changed}
        base = copy_checkpoint(self.checkpoint)
        base["versions_seen"]["agent"] = {
            ch: previous[ch] for ch in ("messages", "turns") if ch in previous
        }
        base["channel_values"].update(changed)
        base["channel_versions"].update(new_versions)
        self.checkpoint = create_checkpoint(base, None, self.step)
        metadata: CheckpointMetadata = {
            "source": "input" if self.step < 0 else "loop",
            "step": self.step,
            "parents": {},
            "run_id": self.run_id,
        }
        writes = [
            ("messages", [AIMessage(content=_text(self.rng), id=_uuid(self.rng))]),
            ("turns", turn + 1),
            ("route", "branch:to:tools"),
        ]
        return Step(self.latest, self.checkpoint, metadata, new_versions, writes, _uuid(self.rng))

    def record(self, saved: RunnableConfig) -> None:
        """Remember the config ``put`` returned: the parent of the next step."""
        self.saved.append(saved)


class Workload:
    """The seeded source of conversations and lookups for one saver.

    Args:
        next_version: the saver's ``get_next_version``.
        seed: the same seed gives every saver the same workload.
        prefill: the range of steps (two messages each) a measured thread starts with.
        steps_per_thread: measured steps before the next thread is started.
    """

    def __init__(
        self, next_version: VersionFn, seed: int, prefill: tuple[int, int], steps_per_thread: int
    ) -> None:
        self.next_version = next_version
        self.rng = random.Random(seed)
        self.prefill = prefill
        self.steps_per_thread = steps_per_thread
        self._count = 0
        self._measured_steps = 0

    def conversation(self, prefix: str, window: int | None = None) -> Conversation:
        """A new, empty conversation thread (keeping its last `window` messages, if given)."""
        self._count += 1
        return Conversation(
            f"{prefix}-{self._count}",
            self.next_version,
            random.Random(self.rng.getrandbits(64)),
            window,
        )

    def prefill_steps(self) -> int:
        """How many steps a new measured thread starts with."""
        return self.rng.randint(*self.prefill)

    def thread_is_done(self) -> bool:
        """Count one measured step; True when the current thread has had its share."""
        self._measured_steps += 1
        return self._measured_steps % self.steps_per_thread == 0

    def pick_saved(self, conversation: Conversation, keeps_history: bool) -> RunnableConfig:
        """A checkpoint to read by id: any earlier one, or the latest if the saver keeps no history."""
        return self.rng.choice(conversation.saved[:-1]) if keeps_history else conversation.saved[-1]

    @staticmethod
    def metadata_filter(background_steps: int) -> dict[str, Any]:
        """A metadata filter that matches the latest checkpoint of each background thread."""
        return {"source": "loop", "step": background_steps - 2}
