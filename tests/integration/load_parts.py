"""What the processes of test_concurrent_load.py run: a writer of many async threads, and a graph
that stops at an `interrupt()` and the process that resumes it. Run as
``python load_parts.py writer|resumer ARGS...``."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any, TypedDict

import redis
import redis.asyncio
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, empty_checkpoint
from langgraph.graph import END, START, StateGraph
from langgraph.pregel import Pregel
from langgraph.types import Command, interrupt

from streamsaver import AsyncStreamSaver, StreamSaver


def values(thread: str, step: int) -> dict[str, Any]:
    """The channel values of `thread` at `step` (a few kB, different every step)."""
    return {"step": step, "owner": thread, "text": f"{thread}/{step} " * (20 + step % 50)}


async def _task(saver: AsyncStreamSaver, thread: str, fd: int, deadline: float) -> None:
    previous: Checkpoint | None = None
    step = 0
    while time.monotonic() < deadline:
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = values(thread, step)
        versions = {
            ch: saver.get_next_version(previous["channel_versions"].get(ch) if previous else None)  # type: ignore[arg-type]
            for ch in checkpoint["channel_values"]
        }
        checkpoint["channel_versions"] = dict(versions)
        cfg: RunnableConfig = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        if previous:
            cfg["configurable"]["checkpoint_id"] = previous["id"]
        saved = await saver.aput(cfg, checkpoint, {"step": step, "owner": thread}, versions)  # type: ignore[typeddict-unknown-key]
        os.write(fd, f"put {thread} {checkpoint['id']} {step}\n".encode())
        await saver.aput_writes(saved, [("step", step + 1)], f"task-{step}")
        os.write(fd, f"writes {thread} {checkpoint['id']} {step}\n".encode())
        previous, step = checkpoint, step + 1


async def writer(url: str, prefix: str, proc: str, tasks: int, seconds: float, acks: str) -> None:
    """`tasks` asyncio tasks, each owning thread ``p<proc>-t<n>``, writing for `seconds`."""
    deadline = time.monotonic() + seconds
    client = redis.asyncio.Redis.from_url(url, max_connections=32)
    saver = AsyncStreamSaver(client, prefix=prefix)
    await saver.setup()
    fd = os.open(acks, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    await asyncio.gather(*(_task(saver, f"p{proc}-t{t}", fd, deadline) for t in range(tasks)))
    await client.aclose()


class State(TypedDict, total=False):
    question: str
    answer: str


def _ask(state: State) -> State:
    return {"answer": interrupt(state["question"])}


def build(url: str, prefix: str) -> Pregel:  # type: ignore[type-arg]
    """A graph that asks a question (interrupts) and stores the answer it is resumed with."""
    builder = StateGraph(State)
    builder.add_node("ask", _ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=StreamSaver(redis.Redis.from_url(url), prefix=prefix))


def resumer(url: str, prefix: str, count: int) -> None:
    """Resume threads ``hitl-0 .. hitl-<count-1>``, which another process interrupted."""
    graph = build(url, prefix)
    for k in range(count):
        cfg: RunnableConfig = {"configurable": {"thread_id": f"hitl-{k}"}}
        assert graph.get_state(cfg).next == ("ask",), graph.get_state(cfg)
        graph.invoke(Command(resume=f"answer {k}"), cfg)
    print("resumed", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "writer":
        url, prefix, proc, tasks, seconds, acks = sys.argv[2:8]
        asyncio.run(writer(url, prefix, proc, int(tasks), float(seconds), acks))
    else:
        resumer(sys.argv[2], sys.argv[3], int(sys.argv[4]))
