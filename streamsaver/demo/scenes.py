"""The demo's LangGraph scenes. Each runs one graph on its own thread, prints what happened and
returns the facts a test can check.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, StateSnapshot

from streamsaver.demo.graphs import build_approval, build_chat, build_research, build_trip
from streamsaver.demo.show import Show, short_id
from streamsaver.saver.sync import StreamSaver

__all__ = [
    "ApprovalFacts",
    "MemoryFacts",
    "ParallelFacts",
    "SubgraphFacts",
    "TimeTravelFacts",
    "approval",
    "memory",
    "parallel",
    "subgraph",
    "time_travel",
]

CHAT_TURNS = ("Hi, my name is Ada.", "I like green tea.", "What is my name?")
FORK_TURN = "Actually, call me Grace."
RESUME_ANSWER = "yes, send it"


def thread(thread_id: str) -> RunnableConfig:
    """The config of the latest checkpoint of a thread."""
    return {"configurable": {"thread_id": thread_id}}


def _cid(snapshot: StateSnapshot | RunnableConfig | None) -> str | None:
    config = snapshot.config if isinstance(snapshot, StateSnapshot) else snapshot
    return None if config is None else config["configurable"].get("checkpoint_id")


@dataclass(frozen=True)
class MemoryFacts:
    """The chat thread and the bot's reply to each of `CHAT_TURNS`."""

    thread_id: str
    replies: list[str]


def memory(saver: StreamSaver, show: Show) -> MemoryFacts:
    """Three invocations on one thread; each passes only its new line."""
    show.title("1. Memory across invocations of one thread_id")
    graph, config, replies = build_chat(saver), thread("chat"), []
    for text in CHAT_TURNS:
        state = graph.invoke({"messages": [f"user: {text}"]}, config)
        replies.append(state["messages"][-1])
        show.say(f"  user: {text}")
        show.say(
            f"  {state['messages'][-1]:<48}(state now holds {len(state['messages'])} messages)"
        )
    show.say("Each invoke passed only its new line; the earlier ones were loaded from Redis.")
    return MemoryFacts("chat", replies)


@dataclass(frozen=True)
class ApprovalFacts:
    """What the interrupt asked, where the run paused, and the state after resuming."""

    thread_id: str
    asked: dict[str, Any]
    paused_before: tuple[str, ...]
    final: dict[str, Any]


def approval(saver: StreamSaver, show: Show) -> ApprovalFacts:
    """Run until `interrupt` pauses, then resume from Redis with `Command(resume=...)`."""
    show.title("2. Human in the loop: interrupt(...) and Command(resume=...)")
    config = thread("approval")
    first = build_approval(saver).invoke({"to": "Grace"}, config)
    asked = dict(first["__interrupt__"][0].value)
    paused = build_approval(saver).get_state(config)
    show.say(f"The run paused in node(s) {paused.next}; the interrupt asked:")
    show.table(["field", "value"], asked.items())
    show.say(
        f"A person answers {RESUME_ANSWER!r}; a new graph object resumes from the saved checkpoint:"
    )
    final = build_approval(saver).invoke(Command(resume=RESUME_ANSWER), config)
    show.table(["state key", "value"], final.items())
    return ApprovalFacts("approval", asked, tuple(paused.next), dict(final))


@dataclass(frozen=True)
class TimeTravelFacts:
    """The fork point, its children, and the answer to the same question on each branch."""

    thread_id: str
    fork_point: str
    children: list[str]
    original_answer: str
    forked_answer: str


def _latest_branch(history: Sequence[StateSnapshot]) -> set[str | None]:
    parent_of = {_cid(s): _cid(s.parent_config) for s in history}
    branch: set[str | None] = set()
    cursor = _cid(history[0])
    while cursor is not None:
        branch.add(cursor)
        cursor = parent_of.get(cursor)
    return branch


def _history_table(show: Show, history: Sequence[StateSnapshot]) -> None:
    branch = _latest_branch(history)
    show.table(
        ["checkpoint", "parent", "step", "source", "latest branch", "last message"],
        [
            (
                short_id(_cid(s)),
                short_id(_cid(s.parent_config)),
                s.metadata.get("step") if s.metadata else None,
                s.metadata.get("source") if s.metadata else None,
                "yes" if _cid(s) in branch else "",
                (s.values.get("messages") or [""])[-1],
            )
            for s in history
        ],
    )


def time_travel(saver: StreamSaver, show: Show) -> TimeTravelFacts:
    """Rewind the chat thread to just after turn 1 and continue from there: a fork."""
    show.title("3. Time travel: get_state_history, then re-run from an earlier checkpoint")
    graph, config = build_chat(saver), thread("chat")
    history = list(graph.get_state_history(config))
    target = next(s for s in reversed(history) if len(s.values["messages"]) == 2 and not s.next)
    fork_point = _cid(target) or ""
    show.say(
        f"get_state_history lists {len(history)} checkpoints. Rewinding to {short_id(fork_point)},"
    )
    show.say(f"just after the answer to turn 1, and saying {FORK_TURN!r} from there")
    show.say("(invoke with that checkpoint's config), then asking the name again on the thread:")
    graph.invoke({"messages": [f"user: {FORK_TURN}"]}, target.config)
    forked = graph.invoke({"messages": [f"user: {CHAT_TURNS[-1]}"]}, config)["messages"][-1]
    after = list(graph.get_state_history(config))
    show.say("History now (newest first):")
    _history_table(show, after)
    children = [c for s in after if _cid(s.parent_config) == fork_point and (c := _cid(s))]
    original = history[0].values["messages"][-1]
    show.say(f"{short_id(fork_point)} now has {len(children)} children: that is the fork.")
    show.say(f"Original branch: {original!r}. Fork (now the latest): {forked!r}.")
    return TimeTravelFacts("chat", fork_point, children, original, forked)


@dataclass(frozen=True)
class SubgraphFacts:
    """The namespaces the thread's checkpoints were saved under, and the final report."""

    thread_id: str
    namespaces: list[str]
    report: str


def _by_namespace(saver: StreamSaver, thread_id: str) -> dict[str, list[dict[str, Any]]]:
    by_ns: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for saved in saver.list(thread(thread_id)):
        by_ns[saved.config["configurable"]["checkpoint_ns"]].append(dict(saved.metadata))
    return dict(sorted(by_ns.items()))


def _namespace_row(ns: str, metas: Sequence[dict[str, Any]]) -> tuple[str, int, str, str]:
    steps = sorted(int(m.get("step", 0)) for m in metas)
    parents = {short_id(p) for m in metas for p in (m.get("parents") or {}).values()}
    return repr(ns), len(metas), f"{steps[0]}..{steps[-1]}", ", ".join(sorted(parents))


def subgraph(saver: StreamSaver, show: Show) -> SubgraphFacts:
    """Run a graph whose ``research`` node is a subgraph; list checkpoints per namespace."""
    show.title("4. A subgraph: its checkpoints are saved under their own checkpoint_ns")
    graph, config = build_research(saver), thread("research")
    # With subgraphs=True each item is (namespace path, {node: update}).
    stream = cast(
        Iterator[tuple[tuple[str, ...], dict[str, Any]]],
        graph.stream({"topic": "  solar panels "}, config, subgraphs=True),
    )
    updates = [
        ("/".join(ns) or "(root)", node, ", ".join(values or {}))
        for ns, chunk in stream
        for node, values in chunk.items()
    ]
    show.say("Updates as they streamed (stream(..., subgraphs=True)):")
    show.table(["namespace", "node", "wrote"], updates)
    by_ns = _by_namespace(saver, "research")
    show.say("Checkpoints the saver holds for the thread, by namespace (saver.list):")
    show.table(
        ["checkpoint_ns", "checkpoints", "steps", "metadata.parents"],
        [_namespace_row(ns, metas) for ns, metas in by_ns.items()],
    )
    show.say(
        "The subgraph's checkpoints name, in metadata.parents, the root checkpoint they ran under."
    )
    report = str(graph.get_state(config).values["report"])
    show.say(f"Final report: {report!r}")
    return SubgraphFacts("research", list(by_ns), report)


@dataclass(frozen=True)
class ParallelFacts:
    """The nodes that ran side by side, the nodes whose writes were saved, the final state."""

    thread_id: str
    fanned_out: tuple[str, ...]
    writers: list[str]
    final: dict[str, Any]


def parallel(saver: StreamSaver, show: Show) -> ParallelFacts:
    """Fan out from ``plan`` to ``weather`` and ``news`` in one step, fan in to ``merge``."""
    show.title("5. Parallel branches: fan-out from one node to two, fan-in to one")
    graph, config = build_trip(saver), thread("trip")
    final = graph.invoke({"city": "Lisbon"}, config)
    history = list(reversed(list(graph.get_state_history(config))))
    show.table(
        ["checkpoint", "step", "next", "notes so far"],
        [
            (
                short_id(_cid(s)),
                (s.metadata or {}).get("step"),
                ", ".join(s.next),
                len(s.values.get("notes", [])),
            )
            for s in history
        ],
    )
    fan_out = next(s for s in history if len(s.next) > 1)
    names = {task.id: task.name for task in fan_out.tasks}
    saved = saver.get_tuple(fan_out.config)
    writes = (saved.pending_writes or []) if saved is not None else []
    branches = " and ".join(fan_out.next)
    show.say(f"{branches} ran in one step; each task saved its own writes (put_writes)")
    show.say(
        f"against checkpoint {short_id(_cid(fan_out))}, where they wait as its pending writes:"
    )
    show.table(["task", "channel", "value"], [(names.get(t, t), ch, v) for t, ch, v in writes])
    show.say(f"merge read both: briefing = {final['briefing']!r}")
    writers = sorted({names.get(t, t) for t, _, _ in writes})
    return ParallelFacts("trip", tuple(fan_out.next), writers, dict(final))
